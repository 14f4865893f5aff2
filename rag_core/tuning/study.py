"""Run a tuning study: Optuna's TPE (or random) sampler over the knobs, trials scored on the tuning questions, the
simplest trial within noise of the top score put forward (``choose.py``) and proven on the validation questions.

One trial = one configuration: the current configuration with the pins and the sampled knob values, scored at the
user's budget. Cheap where it can be: a trial whose chunking was built before reuses that index (retrieval-only),
a repeated configuration reuses its measured scores, and a single-objective trial reports its running mean after
each batch of questions so Optuna's ``MedianPruner`` stops one that trails the median of earlier trials at the same
point (never a start trial: the current configuration and its one-at-a-time neighbours run whole). A new chunking
is built only after ``STARTUP_TRIALS`` complete trials on the indexes there are, while the time left covers a build
(1.5 × the mean build so far; the first one only in the first half of the time), and at most ``max_chunkings`` per
study; otherwise the trial is skipped and asked again with the nearest built chunking. The study is kept in an
SQLite file in the data folder (Optuna's RDB storage), so it survives a restart and resumes by name.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from rag_core.config import RAGConfig, Settings
from rag_core.evaluation.agreement import load_agreement
from rag_core.evaluation.draft import drafted_style
from rag_core.evaluation.questions import QuestionSet
from rag_core.tuning.choose import Candidate, Choice, moved_knobs, simplest_within_noise, top_order
from rag_core.tuning.models import TrialRecord, TuneProgress, TuneResult, TuneSpec
from rag_core.tuning.objective import (
    BuildStopped,
    BuildTooSlow,
    IndexCache,
    IndexOpener,
    primary_metric,
    score_one,
    summarise_scores,
)
from rag_core.tuning.pareto import pareto_front
from rag_core.tuning.proof import compare_paired, recommendation
from rag_core.tuning.space import ACTIVE_WHEN, Knob, apply, knob, knobs_for, neighbours, read
from rag_core.tuning.split import split_by_document
from rag_core.types import Document

# How the tuner drafts questions when asked to (``tune --draft``, the Tune tab's "draft first"): the offline style
# (rag_core.evaluation.draft.STYLES) whose sets rank configurations most like human questions. ``area`` ties
# ``verbatim`` over ``bench drafted``'s chunking grid (Kendall's τ 0.62 and 0.62, 150 questions, 3 seeds) and ranks
# retrieval settings, what a study mostly moves, far more like users (τ 0.46 against 0.30 on the FastAPI docs, 0.38
# against 0.10 on the code docs; docs/BENCHMARKS.md, "Drafting in the user's words").
DRAFT_STYLE = "area"
STARTUP_TRIALS = 4  # trials before the pruner and TPE act on what they saw
START = "start"  # user attribute of the trials a study starts from (the current configuration, its neighbours)
# Today's 2-D grid of the Evaluate page's sweep (max tokens × k, every value it offers): the grid baseline.
SWEEP_GRID = {"chunking.max_tokens": [128, 256, 384, 512, 768, 1024], "retrieval.initial_k": [1, 3, 5, 10, 20]}


@dataclass
class TuneInputs:
    """What a study works with, opened by the caller (``rag_core.services.tune_collection`` wires them)."""

    questions: QuestionSet
    documents: Sequence[Document]
    current: RAGConfig  # the active configuration (with the collection's embedder)
    open_index: IndexOpener
    settings: Settings
    known: dict[str, str]  # index key -> existing collection (the user's own)
    llm: Any = None


def storage_url(settings: Settings) -> str:
    """Optuna's RDB storage of the studies: one SQLite file in the data folder."""
    folder = Path(settings.data_dir) / "tuning"
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{folder / 'studies.db'}"


def _fingerprint(spec: TuneSpec, questions: QuestionSet) -> dict[str, Any]:
    digest = hashlib.sha256(json.dumps([q.to_dict() for q in questions.questions], sort_keys=True).encode())
    return {"questions": digest.hexdigest()[:16], "collection": spec.collection, "strategy": spec.strategy,
            "budget": spec.budget, "seed": spec.seed, "pins": json.dumps(spec.pins, sort_keys=True),
            "multi_objective": spec.multi_objective, "validation_share": spec.validation_share,
            "sampler": spec.sampler, "grid": json.dumps(spec.grid, sort_keys=True)}


