"""Evaluation runs and sweeps as background jobs: the job runner's queue, status, progress, ETA and cancel.

The run is stored in the data directory's ``ResultsStore`` however it ends (complete, cancelled with what it
measured, or failed), and the job keeps the run's id as its ``result`` so a page can open it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rag_core.config import RAGConfig, Settings
from rag_core.evaluation.questions import QuestionSet
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun, check_counts, check_strategies, run_evaluation
from rag_core.serving.jobs import Cancelled, JobKind, JobRunner, JobStatus, TaskHandle
from rag_core.types import Document

EVAL_KINDS: tuple[JobKind, ...] = ("evaluation", "sweep")


def evaluation_title(question_set: QuestionSet, configs: Sequence[RAGConfig], strategies: Sequence[str],
                     label: str = "") -> str:
    what = "Sweep" if label == "sweep" else "Evaluation"
    names = configs[0].name if len(configs) == 1 else f"{len(configs)} configurations"
    return f"{what} on '{question_set.name}': {names} × {', '.join(strategies)}"


def closing_message(run: EvalRun) -> str:
    """One line on how a stored run ended."""
    done = len(run.records)
    if run.status == "complete":
        return f"run {run.id} complete: {done} question runs in {run.elapsed_s:.1f} s"
    return f"run {run.id} {run.status}: {run.note}; what was measured is kept"


def submit_evaluation(
    runner: JobRunner,
    question_set: QuestionSet,
    configs: Sequence[RAGConfig],
    strategies: Sequence[str],
    *,
    settings: Settings,
    documents: Sequence[Document] | None = None,
    index_factory: Callable[[RAGConfig], Any] | None = None,
    label: str = "",
    open_index: Callable[..., Any] | None = None,
    llm: Any = None,
) -> JobStatus:
    """Queue an evaluation run (``label="sweep"``: a sweep) on ``runner``; returns the job's first status at once.

    Arguments are checked here, so a bad request is refused before it is queued. ``open_index`` and ``llm`` are
    passed on to ``run_evaluation``.
    """
    if not question_set.questions:
        raise ValueError("the question set is empty")
    if not configs:
        raise ValueError("pick at least one configuration")
    strategies = check_strategies(strategies)
    check_counts(len(question_set.questions), len(configs), settings, "the evaluation")
    configs, documents = list(configs), list(documents) if documents is not None else None
    store = ResultsStore.for_settings(settings)  # on the Chroma server when one is configured

    def task(job: TaskHandle) -> str:
        def finished(run: EvalRun) -> None:
            store.save(run)
            job.set_result(run.id)

        run = run_evaluation(question_set, configs, strategies, settings=settings, documents=documents,
                             index_factory=index_factory, progress=job.progress, cancel=job.cancelled,
                             on_finish=finished, label=label, open_index=open_index, llm=llm)
        if run.status == "cancelled":
            raise Cancelled(closing_message(run))
        return closing_message(run)

    kind: JobKind = "sweep" if label == "sweep" else "evaluation"
    return runner.submit_task(task, kind=kind, title=evaluation_title(question_set, configs, strategies, label),
                              settings={"question_set": question_set.name, "configs": [c.name for c in configs],
                                        "strategies": strategies, "label": label,
                                        # what the Evaluate form needs to show this run after a reload
                                        "question_set_kind": question_set.kind,
                                        "question_set_source": question_set.source})
