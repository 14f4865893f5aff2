"""A tuning study as a background job (kind ``tune``): queue it, follow its progress, keep its result.

The study's progress (``TuneProgress`` after every trial) is a JSON file in ``data_dir/tuning/progress/`` and its
result (``TuneResult`` with what was asked) one in ``data_dir/tuning/results/``, both named by the job's id, so any
page, session or reload shows the study running or the one that ended. A cancel stops the study between questions;
the trials so far are kept and scored like a finished study. The engine's wiring (``services.tune_collection``) is
passed in as ``tune``: this module opens nothing itself.
"""

from __future__ import annotations

import json
import math
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import optuna
from pydantic import ValidationError

from rag_core.config import Settings
from rag_core.evaluation.questions import QuestionSet
from rag_core.files import atomic_write_text
from rag_core.serving.jobs import Cancelled, JobKind, JobRunner, JobStatus, TaskHandle
from rag_core.tuning.models import TuneProgress, TuneResult, TuneSpec
from rag_core.tuning.study import storage_url

TUNE_KIND: JobKind = "tune"
DRAFT_DEFAULT = 150  # "draft 150 questions from my documents first"
Tune = Callable[..., TuneResult]  # services.tune_collection's signature


@dataclass(frozen=True, slots=True)
class StoredTune:
    """A finished (or cancelled) study as stored: what was asked and what it found."""

    job: str
    question_set: str
    finished: str
    spec: TuneSpec
    result: TuneResult


def _folder(settings: Settings, part: str) -> Path:
    folder = Path(settings.data_dir) / "tuning" / part
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _file(settings: Settings, part: str, key: str) -> Path:
    if not key.isalnum():
        raise ValueError(f"not a tuning result name: {key!r}")
    return _folder(settings, part) / f"{key}.json"


def read_progress(settings: Settings, key: str) -> TuneProgress | None:
    """The last progress the study ``key`` reported (None before its first, or when unreadable)."""
    path = _file(settings, "progress", key)
    try:
        return TuneProgress.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def save_result(settings: Settings, key: str, question_set: str, spec: TuneSpec, result: TuneResult) -> Path:
    path = _file(settings, "results", key)
    data = {"job": key, "question_set": question_set, "finished": datetime.now(UTC).isoformat(timespec="seconds"),
            "spec": spec.model_dump(mode="json"), "result": result.model_dump(mode="json")}
    atomic_write_text(path, json.dumps(data, ensure_ascii=False))
    return path


def load_result(settings: Settings, key: str) -> StoredTune:
    """The stored result ``key``; ValueError saying what is wrong when it is missing or unreadable."""
    path = _file(settings, "results", key)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return StoredTune(job=str(data["job"]), question_set=str(data.get("question_set", "")),
                          finished=str(data.get("finished", "")), spec=TuneSpec.model_validate(data["spec"]),
                          result=TuneResult.model_validate(data["result"]))
    except FileNotFoundError as e:
        raise ValueError(f"no stored tuning result '{key}'") from e
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as e:
        raise ValueError(f"the stored tuning result '{key}' is unreadable ({type(e).__name__}); run the study "
                         "again") from e


