"""A study on the tiny corpus: the budget is fixed, pins hold, the study resumes from storage, cancel keeps trials."""

from __future__ import annotations

import itertools

import optuna
import pytest

from rag_core.config import get_settings
from rag_core.services import tune_collection
from rag_core.tuning import TuneSpec, storage_url, study_name

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _spec(**kwargs) -> TuneSpec:
    return TuneSpec(**{"collection": "tiny", "budget": 300, "minutes": None, "trials": 5, "prune_steps": 2,
                       "max_chunkings": 2, **kwargs})


def test_every_trial_is_scored_at_the_budget_and_pins_hold(tiny_collection):
    name, _, questions = tiny_collection
    spec = _spec(trials=4, pins={"retrieval.fusion": "rrf", "retrieval.rrf_k": 42})
    seen = []
    result = tune_collection(spec, questions, progress=seen.append)
    study = optuna.load_study(study_name=result.study, storage=storage_url(get_settings()))
    configs = [t.user_attrs["config"] for t in study.trials if "config" in t.user_attrs]
    assert configs and all(c["retrieval"]["token_budget"] == 300 == c["agent"]["context_budget"] for c in configs)
    assert all(c["retrieval"]["rrf_k"] == 42 and c["retrieval"]["fusion"] == "rrf" for c in configs)
    assert not any("retrieval.rrf_k" in t.params or "retrieval.fusion" in t.params for t in result.trials)
    assert result.best["retrieval"]["token_budget"] == 300 and result.best["retrieval"]["rrf_k"] == 42
    current = result.current_config  # trial 0 is the current configuration (with the pins): the baseline
    assert {p: v for p, v in result.trials[0].params.items()} == {
        p: current[p.split(".")[0]][p.split(".")[1]] for p in result.trials[0].params}
    assert result.trials[0].params["chunking.max_tokens"] == current["chunking"]["max_tokens"]
    # two chunkings at most were built; every other trial reused an index or was skipped
    built = {(c["chunking"]["strategy"], c["chunking"]["max_tokens"], c["chunking"]["overlap"]) for c in configs}
    assert result.counts["new_chunking"] <= 2 and len(built) <= 3  # the collection's own chunking + 2 built
    assert result.counts["trials"] == 4 and result.status == "trials"
    assert result.split["tuning"] + result.split["validation"] == len(questions.questions)
    assert result.metric == "place_recall" and 0.0 <= result.current["quality"] <= 1.0
    assert seen[-1].trials_done == 4 and "validation" in seen[-1].message
    assert result.pareto and set(result.pareto) <= {t.number for t in result.trials if t.state == "complete"}


def test_a_study_resumes_by_name_and_refuses_another_question_set(tiny_collection):
    _, _, questions = tiny_collection
    first = tune_collection(_spec(trials=2), questions)
    second = tune_collection(_spec(trials=1), questions)
    assert first.study == second.study == study_name(_spec(), questions)
    assert len(second.trials) == 3 and [t.number for t in second.trials] == list(range(3))
    fewer = questions.__class__(name="fewer", kind="upload", questions=questions.questions[:-1])
    with pytest.raises(ValueError, match="tuned something else"):
        tune_collection(_spec(trials=1, study_name=first.study), fewer)


def test_cancel_stops_and_keeps_the_trials_so_far(tiny_collection):
    _, _, questions = tiny_collection
    calls = itertools.count()
    result = tune_collection(_spec(trials=50), questions, should_stop=lambda: next(calls) > 6)
    assert result.status == "cancelled"
    assert 1 <= len(result.trials) < 50
    assert result.recommendation  # the proof still ran on what the search found


def test_a_time_budget_stops_the_search(tiny_collection):
    from rag_core.config import RAGConfig
    from rag_core.services import collection_documents, open_index
    from rag_core.tuning import TuneInputs, run_study

    name, _, questions = tiny_collection
    ticks = itertools.count(step=2)  # a clock moving 2 s per reading: the budget ends whatever the machine's load
    inputs = TuneInputs(questions=questions, documents=collection_documents(name), open_index=open_index,
                        current=RAGConfig(embedding={"embedder": "hash"}), settings=get_settings(), known={})
    result = run_study(_spec(trials=None, minutes=1), inputs, clock=lambda: float(next(ticks)))
    assert result.status == "time budget" and result.counts["trials"] >= 1