def study_name(spec: TuneSpec, questions: QuestionSet) -> str:
    """The study's name: the user's, else one derived from what it tunes (so the same run resumes)."""
    if spec.study_name:
        return spec.study_name
    digest = hashlib.sha256(json.dumps(_fingerprint(spec, questions), sort_keys=True).encode()).hexdigest()[:8]
    return f"{spec.collection}-{spec.strategy}-{spec.budget}-{spec.sampler}-{digest}"


def open_study(spec: TuneSpec, questions: QuestionSet, settings: Settings, first: dict[str, Any] | None = None,
               start: Sequence[dict[str, Any]] = ()) -> optuna.Study:
    """Create the study (``first``: knob values of its first trial, ``start``: of the trials after it), or load the
    stored one of the same name when it tuned the same thing."""
    if spec.sampler == "grid" and not spec.grid:
        raise ValueError("the grid sampler needs a grid: dotted path → values, e.g. SWEEP_GRID")
    if spec.sampler in ("random", "grid"):  # the grid's cells are enqueued below; the sampler never draws
        sampler = optuna.samplers.RandomSampler(seed=spec.seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=STARTUP_TRIALS)
    pruner = (optuna.pruners.NopPruner() if spec.multi_objective or spec.sampler == "grid"
              else optuna.pruners.MedianPruner(n_startup_trials=STARTUP_TRIALS, n_warmup_steps=0))
    directions = ["maximize", "minimize", "minimize"] if spec.multi_objective else ["maximize"]
    name = study_name(spec, questions)
    try:
        study = optuna.create_study(study_name=name, storage=storage_url(settings), load_if_exists=True,
                                    directions=directions, sampler=sampler, pruner=pruner)
    except ValueError as e:  # e.g. a stored study of this name with other directions
        raise ValueError(f"study '{name}' cannot be resumed: {e}; choose another study name") from e
    fingerprint = _fingerprint(spec, questions)
    stored = study.user_attrs.get("fingerprint")
    if stored is None:
        study.set_user_attr("fingerprint", fingerprint)
        if spec.sampler == "grid":  # every cell once, in a seeded order (Optuna's GridSampler needs optimize())
            cells = [dict(zip(spec.grid, values, strict=True)) for values in itertools.product(*spec.grid.values())]
            random.Random(spec.seed).shuffle(cells)
            for cell in cells:
                study.enqueue_trial(cell)
        elif first is not None:  # the current configuration is trial 0: the baseline every sampler starts from
            study.enqueue_trial(first, user_attrs={START: "current"})
            for values in start:
                study.enqueue_trial(values, user_attrs={START: "neighbour"})
    elif stored != fingerprint:
        changed = ", ".join(k for k in fingerprint if stored.get(k) != fingerprint[k])
        raise ValueError(f"study '{name}' tuned something else (different {changed}); choose another study name")
    return study


def suggest(trial: optuna.Trial, knobs: Sequence[Knob], base: RAGConfig) -> dict[str, Any]:
    """Knob values for ``trial``; a knob that only matters with another's value is asked only then."""
    params: dict[str, Any] = {}
    for one in knobs:
        condition = ACTIVE_WHEN.get(one.path)
        if condition and params.get(condition[0], read(base, condition[0])) != condition[1]:
            continue
        if one.kind == "categorical":
            params[one.path] = trial.suggest_categorical(one.path, list(one.choices))
        elif one.kind == "int":
            params[one.path] = trial.suggest_int(one.path, int(one.low), int(one.high), step=one.step or 1,
                                                  log=one.log)
        else:
            params[one.path] = trial.suggest_float(one.path, one.low, one.high, log=one.log)
    return params


def config_key(config: RAGConfig) -> str:
    """What makes two trial configurations the same experiment (everything but the name)."""
    return hashlib.sha256(config.model_copy(update={"name": "x"}).model_dump_json().encode()).hexdigest()[:16]


