"""Evaluate's "Tune" tab: start a tuning study as a background job (question set or a draft first, strategy, time
budget, the user's fixed context budget, pinned knobs), follow it (trials, pruned, best so far, ETA, Cancel), and
read its stored result in charts (history, Pareto front, importance, slices, validation) with **Use this
configuration** (save by name, make active, re-index as a job). The study runs in ``rag_core`` (``tuning_jobs``)."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from rag_core import services
from rag_core.config import RAGConfig, field_bounds
from rag_core.errors import field_problems
from rag_core.serving import tuning_jobs
from rag_core.serving.jobs import JobStatus, format_eta
from rag_core.tuning import TuneSpec, knob, parse_pins
from rag_core.tuning.space import KNOBS, TUNE_STRATEGIES
from ui import jobs, state
from ui.evaluate import tune_charts as charts
from ui.evaluate import tune_result_view
from ui.safe_text import md_escape, md_inert
from ui.state import KEEP as PERSIST

JOB_KEY = "tune_job_id"  # the tune job this session started last
RESULT_KEY, NEWEST_KEY = "tune_result", "tune_newest"  # the stored result shown; the newest one seen
SOURCE_KEY, STRATEGY_KEY, MINUTES_KEY, BUDGET_KEY, PINS_KEY = ("tune_source", "tune_strategy", "tune_minutes",
                                                               "tune_budget", "tune_pins")
DRAFT_N, KIND = tuning_jobs.DRAFT_DEFAULT, tuning_jobs.TUNE_KIND
PICKED, DRAFT = "The question set picked above", f"Draft {DRAFT_N} questions from my documents first"


def pin_key(path: str) -> str:
    return f"tune_pin_{path.replace('.', '_')}"


def _range_text(path: str) -> str:
    spec = knob(path).to_dict()
    if spec["kind"] == "categorical":
        return "one of " + ", ".join(str(c) for c in spec["choices"])
    return f"{spec['low']:g} to {spec['high']:g}" + (f", step {spec['step']}" if spec.get("step") else "")


def read_pins(strategy: str, base: RAGConfig) -> dict | None:
    """The pinned knobs as {dotted path: value}, checked by the engine (``parse_pins``); None with a message."""
    pinned = st.multiselect("Knobs to pin (never tuned)", list(KNOBS[strategy]), key=PINS_KEY, format_func=charts.short,
                            help="A pinned knob keeps the value you give in every trial.")
    items, missing = [], []
    for path in pinned:
        raw = st.text_input(f"Value of {charts.short(path)}", key=pin_key(path), placeholder=_range_text(path),
                            help=f"{path}: {_range_text(path)}")
        if not raw.strip():
            missing.append(charts.short(path))
        items.append(f"{path}={raw.strip()}")
    if missing:
        st.warning("Give a value for each pinned knob: " + md_escape(", ".join(missing)) + ".")
        return None
    try:
        return parse_pins(items, base, strategy)
    except ValidationError as e:
        st.error("Pinned knobs: " + md_inert(field_problems(e, unnamed=None)))
    except ValueError as e:
        st.error("Pinned knobs: " + md_inert(e))
    return None


def _start(spec: TuneSpec, question_set, draft: int) -> None:
    job = state.guarded(lambda: tuning_jobs.submit_tune(jobs.runner(), spec, question_set, settings=state.settings(),
                                            tune=services.tune_collection, draft=draft), "Starting the study")
    if job is not None:
        st.session_state[JOB_KEY] = job.id
        st.session_state.pop(RESULT_KEY, None)
        st.rerun()


def form(question_set) -> None:
    """The study's settings and its Start button (a running study is shown instead, see ``running_panel``)."""
    sources = [PICKED, DRAFT] if question_set is not None else [DRAFT]
    source = st.radio("Questions", sources, key=SOURCE_KEY, horizontal=True, persist_state=PERSIST,
                      help="About 30 % of the questions, whole documents at a time, are kept back to validate the "
                           "winner: the search never sees them.")
    if source == PICKED:
        st.caption(f"Tunes on **{md_escape(question_set.name)}** ({len(question_set.questions)} questions).")
    else:
        st.caption(f"{DRAFT_N} questions are drafted offline from the documents of the index searches use, inside "
                   "the job, before the search starts. They ask about a section in words of the page around it, "
                   "not the passage's own, as a user who knows the area would.")
    active = state.active_config()
    left, middle, right = st.columns(3)
    strategy = left.radio("Strategy", list(TUNE_STRATEGIES), key=STRATEGY_KEY, horizontal=True,
                          persist_state=PERSIST, help="search: one-shot retrieval; agent: the agent's steps too.")
    minutes = middle.number_input("Time budget (minutes)", 0.5, 24 * 60.0, 15.0, 0.5, key=MINUTES_KEY,
                                  persist_state=PERSIST, help="The search stops in time to validate the winner.")
    budget = right.number_input("Context token budget (yours, fixed)", *field_bounds("retrieval.token_budget"),
                                int(active.retrieval.token_budget), 100, key=BUDGET_KEY, persist_state=PERSIST,
                                help="Every trial is scored at this budget: more tokens can never win.")
    pins = read_pins(strategy, active)
    collection = state.serving_pointer().serving.collection
    st.caption(f"Tunes the index searches use now, **{md_escape(collection)}**, with its documents and embedder.")
    if not st.button("Start tuning", key="tune_start", type="primary", disabled=pins is None):
        return
    try:
        spec = TuneSpec(collection=collection, strategy=strategy, budget=int(budget), minutes=float(minutes),
                        pins=pins or {})
    except ValidationError as e:
        st.error("Study settings: " + md_inert(field_problems(e, unnamed=None)))
        return
    _start(spec, question_set if source == PICKED else None, 0 if source == PICKED else DRAFT_N)