def stored_results(settings: Settings) -> list[str]:
    """Names (keys) of the stored results, newest first."""
    paths = sorted(_folder(settings, "results").glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    return [p.stem for p in paths]


def progress_fraction(spec: TuneSpec, progress: TuneProgress | None) -> float:
    """Share of the search done: by the time left of its time budget when it has one, else by its trials."""
    if progress is None:
        return 0.0
    if spec.minutes:  # the search ends early enough to validate the winner: its own time left says when
        left = progress.eta_s if progress.eta_s is not None else spec.minutes * 60 - progress.elapsed_s
        return min(progress.elapsed_s / max(progress.elapsed_s + left, 1e-9), 1.0)
    return min(progress.trials_done / spec.trials, 1.0) if spec.trials else 0.0


def progress_line(progress: TuneProgress | None) -> str:
    """One line on a running study: trials done, pruned, best so far."""
    if progress is None:
        return "starting: reading the documents and splitting the questions"
    best = "no complete trial yet" if progress.best is None else f"best so far {progress.best:.3f}"
    return f"{progress.trials_done} trials, {progress.pruned} pruned, {progress.failed} failed · {best}"


def closing_message(result: TuneResult) -> str:
    counts = result.counts
    return (f"{counts.get('trials', 0)} trials ({counts.get('complete', 0)} complete, {counts.get('pruned', 0)} "
            f"pruned) in {result.seconds:.0f} s; {result.recommendation}")


def submit_tune(runner: JobRunner, spec: TuneSpec, question_set: QuestionSet | None, *, settings: Settings,
                tune: Tune, draft: int = 0) -> JobStatus:
    """Queue the study ``spec`` on ``question_set`` (or ``draft`` questions drafted from the collection first);
    returns the job's first status at once. ``settings["key"]`` names the study's progress file (``read_progress``)
    and, once it ended, the job's ``result`` its stored result (``load_result``)."""
    if question_set is None and draft < 1:
        raise ValueError("pick a question set, or draft questions from your documents first")
    if question_set is not None and not question_set.questions:
        raise ValueError("the question set is empty")
    if question_set is not None and question_set.kind == "beir":
        raise ValueError("a BEIR folder's questions are about its own corpus, not your documents: pick another set")
    set_name = question_set.name if question_set is not None else f"{draft} questions drafted from {spec.collection}"

    key = uuid.uuid4().hex[:12]  # names the study's progress and result files (kept in the job's settings)

    def task(job: TaskHandle) -> str:
        total = max(1, math.ceil((spec.minutes or 0) * 60)) if spec.minutes else (spec.trials or 1)

        def progress(p: TuneProgress) -> None:
            atomic_write_text(_file(settings, "progress", key), p.model_dump_json())
            if spec.minutes:  # seconds of the time budget: the sidebar's ETA then follows the study's own
                steps = round(p.elapsed_s + p.eta_s) if p.eta_s is not None else total
                job.progress(min(round(p.elapsed_s), steps), max(steps, 1), progress_line(p))
            else:
                job.progress(min(total, p.trials_done), total, progress_line(p))

        result = tune(spec, question_set, draft=draft if question_set is None else 0, settings=settings,
                      progress=progress, should_stop=job.cancelled)
        save_result(settings, key, set_name, spec, result)
        job.set_result(key)
        if result.status == "cancelled":
            raise Cancelled("cancelled: " + closing_message(result))
        return closing_message(result)

    what = "agent" if spec.strategy == "agent" else "search"
    limit = f"{spec.minutes:g} min" if spec.minutes else f"{spec.trials} trials"
    title = f"Tuning {what} on '{set_name}' at {spec.budget} tokens ({limit})"
    return runner.submit_task(task, kind=TUNE_KIND, title=title, collection=spec.collection,
                              settings={"key": key, "spec": spec.model_dump(mode="json"),
                                        "question_set": set_name})


def job_spec(status: JobStatus) -> TuneSpec | None:
    """The ``TuneSpec`` a tune job was queued with (from its status file)."""
    try:
        return TuneSpec.model_validate(status.settings.get("spec", {}))
    except ValidationError:
        return None


def param_importances(settings: Settings, result: TuneResult) -> dict[str, float] | str:
    """Optuna's parameter importances of the stored study on the primary objective (PED-ANOVA, Optuna's default
    evaluator, which needs no scikit-learn: how much each knob's values set the best trials apart from the rest),
    or a sentence saying why there are none (too few complete trials, no knob varied, the study gone)."""
    complete = [t for t in result.trials if t.state == "complete"]
    if len(complete) < 3:
        return (f"Too few complete trials for parameter importance ({len(complete)}; it needs at least 3): give "
                "the study more time.")
    try:
        study = optuna.load_study(study_name=result.study, storage=storage_url(settings))
        with warnings.catch_warnings():  # it warns that it looks for low values: the target is negated for that
            warnings.simplefilter("ignore", UserWarning)
            importances = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(), target=lambda t: -t.values[0])
    except (KeyError, ValueError, RuntimeError, ZeroDivisionError, ImportError) as e:
        return f"Parameter importance could not be computed: {e}"
    if not importances:
        return "No knob took more than one value in every complete trial, so none can be ranked by importance."
    return {path: float(value) for path, value in importances.items() if not math.isnan(value)}