def _nearest_built(config: RAGConfig, built: dict[str, RAGConfig]) -> RAGConfig:
    def distance(other: RAGConfig) -> tuple:
        return (other.chunking.strategy != config.chunking.strategy,
                abs(other.chunking.max_tokens - config.chunking.max_tokens),
                abs(other.chunking.overlap - config.chunking.overlap))
    return min(built.values(), key=distance)


def _record(trial: optuna.trial.FrozenTrial) -> TrialRecord:
    state = {TrialState.COMPLETE: "complete", TrialState.PRUNED: "pruned"}.get(trial.state, "failed")
    attrs = trial.user_attrs
    if attrs.get("stopped"):
        state = "stopped"
    return TrialRecord(number=trial.number, state=state, params=dict(trial.params), metrics=attrs.get("metrics", {}),
                       kind=attrs.get("kind", ""), seconds=attrs.get("seconds", 0.0),
                       questions=attrs.get("questions", 0), note=attrs.get("note", ""))


def run_study(spec: TuneSpec, inputs: TuneInputs, *, progress: Callable[[TuneProgress], None] | None = None,
              should_stop: Callable[[], bool] | None = None, clock: Callable[[], float] = time.monotonic
              ) -> TuneResult:
    """Search the knobs of ``spec.strategy`` until the time or trial budget is spent (or ``should_stop()``), then
    score the current and the best configuration on the validation questions. Trials so far are always kept."""
    return _Study(spec, inputs, progress, should_stop, clock).run()


