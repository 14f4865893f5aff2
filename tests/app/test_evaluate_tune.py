"""AppTest of Evaluate's "Tune" tab: the form's validation, a study started as a background job (a fake study through
the same door as ``services.tune_collection``), its progress after a reload, Cancel, the stored result's charts and
verdict, and "Use this configuration" (saved, active, re-index queued)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core import services
from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.serving.configstore import ConfigStore
from rag_core.serving.jobs import runner_for
from rag_core.serving.tuning_jobs import save_result, stored_results
from tests.app.apptest_helpers import finish_jobs, page_app
from tests.fakes.tune_result import FakeTune, fake_result

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "evaluate.py")
HASH_CONFIG = RAGConfig(name="tune-test", embedding=EmbeddingConfig(embedder="hash"))


def _app() -> AppTest:
    return page_app(PAGE, HASH_CONFIG)


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _runner():
    return runner_for(get_settings().data_dir)


def _texts(elements) -> list[str]:
    return [e.value.replace("\\", "") for e in elements]


def test_pins_are_checked_by_the_engine_before_a_study_starts(data_dir):
    at = _app().run()
    assert not at.exception
    assert not _button(at, "Start tuning").disabled
    at.multiselect(key="tune_pins").set_value(["retrieval.rrf_k"])
    at.run()
    assert any("Give a value for each pinned knob: rrf_k (retrieval)" in w for w in _texts(at.warning))
    assert _button(at, "Start tuning").disabled
    at.text_input(key="tune_pin_retrieval_rrf_k").input("100000")
    at.run()
    assert not at.exception
    errors = _texts(at.error)
    assert any(e.startswith("Pinned knobs:") and "rrf_k" in e for e in errors), errors
    assert _button(at, "Start tuning").disabled
    at.text_input(key="tune_pin_retrieval_rrf_k").input("20")
    at.run()
    assert not at.error and not _button(at, "Start tuning").disabled
    assert not _runner().jobs(limit=5)  # nothing was queued by the checks


def test_a_study_runs_as_a_job_shows_progress_after_a_reload_and_cancel_keeps_its_trials(data_dir, monkeypatch):
    fake = FakeTune(get_settings())
    monkeypatch.setattr(services, "tune_collection", fake)
    at = _app().run()
    at.radio(key="tune_strategy").set_value("agent")
    at.number_input(key="tune_minutes").set_value(2.0)
    at.number_input(key="tune_budget").set_value(1000)
    at.multiselect(key="tune_pins").set_value(["chunking.strategy"])
    at.run()
    at.text_input(key="tune_pin_chunking_strategy").input("structure")
    at.run()
    _button(at, "Start tuning").click()
    at.run()
    assert not at.exception, at.exception
    job = _runner().jobs(limit=1)[0]
    assert job.kind == "tune" and job.active
    assert fake.reported.wait(30)
    spec = fake.calls[0]["spec"]
    assert (spec.strategy, spec.minutes, spec.budget, spec.pins) == ("agent", 2.0, 1000, {"chunking.strategy":
                                                                                          "structure"})
    assert fake.calls[0]["questions"].name == "golden" and fake.calls[0]["draft"] == 0

    reloaded = _app().run()  # another session, or the same page reloaded: the study is found from its files
    assert not reloaded.exception, reloaded.exception
    metrics = {m.label: m.value for m in reloaded.metric}
    assert metrics["Trials done"] == "3" and metrics["Pruned"] == "1"
    assert metrics["Best so far (tuning questions)"] == "0.620"
    assert metrics["Time left (time budget)"] == "about 4 min left"
    assert not [b for b in reloaded.button if b.label == "Start tuning"]  # one study at a time from this tab
    cancel = next(b for b in reloaded.button if b.label == "Cancel" and b.key.startswith("tune_cancel_"))
    cancel.click()
    reloaded.run()
    finish_jobs(reloaded)
    assert not reloaded.exception, reloaded.exception
    assert _runner().get(job.id).state == "cancelled"
    assert stored_results(get_settings()) == [_runner().get(job.id).result]  # the trials so far are kept
    assert any("This study was cancelled" in w for w in _texts(reloaded.warning))
    assert any("Keep the current configuration" in w for w in _texts(reloaded.warning))
    assert _button(reloaded, "Start tuning")  # and a new study can start


def test_draft_first_hands_the_draft_count_to_the_study(data_dir, monkeypatch):
    fake = FakeTune(get_settings())
    fake.release.set()
    monkeypatch.setattr(services, "tune_collection", fake)
    at = _app().run()
    at.radio(key="tune_source").set_value("Draft 150 questions from my documents first")
    at.run()
    _button(at, "Start tuning").click()
    at.run()
    finish_jobs(at)
    assert not at.exception, at.exception
    assert fake.calls[0]["questions"] is None and fake.calls[0]["draft"] == 150
    assert any("Recommendation: use the tuned configuration" in s for s in _texts(at.success))


def _stored(significant: bool) -> str:
    settings = get_settings()
    key = "abc123"
    save_result(settings, key, "golden", _spec(), fake_result(settings, significant=significant))
    return key


def _spec():
    from rag_core.tuning import TuneSpec

    return TuneSpec(collection="docs", minutes=5)


def test_a_stored_result_shows_the_measured_verdict_and_its_charts(data_dir):
    _stored(significant=True)
    at = _app().run()
    assert not at.exception, at.exception
    assert any(s.startswith("### Recommendation: use the tuned configuration: +0.071 place_recall on validation")
               for s in _texts(at.success))
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Gain on validation"] == "+0.071" and metrics["p-value"] == "0.012"
    assert metrics["95 % interval"] == "+0.021 to +0.118" and metrics["Validation / tuning questions"] == "9 / 20"
    charts = at.get("plotly_chart")
    assert len(charts) == 6  # validation, history, Pareto, importance, a slice per knob (2 knobs)
    # the Pareto front's points: picking one shows its configuration beside the current one
    front = at.selectbox(key="tune_front_point_abc123")  # one picker per stored result
    assert front.options[:3] == ["trial 1 (Pareto front): 0.620 quality, 1100 tokens, 15 ms",
                                 "trial 3 (Pareto front): 0.580 quality, 700 tokens, 9 ms",
                                 "trial 5 (Pareto front): 0.610 quality, 1000 tokens, 11 ms"]
    assert front.options[3:] == ["trial 0: 0.500 quality, 900 tokens, 12 ms", "trial 4: 0.550 quality, 1400 tokens, "
                                 "20 ms"]  # complete but dominated; the pruned trial 2 is not a point
    front.set_value(3)
    at.run()
    frames = [d.value for d in at.dataframe]
    config = next(f for f in frames if "knob" in f.columns)
    assert config.set_index("knob").loc["initial_k (retrieval)", "this trial"] == "3"
    counts = next(f for f in frames if "count" in f.columns).set_index("trials")["count"]
    assert (counts["ran"], counts["complete"], counts["pruned"], counts["failed"]) == (6, 5, 1, 0)
    seconds = next(f for f in frames if "trial kind" in f.columns).set_index("trial kind")
    assert seconds.loc["new chunking", "mean seconds per complete trial"] == 2.0


def test_the_trial_put_forward_is_named_and_opens_the_configuration_picker(data_dir):
    settings = get_settings()
    save_result(settings, "chosen1", "golden", _spec(), fake_result(settings, significant=True, chosen=(5, 1)))
    at = _app().run()
    assert not at.exception, at.exception
    assert any("The configuration put forward: trial 5 is within one standard error of the top tuning score "
               "(trial 1)" in c for c in _texts(at.caption))
    front = at.selectbox(key="tune_front_point_chosen1")
    assert front.options[:2] == ["trial 5 (put forward, Pareto front): 0.610 quality, 1000 tokens, 11 ms",
                                 "trial 1 (top tuning score, Pareto front): 0.620 quality, 1100 tokens, 15 ms"]
    assert front.value == 5


def test_not_significant_says_keep_the_current_configuration_first(data_dir):
    _stored(significant=False)
    at = _app().run()
    assert not at.exception
    warning = next(w for w in _texts(at.warning) if "Keep the current configuration" in w)
    assert warning.startswith("### Keep the current configuration") and "keep the current configuration" in warning
    assert not any("Recommendation: use" in s for s in _texts(at.success))


def test_too_few_trials_for_importance_is_said_not_drawn(data_dir):
    settings = get_settings()
    result = fake_result(settings, significant=True, study="few")
    result = result.model_copy(update={"trials": result.trials[:2]})
    save_result(settings, "few1", "golden", _spec(), result)
    at = _app().run()
    assert not at.exception
    assert any("Too few complete trials for parameter importance (2" in i for i in _texts(at.info))


def test_an_unreadable_result_is_a_message_not_a_traceback(data_dir):
    folder = Path(get_settings().data_dir) / "tuning" / "results"
    folder.mkdir(parents=True)
    (folder / "broken1.json").write_text("{not json", encoding="utf-8")
    at = _app().run()
    assert not at.exception
    assert any("unreadable" in e for e in _texts(at.error))


@pytest.mark.parametrize("taken", [False, True])
def test_use_this_configuration_saves_activates_and_reindexes(data_dir, taken):
    _stored(significant=True)
    if taken:
        ConfigStore.for_settings(get_settings()).save(RAGConfig(name="tuned-docs"))
    at = _app().run()
    at.text_input(key="tune_save_name").input("tuned-docs")
    _button(at, "Use this configuration").click()
    at.run()
    assert not at.exception, at.exception
    if taken:
        assert any("already saved" in e for e in _texts(at.error))
        assert not _runner().jobs(limit=5)
        return
    saved = ConfigStore.for_settings(get_settings()).load("tuned-docs")
    assert saved.chunking.max_tokens == 256 and saved.retrieval.initial_k == 10
    from rag_core.serving.activestate import active_config

    assert active_config(get_settings()).name == "tuned-docs"
    job = _runner().jobs(limit=1)[0]
    assert job.kind == "reindex"
    assert any("Saved as 'tuned-docs' and made active" in s for s in _texts(at.success))
    finish_jobs()


@pytest.mark.slow
def test_a_real_study_on_the_sample_documents_shows_what_it_measured(data_dir):
    from rag_core.loaders import load_path
    from rag_core.loaders.document_store import DocumentStore
    from rag_core.services import open_index
    from rag_core.serving.tuning_jobs import load_result

    store = DocumentStore(data_dir)
    docs = [load_path(ROOT / "samples" / name) for name in ("configuration.md", "operations.md", "troubleshooting.md",
                                                            "faq.md")]
    for doc in docs:
        store.add(doc)
    open_index(HASH_CONFIG, get_settings()).ingest(docs)
    at = _app().run()
    at.number_input(key="tune_minutes").set_value(0.5)
    _button(at, "Start tuning").click()
    at.run()
    finish_jobs(at, timeout=600)
    assert not at.exception, at.exception
    job = _runner().jobs(limit=1)[0]
    assert job.kind == "tune" and job.state == "done", job.message
    result = load_result(get_settings(), job.result).result
    assert result.counts["trials"] >= 1 and result.status == "time budget"
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Gain on validation"] == f"{result.gain:+.3f}" and metrics["p-value"] == f"{result.p_value:.3f}"
    shown = (_texts(at.success) if result.significant else _texts(at.warning))
    assert any(result.recommendation in text.lower() for text in shown)
    assert result.best_trial is not None and any(result.chosen_because in c for c in _texts(at.caption))


def test_without_a_picked_set_only_drafting_is_offered(data_dir):
    at = _app().run()
    at.radio(key="tune_source").set_value("The question set picked above")
    at.run()
    at.radio(key="eval_source").set_value("Upload CSV/JSONL")  # no file uploaded: no question set
    at.run()
    assert not at.exception, at.exception
    assert at.radio(key="tune_source").options == ["Draft 150 questions from my documents first"]


def test_a_study_that_ended_since_opens_its_result_then_the_choice_stays(data_dir):
    import os
    import time

    settings = get_settings()
    first = save_result(settings, "first1", "first set", _spec(), fake_result(settings, significant=False))
    os.utime(first, (time.time() - 60, time.time() - 60))
    at = _app().run()
    assert at.selectbox(key="tune_result").value == "first1"
    save_result(settings, "second1", "second set", _spec(), fake_result(settings, significant=True, study="s2"))
    at.run()
    assert at.selectbox(key="tune_result").value == "second1"  # ended since: opened
    assert any("Recommendation: use the tuned" in s for s in _texts(at.success))
    at.selectbox(key="tune_result").set_value("first1")
    at.run()
    at.run()
    assert at.selectbox(key="tune_result").value == "first1"  # the person's choice stays
    assert any(w.startswith("### Keep the current configuration") for w in _texts(at.warning))


def test_a_study_that_failed_says_why_after_a_reload(data_dir, monkeypatch):
    def broken(spec, questions, **kwargs):
        raise ValueError("collection 'docs' holds no documents whose text is available; ingest some first")

    monkeypatch.setattr(services, "tune_collection", broken)
    at = _app().run()
    _button(at, "Start tuning").click()
    at.run()
    finish_jobs()
    reloaded = _app().run()
    assert not reloaded.exception
    assert any("failed" in e and "ingest some first" in e for e in _texts(reloaded.error))
    assert _button(reloaded, "Start tuning")  # and it can be started again


def test_a_click_on_a_front_point_names_its_trial():
    """The Pareto chart's selection (``on_select``) gives the clicked point's ``custom_data``: its trial number picks
    that trial's configuration; a point of no listed trial, or no click, picks nothing."""
    from types import SimpleNamespace

    from ui.evaluate.tune_result_view import _clicked_trial

    def event(*points):
        return SimpleNamespace(selection={"points": list(points), "point_indices": []})

    assert _clicked_trial(event({"x": 700, "y": 0.58, "customdata": [3]}), {1, 3, 5}) == 3
    assert _clicked_trial(event({"x": 700, "y": 0.58, "customdata": [9]}), {1, 3, 5}) is None
    assert _clicked_trial(event(), {1, 3}) is None and _clicked_trial(None, {1}) is None
