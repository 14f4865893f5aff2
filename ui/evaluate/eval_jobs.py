"""Evaluation runs and sweeps on the Evaluate page as background jobs: start one, follow it, open its result.

The job runs on the data directory's job runner (``rag_core.serving.jobs``), so it goes on while the person visits other
pages, shows in the sidebar of every page with its ETA and a Cancel button, and its run is stored when it ends.
"""

from __future__ import annotations

import streamlit as st

from rag_core import services
from rag_core.evaluation.background import EVAL_KINDS, submit_evaluation
from rag_core.serving.jobs import JobStatus
from ui import jobs, state
from ui.safe_text import md_escape

JOB_KEY = "eval_job_id"  # the evaluation job this session started last
SHOWN_KEY = "eval_jobs_opened"  # ids of finished jobs whose run was already opened in the Results/Sweep tab


def index_factory(configs):
    """Opens each configuration's index inside the job (a sweep has a new chunking per cell) with the app's shared
    embedders, loaded here, in the page, where their loading shows a spinner."""
    settings = state.settings()
    embedders = {c.embedding.model_dump_json(): state.embedder(c.embedding.model_dump_json()) for c in configs}
    opened: dict[str, object] = {}

    def factory(config):
        name = config.collection_name()
        if name not in opened:
            opened[name] = services.open_index(config, settings, embedder=embedders[config.embedding.model_dump_json()])
        return opened[name]

    return factory


def start(question_set, configs, strategies, label: str = "") -> JobStatus | None:
    """Queue an evaluation run (or a sweep) as a background job; None, with a message, when it cannot start."""
    beir = question_set.kind == "beir"
    docs = None if beir else state.guarded(lambda: state.document_store().list(), "Listing documents")
    if docs is not None and not docs:
        st.warning("No documents are loaded yet: load the sample documents first.")
        return None
    what = "sweep" if label == "sweep" else "evaluation run"
    with st.spinner(f"Starting the {what}: loading the embedding model and queuing the job…"):
        job = state.guarded(lambda: submit_evaluation(
            jobs.runner(), question_set, configs, strategies, settings=state.settings(), documents=docs,
            index_factory=None if beir else index_factory(configs), label=label, open_index=services.open_index,
            llm=state.llm()), "Evaluation")
    if job is not None:
        st.session_state[JOB_KEY] = job.id
    return job


def running() -> JobStatus | None:
    """The evaluation job or sweep running or queued now (this session's or another's)."""
    return jobs.latest(EVAL_KINDS, active_only=True)


def current(kinds: tuple[str, ...] = EVAL_KINDS) -> JobStatus | None:
    """This session's last evaluation job of ``kinds``, else one running now."""
    job_id = st.session_state.get(JOB_KEY)
    job = jobs.runner().get(job_id) if job_id else None
    if job is not None and job.kind in kinds:
        return job
    busy = running()
    return busy if busy is not None and busy.kind in kinds else None


def finished_run(kind: str) -> str | None:
    """The run id of this session's job of ``kind`` that ended since the last call (opened once, then the
    person's own choice of run stays)."""
    job = current((kind,))
    shown = st.session_state.setdefault(SHOWN_KEY, set())
    if job is None or job.active or not job.result or job.id in shown:
        return None
    shown.add(job.id)
    return job.result


def panel(kinds: tuple[str, ...], where: str = "page") -> None:
    """The job of ``kinds`` under way (live progress, ETA, Cancel), or how this session's last one ended."""
    job = current(kinds)
    if job is None:
        return
    if job.active:
        st.info("Runs in the background: you can visit other pages meanwhile; the sidebar follows it on every "
                "page and the results open here when it ends.")
        jobs.job_details(job.id, where)
    elif job.state == "done":
        st.success(f"{md_escape(job.title)} — {md_escape(job.message)}. See the "
                   f"{'Sweep' if job.kind == 'sweep' else 'Results'} tab.")
    else:
        st.warning(jobs.summary(job))