class _Study:
    """One session of a study: the search loop, its trials' bookkeeping and the proof."""

    def __init__(self, spec: TuneSpec, inputs: TuneInputs, progress, should_stop, clock) -> None:
        if not inputs.questions.questions:
            raise ValueError("the question set is empty")
        self.spec, self.inputs, self.clock = spec, inputs, clock
        self.progress = progress or (lambda _p: None)
        self.should_stop = should_stop or (lambda: False)
        self.started = clock()
        self.tuning, self.validation = split_by_document(inputs.questions.questions, spec.seed,
                                                         spec.validation_share)
        self.metric = primary_metric(inputs.questions.questions)
        self.current = apply(inputs.current, {}, budget=spec.budget, name=inputs.current.name)
        self.base = apply(inputs.current, spec.pins, budget=spec.budget)
        self.knobs = [knob(path) for path in spec.grid] if spec.sampler == "grid" else knobs_for(spec.strategy,
                                                                                               spec.pins)
        self.eval_strategy = "agent" if spec.strategy == "agent" else None
        self.cache = IndexCache(inputs.documents, inputs.open_index, inputs.settings, prefix=spec.collection,
                                known=dict(inputs.known))
        current_values = {k.path: read(self.base, k.path) for k in self.knobs if k.path not in ACTIVE_WHEN or
                          read(self.base, ACTIVE_WHEN[k.path][0]) == ACTIVE_WHEN[k.path][1]}
        first = self._in_range(current_values)
        # TPE starts from the current configuration's one-at-a-time neighbours (space.neighbours); the random and
        # grid baselines from trial 0 alone, as those samplers do.
        start = neighbours(self.knobs, first, self.base) if first is not None and spec.sampler == "tpe" else []
        self.study = open_study(spec, inputs.questions, inputs.settings, first, start)
        self.built: dict[str, RAGConfig] = {}
        self.seen: dict[str, optuna.trial.FrozenTrial] = {
            t.user_attrs["key"]: t for t in self.study.trials if t.state == TrialState.COMPLETE and
            "key" in t.user_attrs}
        self.session_trials = 0
        self.trial_seconds: list[float] = []

    def _in_range(self, values: dict[str, Any]) -> dict[str, Any] | None:
        """``values`` (the current configuration's knobs) when each is a value its knob can take, so the current
        configuration can be trial 0; None when one is outside its range or off its step."""
        for one in self.knobs:
            value = values.get(one.path)
            if value is None:
                continue
            if one.kind == "categorical" and value not in one.choices:
                return None
            if one.kind != "categorical" and not (one.low <= value <= one.high and
                                                  (not one.step or (value - one.low) % one.step == 0)):
                return None
        return values

    # ------------------------------------------------------------------ search

    def deadline(self) -> float | None:
        """When the search stops, leaving time to score two configurations on the validation questions."""
        if self.spec.minutes is None:
            return None
        full = max(self.trial_seconds) if self.trial_seconds else 0.0
        reserve = 2 * full * len(self.validation) / max(1, len(self.tuning))
        return self.started + self.spec.minutes * 60 - reserve

    def stop_reason(self) -> str:
        if self.should_stop():
            return "cancelled"
        if self.spec.trials is not None and self.session_trials >= self.spec.trials:
            return "trials"
        if self.spec.sampler == "grid" and not any(t.state == TrialState.WAITING for t in self.study.trials):
            return "grid done"
        deadline = self.deadline()
        if deadline is not None and self.clock() >= deadline:
            return "time budget"
        return ""

    def score(self, config: RAGConfig, questions, index, on_batch=None) -> list:
        strategy = self.eval_strategy or config.retrieval.strategy
        steps = max(1, min(self.spec.prune_steps, len(questions)))
        cut = [round(len(questions) * (i + 1) / steps) for i in range(steps)]
        scores = []
        for position, question in enumerate(questions, start=1):
            scores.append(score_one(question, strategy, config, index, self.inputs.settings, self.metric,
                                    self.inputs.llm))
            if on_batch and position in cut and on_batch(cut.index(position), scores):
                break
        return scores

    def affordable(self, config: RAGConfig) -> bool:
        if self.cache.has(config) or config.index_key() in self.cache.known:
            return True
        if len(self.built) >= self.spec.max_chunkings or len(self.trial_seconds) < STARTUP_TRIALS:
            return False  # retrieval knobs first, on the indexes there are: a build costs many trials
        deadline = self.deadline()
        if deadline is None:
            return True
        left = deadline - self.clock()
        if not self.cache.build_seconds:  # no build measured yet: the first one only in the first half of the time
            return left >= (self.spec.minutes or 0) * 30
        return left > 1.5 * self.cache.expected_build_s()

    def trial(self) -> str:
        """Run one trial; returns a stop reason when the study must stop in its middle."""
        trial = self.study.ask()
        started = self.clock()
        params = suggest(trial, self.knobs, self.base)
        config = apply(self.base, params, budget=self.spec.budget, name=f"trial {trial.number}")
        key = config_key(config)
        if key in self.seen:  # the same experiment again: its measured scores, no new run
            earlier = self.seen[key]
            self._tell(trial, earlier.values, earlier.user_attrs["metrics"], "repeat", started,
                       earlier.user_attrs.get("questions", 0), key, config, note=f"same as trial {earlier.number}",
                       scores=earlier.user_attrs.get("scores"))
            return ""
        if self.built and not self.affordable(config):
            self._skip(trial, config, "skipped: no time for a new chunking; asked again with the nearest built one")
            return ""
        try:
            index, built_now = self.cache.get(config, lambda: self.stop_reason() in ("cancelled", "time budget"),
                                              finish_by=self.deadline(), clock=self.clock)
        except BuildTooSlow as e:  # given up early: the search goes on with the chunkings there are
            self._skip(trial, config, f"skipped: {e}; asked again with the nearest built chunking")
            return ""
        except BuildStopped as e:
            why = self.stop_reason() or "stopped"
            trial.set_user_attr("stopped", why)
            self._tell(trial, None, {}, "new chunking", started, 0, key, config, state=TrialState.FAIL,
                       note=f"stopped: {why}; {e}")
            return why
        self.built.setdefault(config.index_key(), config)
        kind = "new chunking" if built_now else "retrieval-only"
        reason: list[str] = []

        def on_batch(step: int, scores) -> bool:
            why = self.stop_reason()
            reason.append(why if why in ("cancelled", "time budget") else "")
            if reason[-1]:
                return True
            if self.spec.multi_objective:
                return False
            trial.report(summarise_scores(scores, self.metric)["quality"], step)
            # A start trial runs whole: it is there to say how one knob moves the score (a chunking neighbour has
            # just built its index), which a quarter of the questions cannot.
            return trial.should_prune() and START not in trial.user_attrs

        scores = self.score(config, self.tuning, index, on_batch)
        summary = summarise_scores(scores, self.metric)
        if reason and reason[-1]:
            trial.set_user_attr("stopped", reason[-1])
            self._tell(trial, None, summary, kind, started, len(scores), key, config, state=TrialState.FAIL,
                       note=f"stopped: {reason[-1]}")
            return reason[-1]
        if len(scores) < len(self.tuning):
            self._tell(trial, None, summary, kind, started, len(scores), key, config, state=TrialState.PRUNED,
                       note=f"pruned after {len(scores)} of {len(self.tuning)} questions")
            return ""
        values = ([summary["quality"], summary["context_tokens"], summary["latency_ms"]] if self.spec.multi_objective
                  else [summary["quality"]])
        self._tell(trial, values, summary, kind, started, len(scores), key, config,
                   scores={s.question_id: s.score for s in scores if s.score is not None})
        self.trial_seconds.append(self.clock() - started)
        return ""

    def _skip(self, trial: optuna.Trial, config: RAGConfig, note: str) -> None:
        """Record ``trial`` as skipped (its chunking cannot be built in time) and ask it again with the nearest
        built chunking."""
        nearest = _nearest_built(config, self.built) if self.built else self.current
        snapped = {**trial.params, **{p: read(nearest, p) for p in trial.params if p.startswith("chunking.")}}
        trial.set_user_attr("note", note)
        trial.set_user_attr("kind", "skipped")
        self.study.tell(trial, state=TrialState.PRUNED)
        self.study.enqueue_trial(snapped, skip_if_exists=False)

    def _tell(self, trial, values, metrics, kind, started, questions, key, config, *, state=TrialState.COMPLETE,
              note: str = "", scores: dict[str, float] | None = None) -> None:
        for name, value in (("metrics", metrics), ("kind", kind), ("seconds", round(self.clock() - started, 3)),
                            ("questions", questions), ("key", key), ("config", config.model_dump(mode="json")),
                            ("note", note)):
            trial.set_user_attr(name, value)
        if scores is not None:  # per tuning question: the paired standard error of the choice (choose.py)
            trial.set_user_attr("scores", scores)
        if state == TrialState.COMPLETE:
            frozen = self.study.tell(trial, list(values))
            self.seen[key] = frozen
        else:
            self.study.tell(trial, state=state)

    def report(self, message: str) -> None:
        done = [t for t in self.study.trials if t.state.is_finished()]
        best = self.top_trial()
        deadline = self.deadline()
        eta = None
        if deadline is not None:
            eta = max(0.0, deadline - self.clock())
        elif self.spec.trials is not None and self.trial_seconds:
            eta = (self.spec.trials - self.session_trials) * sum(self.trial_seconds) / len(self.trial_seconds)
        self.progress(TuneProgress(
            trials_done=len(done), pruned=sum(t.state == TrialState.PRUNED for t in done),
            failed=sum(t.state == TrialState.FAIL for t in done), best=best.values[0] if best else None,
            best_params=dict(best.params) if best else {}, elapsed_s=round(self.clock() - self.started, 2),
            eta_s=None if eta is None else round(eta, 1), message=message))

    def top_trial(self) -> optuna.trial.FrozenTrial | None:
        """The complete trial with the top tuning score (the progress's "best so far")."""
        complete = [t for t in self.study.trials if t.state == TrialState.COMPLETE]
        if not complete:
            return None
        return max(complete, key=lambda t: top_order(t.values[0], t.user_attrs.get("metrics", {}).get(
            "context_tokens", 0), t.number))

    def choice(self) -> Choice | None:
        """The trial the study puts forward: the simplest within noise of the top one (``choose.py``)."""
        complete = [t for t in self.study.trials if t.state == TrialState.COMPLETE and "config" in t.user_attrs]
        current = {k.path: read(self.current, k.path) for k in self.knobs}

        def moved(t: optuna.trial.FrozenTrial) -> int:
            config = RAGConfig.model_validate(t.user_attrs["config"])
            return moved_knobs({k.path: read(config, k.path) for k in self.knobs}, current)

        return simplest_within_noise([
            Candidate(number=t.number, quality=t.values[0], scores=t.user_attrs.get("scores") or {}, moved=moved(t),
                      tokens=t.user_attrs.get("metrics", {}).get("context_tokens", 0.0)) for t in complete])

    # ------------------------------------------------------------------ proof

    def run(self) -> TuneResult:
        status = ""
        self.report(f"tuning on {len(self.tuning)} questions, validating on {len(self.validation)}")
        while not status:
            status = self.stop_reason()
            if status:
                break
            status = self.trial()
            self.session_trials += 1
            self.report(f"trial {self.session_trials} done")
        return self.result(status or "complete")

    def result(self, status: str) -> TuneResult:
        choice = self.choice()
        best_trial = next(t for t in self.study.trials if t.number == choice.chosen) if choice else None
        best = RAGConfig.model_validate(best_trial.user_attrs["config"]) if best_trial else self.current
        self.report("scoring the current and the best configuration on the validation questions")
        per_config = []
        for config in (self.current, best):
            index, _ = self.cache.get(config)
            scores = self.score(config, self.validation, index)
            per_config.append(({s.question_id: s.score for s in scores if s.score is not None},
                               summarise_scores(scores, self.metric)))
        (current_scores, current_summary), (best_scores, best_summary) = per_config
        validation = compare_paired(self.metric, current_scores, best_scores, current_summary, best_summary)
        records = [_record(t) for t in self.study.trials if t.state.is_finished()]
        complete = [r for r in records if r.state == "complete"]
        front = pareto_front([(r.metrics.get("quality", 0.0), r.metrics.get("context_tokens", 0.0),
                               r.metrics.get("latency_ms", 0.0)) for r in complete])
        return TuneResult(
            study=self.study.study_name, status=status, metric=self.metric, strategy=self.spec.strategy,
            budget=self.spec.budget, best=best.model_dump(mode="json"),
            current_config=self.current.model_dump(mode="json"), current=validation.current,
            best_metrics=validation.best, gain=validation.gain, interval=validation.interval,
            p_value=validation.p_value, significant=validation.significant,
            recommendation=recommendation(validation), trials=records, pareto=[complete[i].number for i in front],
            counts=_counts(records), seconds_by_kind=_seconds_by_kind(records),
            split={"tuning": len(self.tuning), "validation": len(self.validation)},
            knobs=[k.to_dict() for k in self.knobs], pins=dict(self.spec.pins), trust=self.trust(),
            seconds=round(self.clock() - self.started, 2), best_trial=choice.chosen if choice else None,
            top_trial=choice.top if choice else None, chosen_because=choice.why if choice else "")

    def trust(self) -> dict[str, Any] | None:
        """How far a drafted set can be trusted: the rank agreement the drafting bench measured (None otherwise)."""
        if self.inputs.questions.kind != "drafted":
            return None
        style = drafted_style(self.inputs.questions.source)
        agreement = load_agreement(style=style)
        if agreement is None:
            command = "python -m bench drafted" + ("" if style == "verbatim" else f" --style {style}")
            return {"tau": None, "note": f"the agreement of sets drafted in the {style} style with human questions "
                                         f"was never measured ({command})"}
        return {"tau": agreement["tau"], "corpus": agreement.get("corpus", ""),
                "human_set": agreement.get("human_set", ""), "metric": agreement.get("metric", ""),
                "note": "Kendall's tau between the rankings of configurations by a drafted set and by human-written "
                        "questions, measured by bench drafted"}


def _counts(records: Sequence[TrialRecord]) -> dict[str, int]:
    counts = {"trials": len(records), "complete": 0, "pruned": 0, "failed": 0, "stopped": 0, "skipped": 0,
              "repeats": 0, "retrieval_only": 0, "new_chunking": 0}
    for r in records:
        counts[r.state] = counts.get(r.state, 0) + 1
        if r.kind == "skipped":
            counts["skipped"] += 1
            counts["pruned"] -= 1
        counts["repeats"] += r.kind == "repeat"
        counts["retrieval_only"] += r.kind == "retrieval-only"
        counts["new_chunking"] += r.kind == "new chunking"
    return counts


def _seconds_by_kind(records: Sequence[TrialRecord]) -> dict[str, float]:
    """Mean seconds per complete trial of each kind (retrieval-only, new chunking)."""
    out = {}
    for kind in ("retrieval-only", "new chunking"):
        seconds = [r.seconds for r in records if r.kind == kind and r.state == "complete"]
        if seconds:
            out[kind] = round(sum(seconds) / len(seconds), 2)
    return out
