"""Background jobs in the app: the sidebar panel on every page and a job's per-file table.

Both redraw themselves while a job runs (``st.fragment(run_every=…)``: only that part reruns, the page stays
usable), once a second for one person and less often when many sessions are open (``refresh_s``), and each reruns
the whole app once when the job ends, so the page shows its result.
"""

from __future__ import annotations

import threading
import time
import uuid

import pandas as pd
import streamlit as st

from rag_core.serving.jobs import JobStatus, format_eta, runner_for
from ui import state
from ui.safe_text import md_escape, md_inert

REFRESH_S = 1.0
# Every open session redraws its own job card: at 1 s each, 8 sessions searching during an ingest made 8 fragment
# runs a second in the process that also runs the job and every search (searches then took minutes). The
# interval grows with the sessions seen lately so that all of them together redraw about this often.
REDRAWS_PER_S = 2.0
SEEN_FOR_S = 30.0
SESSION_KEY = "jobs_session"
_seen: dict[str, float] = {}  # a session's key → when it last drew a page (one process serves every session)
_seen_lock = threading.Lock()
# Plain words: a table cell shows no icons (and emoji render as boxes without an emoji font).
STATE_LABELS = {"queued": "queued", "chunking": "chunking", "chunked": "chunked, waiting to embed",
                "embedding": "embedding", "embedded": "embedded, committing with its batch", "indexed": "indexed",
                "unchanged": "already indexed", "failed": "failed", "cancelled": "cancelled"}
JOB_LABELS = {"queued": "waiting", "running": "running", "done": "done", "failed": "failed", "cancelled": "cancelled",
              "interrupted": "interrupted"}
_SEEN_ACTIVE_KEY = "jobs_seen_active"  # job ids this session saw running (their end triggers one full rerun)
_UNFINISHED = ("queued", "chunking", "chunked", "embedding", "embedded")


def runner():
    return runner_for(state.settings().data_dir)


def doing_text(job: JobStatus) -> str:
    """What a running job does now, in a few words: the file in progress with its own chunk count, or the task's
    step; then its ETA (from its measured pace)."""
    if not job.files:
        text = f"{job.steps_done}/{job.steps_total}" if job.steps_total else ""
        if job.step_text:
            text += (" · " if text else "") + md_escape(job.step_text)
        return text
    current = job.current_file()
    if current is None:
        return ""
    text = f"{current.state} {md_escape(current.name)}"
    if current.state == "embedding" and current.chunks:
        text += f" ({current.embedded}/{current.chunks} chunks)"
    return text


def waiting_text(ahead: JobStatus | None) -> str:
    """Why a queued job has not started: the job it waits behind, what that one does and how long it has left."""
    if ahead is None:
        return "waiting for the job before it"
    current = ahead.current_file()
    doing = f"indexing {md_escape(current.name)}" if current is not None else md_escape(ahead.title)
    eta = ahead.eta_s
    left = f", ~{max(1, round(eta / 60))} min left" if eta is not None and eta >= 60 else (
        f", ~{max(1, round(eta))} s left" if eta is not None else ", its time left still being measured")
    return f"waiting behind: {doing}{left}"


def _ahead_of(job: JobStatus) -> JobStatus | None:
    """The job running now in this data directory, which ``job`` (queued) waits behind."""
    return next((j for j in runner().active() if j.state == "running" and j.id != job.id), None)


def progress_text(job: JobStatus, ahead: JobStatus | None = None) -> str:
    """A job's progress line: files (or steps) done, what it does now, its ETA; a queued one names the job it
    waits behind (``ahead``; looked up when not given)."""
    if job.files:
        counts = job.counts()
        finished = len(job.files) - sum(counts[s] for s in _UNFINISHED)
        text = f"{md_escape(job.title)}: {finished}/{len(job.files)} files"
        if counts["embedded"]:
            text += f" ({counts['embedded']} more embedded, committed with their batch)"
    else:
        text = md_escape(job.title)
    if job.state == "queued":
        return text + " · " + waiting_text(ahead or _ahead_of(job))
    doing = doing_text(job)
    if doing:
        text += (" · " if job.files else ": ") + doing
    return text + f" · {format_eta(job.eta_s)}"


def summary(job: JobStatus) -> str:
    """One line on a finished job."""
    return f"{md_escape(job.title)} — {JOB_LABELS.get(job.state, job.state)}" + (
        f": {md_escape(job.message)}" if job.message else "") + f" ({job.elapsed_s:.1f} s)"


def _ended(active_ids: set[str]) -> bool:
    """True once when a job this session saw running has ended (the page must redraw with its result)."""
    seen = st.session_state.setdefault(_SEEN_ACTIVE_KEY, set())
    ended = seen - active_ids
    seen.clear()
    seen.update(active_ids)
    return bool(ended)


def _cancel(job_id: str, title: str) -> None:
    if runner().cancel(job_id):
        st.toast(f"Cancelling {md_inert(title)}…")  # a job's title carries names from uploads and question sets