def current_job() -> JobStatus | None:
    """This session's last tune job, else the newest one (any session's: running, or how it ended)."""
    job_id = st.session_state.get(JOB_KEY)
    job = jobs.runner().get(job_id) if job_id else None
    return job if job is not None and job.kind == KIND else jobs.latest((KIND,))


def _cancel(job_id: str) -> None:
    if jobs.runner().cancel(job_id):
        st.toast("Cancelling the study: the trials so far are kept and validated.")


def _progress_body(job_id: str) -> None:
    job = jobs.runner().get(job_id)
    if job is None or not job.active:
        st.rerun(scope="app")  # the page was drawn for a running study: redraw it with the result
        return
    spec = tuning_jobs.job_spec(job)
    progress = tuning_jobs.read_progress(state.settings(), str(job.settings.get("key", "")))
    if job.state == "queued":
        st.info(md_inert(f"{job.title}: waiting for the job before it."))
    else:
        fraction = tuning_jobs.progress_fraction(spec, progress) if spec else 0.0
        st.progress(fraction, text=md_escape(tuning_jobs.progress_line(progress)))
    if progress is not None:
        done, pruned, best, eta = st.columns(4)
        done.metric("Trials done", progress.trials_done)
        pruned.metric("Pruned", progress.pruned)
        best.metric("Best so far (tuning questions)", "—" if progress.best is None else f"{progress.best:.3f}")
        eta.metric("Time left (time budget)", format_eta(progress.eta_s))
        if progress.message:
            st.caption(md_escape(progress.message))
    st.button("Cancel", key=f"tune_cancel_{job_id}", on_click=_cancel, args=(job_id,),
              help="Stop after the current question: the trials so far are kept, and the best is validated.")


def running_panel(job: JobStatus) -> None:
    st.info(md_inert(f"{job.title} runs in the background: you can visit other pages meanwhile; its result opens "
                     "here when it ends."))
    st.fragment(run_every=jobs.refresh_s())(_progress_body)(job.id)


def _result_label(key: str) -> str:
    try:
        stored = tuning_jobs.load_result(state.settings(), key)
    except ValueError:
        return f"{key} (unreadable)"
    return (f"{stored.finished.replace('T', ' ')[:16]} · {stored.question_set} · {stored.result.strategy} · "
            f"{stored.result.status}")


def pick_result() -> tuning_jobs.StoredTune | None:
    """The stored result picked (the newest when a study ended since the last run), or None when there is none."""
    keys = tuning_jobs.stored_results(state.settings())
    if not keys:
        return None
    if keys[0] != st.session_state.get(NEWEST_KEY):  # a study ended since (this session's or another's): open it
        st.session_state[RESULT_KEY] = st.session_state[NEWEST_KEY] = keys[0]
    if st.session_state.get(RESULT_KEY) not in keys:
        st.session_state.pop(RESULT_KEY, None)
    key = st.selectbox("Study result", keys, key=RESULT_KEY, format_func=_result_label)
    return state.guarded(lambda: tuning_jobs.load_result(state.settings(), key), "Tuning result")


def tune_tab(question_set) -> None:
    """The whole tab: a running study's progress, or the form; then the chosen stored result."""
    job = current_job()
    if job is not None and job.active:
        running_panel(job)
    else:
        if job is not None and job.state in ("failed", "interrupted"):
            st.error(jobs.summary(job))
        form(question_set)
    stored = pick_result()
    if stored is None:
        st.caption("No study has finished yet: its result appears here.")
        return
    tune_result_view.show(stored)