def test_random_sampler_and_multi_objective(tiny_collection):
    _, _, questions = tiny_collection
    result = tune_collection(_spec(trials=3, sampler="random", multi_objective=True), questions)
    assert result.counts["pruned"] == 0 and result.counts["trials"] == 3
    assert result.study.endswith(study_name(_spec(sampler="random", multi_objective=True), questions)[-8:])


def test_the_grid_baseline_runs_its_cells_and_stops(tiny_collection):
    _, _, questions = tiny_collection
    grid = {"chunking.max_tokens": [256], "retrieval.initial_k": [1, 5]}
    result = tune_collection(_spec(trials=10, sampler="grid", grid=grid), questions)
    assert result.status == "grid done" and result.counts["complete"] == 2
    assert sorted(t.params["retrieval.initial_k"] for t in result.trials) == [1, 5]
    assert [k["path"] for k in result.knobs] == list(grid)


def test_tpe_starts_from_the_current_configuration_s_neighbours(tiny_collection):
    _, _, questions = tiny_collection
    tpe = tune_collection(_spec(trials=6), questions)
    first = tpe.trials[0].params
    for trial in tpe.trials[1:6]:  # each moves exactly one retrieval knob of trial 0 (its followers aside)
        moved = [p for p, v in trial.params.items() if p in first and first[p] != v]
        assert len(moved) == 1 and moved[0].startswith("retrieval."), trial.params
    study = optuna.load_study(study_name=tpe.study, storage=storage_url(get_settings()))
    assert [t.user_attrs.get("start") for t in study.trials[:3]] == ["current", "neighbour", "neighbour"]
    assert all(t.state == "complete" for t in tpe.trials[:6])  # a start trial runs whole: it is never pruned
    drawn = tune_collection(_spec(trials=3, sampler="random"), questions)
    assert sum(v != drawn.trials[0].params.get(p) for p, v in drawn.trials[1].params.items()) > 1  # drawn at random


def test_the_study_puts_forward_the_simplest_trial_within_noise_of_the_top_score(tiny_collection):
    from rag_core.tuning.choose import moved_knobs, paired_se

    _, _, questions = tiny_collection
    result = tune_collection(_spec(trials=12), questions)
    study = optuna.load_study(study_name=result.study, storage=storage_url(get_settings()))
    complete = {t.number: t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE}
    top = max(complete.values(), key=lambda t: (t.values[0], -t.user_attrs["metrics"]["context_tokens"], -t.number))
    chosen = complete[result.best_trial]
    assert result.top_trial == top.number and result.chosen_because
    assert chosen.user_attrs["config"]["retrieval"] == result.best["retrieval"]  # ``best`` is the trial put forward
    assert len(chosen.user_attrs["scores"]) == result.split["tuning"] == len(top.user_attrs["scores"])
    assert top.values[0] - chosen.values[0] <= paired_se(top.user_attrs["scores"], chosen.user_attrs["scores"]) + 1e-9
    paths = [k["path"] for k in result.knobs]

    def moved(trial) -> int:
        config = trial.user_attrs["config"]
        return moved_knobs({p: config[p.split(".")[0]][p.split(".")[1]] for p in paths},
                           {p: result.current_config[p.split(".")[0]][p.split(".")[1]] for p in paths})

    assert moved(chosen) <= moved(top)
    assert moved(complete[0]) == 0  # trial 0 is the current configuration


def test_a_drafted_set_carries_the_trust_measured_for_its_own_style(tiny_collection, tmp_path, monkeypatch):
    import json

    from rag_core.evaluation import agreement

    monkeypatch.setattr(agreement, "AGREEMENT_PATH", tmp_path / "draft_agreement.json")
    (tmp_path / "draft_agreement.json").write_text(json.dumps({"tau": 0.62, "corpus": "verbatim corpus"}))
    verbatim = tune_collection(_spec(trials=1), None, draft=20, draft_style="verbatim")
    assert verbatim.trust["tau"] == 0.62
    area = tune_collection(_spec(trials=1, seed=1), None, draft=20, draft_style="area")
    assert area.trust["tau"] is None and "python -m bench drafted --style area" in area.trust["note"]
    (tmp_path / "draft_agreement_area.json").write_text(json.dumps({"tau": 0.7, "corpus": "area corpus"}))
    area = tune_collection(_spec(trials=1, seed=2), None, draft=20, draft_style="area")
    assert area.trust["tau"] == 0.7 and area.trust["corpus"] == "area corpus"
    default = tune_collection(_spec(trials=1, seed=3), None, draft=20)  # the tuner drafts in the area style
    assert default.trust["tau"] == 0.7