CANCEL_HELP = {
    "evaluation": "Stop after the current question: the questions already measured are kept as a cancelled run.",
    "sweep": "Stop after the current question: the cells already measured are kept as a cancelled sweep.",
    "demo": "Stop choosing the guided demo's question; step 3 on Home then offers to choose it again.",
    "draft": "Stop drafting: the questions drafted so far are kept for review.",
    "tune": "Stop the study after the current question: the trials so far are kept, and the best is validated.",
}
INGEST_CANCEL_HELP = ("Stop after the current batch: documents already indexed stay, the batch in progress is "
                      "rolled back, the rest are not indexed.")


def _cancel_button(job: JobStatus, where: str) -> None:
    st.button("Cancel", key=f"job_cancel_{where}_{job.id}", on_click=_cancel, args=(job.id, job.title),
              help=CANCEL_HELP.get(job.kind, INGEST_CANCEL_HELP))


def refresh_s() -> float:
    """Seconds between redraws of a running job's panel in this session: ``REFRESH_S`` alone, longer when more
    sessions drew a page in the last ``SEEN_FOR_S`` (8 sessions: 4 s each, 2 redraws a second in all)."""
    key = st.session_state.setdefault(SESSION_KEY, uuid.uuid4().hex)
    now = time.monotonic()
    with _seen_lock:
        _seen[key] = now
        for gone in [k for k, seen in _seen.items() if now - seen > SEEN_FOR_S]:
            del _seen[gone]
        sessions = len(_seen)
    return max(REFRESH_S, sessions / REDRAWS_PER_S)


def _sidebar_body() -> None:
    refresh_s()  # a session that only watches its card (no full runs) is still counted
    active = runner().active()
    if _ended({j.id for j in active}):
        st.rerun(scope="app")
    if not active:
        last = runner().jobs(limit=1)
        if last:
            st.caption(f"**Last job:** {summary(last[0])}")
        return
    shown = next((job for job in active if job.state == "running"), active[0])  # one card: the page stays in view
    st.progress(shown.progress, text=progress_text(shown))
    _cancel_button(shown, "sidebar")
    waiting = [job for job in active if job.id != shown.id]
    if waiting:
        with st.expander(f"{len(waiting)} more queued", icon=":material/schedule:"):
            for job in waiting:
                st.caption(f"{md_escape(job.title)} · {waiting_text(shown if shown.state == 'running' else None)}")
                _cancel_button(job, "sidebar")


def sidebar_jobs(where) -> None:
    """The background jobs panel of the shared sidebar (``where``: a sidebar container, placed below the page's own
    sidebar controls): one card for the job running, the queued ones folded into one line."""
    active = runner().active()
    # A full run drew the page with every job's current state: note what runs now, without the rerun that
    # ``_sidebar_body`` makes when a job ends during its own (fragment) reruns; a rerun here would wipe what this
    # run's click just drew (seen: a click on Documents lost when an ingest ended in between).
    _ended({j.id for j in active})
    with where:
        if active:
            st.markdown("**Background jobs**")
            st.fragment(run_every=refresh_s())(_sidebar_body)()
        else:
            _sidebar_body()


def _chunks_cell(file) -> str:
    """A file's own chunks; while it is embedded, how many of them are done (``2/4``)."""
    if file.state == "embedding" and file.chunks:
        return f"{file.embedded}/{file.chunks}"
    return str(file.chunks) if file.chunks else ""


def files_table(job: JobStatus) -> pd.DataFrame:
    """One row per file; a cell with nothing to say is empty (a missing value read "None")."""
    return pd.DataFrame([{"file": f.name, "status": STATE_LABELS.get(f.state, f.state),
                          "chunks": _chunks_cell(f),
                          "seconds": f"{f.seconds:.1f}" if f.seconds else "", "why": f.error or ""} for f in job.files])


def _job_body(job_id: str, where: str = "page", shown_running: bool = False) -> None:
    job = runner().get(job_id)
    if job is None:
        return
    if shown_running and not job.active:
        # The page around this panel was drawn for a running job: only a full run shows its result. The sidebar's
        # card does not always do it: a job that ended before the sidebar was drawn has no card there.
        st.rerun(scope="app")
    if job.active:
        st.progress(job.progress, text=progress_text(job))
        _cancel_button(job, where)
    elif job.state == "done":
        failed = job.counts()["failed"]
        (st.warning if failed else st.success)(summary(job))
    else:
        st.warning(summary(job))
    if job.files:
        st.dataframe(files_table(job), hide_index=True, width="stretch",
                     column_config={"why": st.column_config.TextColumn("why (when failed)", width="large")})


def latest(kinds: tuple[str, ...], active_only: bool = False) -> JobStatus | None:
    """The newest job of one of ``kinds`` in this data directory (any session's), or None."""
    found = runner().active() if active_only else runner().jobs(limit=20)
    return next((j for j in sorted(found, key=lambda j: j.created, reverse=True) if j.kind in kinds), None)


def job_details(job_id: str, where: str = "page", *, shown_running: bool = False) -> None:
    """A job's progress, cancel button and per-file status (ingest jobs); live while the job runs, and once it ends
    the whole page reruns (once) to show the result. ``where`` tells apart two panels of one job on the same page;
    ``shown_running``: the caller drew the page for the job running, so it reruns too when the job ended since."""
    job = runner().get(job_id)
    if job is None:
        return
    if job.active:
        st.fragment(run_every=refresh_s())(_job_body)(job_id, where, True)
    else:
        _job_body(job_id, where, shown_running)
