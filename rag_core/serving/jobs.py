"""Background jobs per data directory: one worker thread runs queued jobs in order; every job's status is a JSON
file in ``data_dir/jobs/`` so any page, session or rerun can show it (no Streamlit here).

Two kinds of work share the queue: ingest jobs (``submit_ingest``; the job itself is
``rag_core.serving.ingest_job``) and tasks (``submit_task``: evaluation runs and sweeps), whose progress is a
count of steps with a line saying what is being done.
A job left "running" by a process that died is shown as interrupted when the next process opens the runner.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from rag_core.files import atomic_write_text
from rag_core.serving import ingest_job
from rag_core.serving.jobstatus import (
    ACTIVE_STATES,
    FILE_STATES,
    JOB_KINDS,
    JOB_STATES,
    Cancelled,
    FileState,
    FileStatus,
    JobKind,
    JobState,
    JobStatus,
    format_eta,
    process_started,
)
from rag_core.serving.throughput import pace_anchor
from rag_core.types import Document

log = logging.getLogger(__name__)
__all__ = ["ACTIVE_STATES", "FILE_STATES", "JOB_KINDS", "JOB_STATES", "Cancelled", "FileState", "FileStatus",
           "JobKind", "JobRunner", "JobState", "JobStatus", "TaskHandle", "format_eta", "process_started",
           "runner_for"]

KEEP_JOBS = 50  # finished job files kept per data directory (older ones are removed)
_SAVE_EVERY_S = 0.5  # progress writes are throttled (a held-back report is written one interval later); state
# changes are written at once


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


_STATUS = TypeAdapter(JobStatus)


def _ran_elsewhere(status: JobStatus) -> bool:
    """Whether ``status`` was left active by a process that is gone: dead, or its PID now names another process."""
    if status.pid_started:
        return process_started(status.pid) != status.pid_started
    if status.pid == os.getpid():  # a file written before start times were kept: the PID is all there is
        return False
    try:
        os.kill(status.pid, 0)
        return status.pid == 1  # PID 1 is init (or the container's entry point), never a job of ours
    except ProcessLookupError:
        return True
    except OSError:
        return False


@dataclass(slots=True)
class _Work:
    status: JobStatus
    run: Callable[[_Work], None]
    cancel: threading.Event = field(default_factory=threading.Event)
    saved_at: float = 0.0
    started_at: float = 0.0
    pace: deque[tuple[float, float]] = field(default_factory=deque)  # (elapsed_s, progress) since it first moved
    flush: threading.Timer | None = None  # writes a report the throttle held back, if no later save does
    # Called in the worker with the job's final state ("done", "cancelled", "failed") before that state is saved;
    # returns the closing message (None: keep it). Raising makes the job failed (e.g. a re-index's swap).
    finish: Callable[[JobState, JobStatus], str | None] | None = None


class JobRunner:
    """One queue per data directory: jobs run one after another on a daemon thread; status files persist."""

    def __init__(self, data_dir: str | os.PathLike):
        self.root = Path(data_dir) / "jobs"
        self.root.mkdir(parents=True, exist_ok=True)
        self._queue: queue.Queue[_Work] = queue.Queue()
        self._work: dict[str, _Work] = {}
        self._mutex = threading.Lock()
        self._thread: threading.Thread | None = None
        self._shared: dict[Any, tuple[Any, JobStatus]] = {}  # status copies shared by readers (``_shared_copy``)
        self._saving = threading.RLock()  # the worker and a held-back report's timer write one file in turn
        self._mark_interrupted()

    # --- status files -------------------------------------------------------------------------------
    def _path(self, job_id: str) -> Path:
        if not job_id.isalnum():
            raise ValueError(f"not a job id: {job_id!r}")
        return self.root / f"{job_id}.json"

    def _save(self, work: _Work, force: bool = True) -> None:
        with self._saving:
            now = time.monotonic()
            status = work.status
            if not force and now - work.saved_at < _SAVE_EVERY_S:
                if work.started_at and not work.pace and status.state == "running" and status.progress > 0:
                    work.pace.append((round(now - work.started_at, 2), status.progress))  # the moment it first moved
                    status.pace_from_s, status.pace_from = work.pace[0]
                if work.flush is None:  # a task may report nothing more for minutes (a slow model): write it anyway
                    work.flush = threading.Timer(work.saved_at + _SAVE_EVERY_S - now, self._flush, (work,))
                    work.flush.daemon = True
                    work.flush.start()
                return
            if work.flush is not None:
                work.flush.cancel()
                work.flush = None
            if work.started_at and status.state == "running" and (work.pace or status.progress > 0):
                elapsed = round(now - work.started_at, 2)
                work.pace.append((elapsed, status.progress))
                anchor = pace_anchor(work.pace, elapsed)
                while work.pace and work.pace[0][0] < anchor[0]:  # points before the window are not needed again
                    work.pace.popleft()
                status.pace_from_s, status.pace_from = anchor
            if work.started_at:
                status.elapsed_s = round(now - work.started_at, 2)
            atomic_write_text(self._path(work.status.id), json.dumps(work.status.to_dict(), ensure_ascii=False))
            # Only now: readers copy the status once per ``saved_at`` (``_shared_copy``), so a copy taken while the
            # file was still being written would show a step the file did not hold yet (another process reads it).
            work.saved_at = now

    def _flush(self, work: _Work) -> None:
        """The timer of a held-back report: write it unless a later save already did (or the job ended)."""
        with self._saving:
            if work.flush is None or work.flush is not threading.current_thread():
                return
            work.flush = None
            if work.status.state == "running":
                self._save(work)

    def _read(self, path: Path) -> JobStatus | None:
        try:
            stat = path.stat()
            key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
            cached = self._shared.get(path)
            if cached is not None and cached[0] == key:  # unchanged since it was last parsed
                return cached[1]
            data = json.loads(path.read_text(encoding="utf-8"))
            status = _STATUS.validate_python(data)  # a wrong type ("created": 5) is refused here, not on a page
        except (OSError, ValueError, TypeError, ValidationError) as e:
            log.warning("unreadable job status %s (%s); ignoring it", path, e)
            return None
        self._remember(path, key, status)
        return status

    def _shared_copy(self, work: _Work) -> JobStatus:
        """A running job's status as last saved (at most every ``_SAVE_EVERY_S``), copied once per save and
        shared by every reader: many sessions polling a 300-file ingest each second copy it once, not once each.
        Readers must not change it. Called with ``_mutex`` held."""
        key = (work.saved_at, work.status.state)
        cached = self._shared.get(work.status.id)
        if cached is not None and cached[0] == key:
            return cached[1]
        status = JobStatus.from_dict(work.status.to_dict())
        self._remember(work.status.id, key, status)
        return status

    def _remember(self, name: Any, key: Any, status: JobStatus) -> None:
        if len(self._shared) > 4 * KEEP_JOBS:  # bounded: files pruned and jobs ended since are forgotten
            self._shared.clear()
        self._shared[name] = (key, status)

    def _mark_interrupted(self) -> None:
        """Jobs another (dead) process left queued or running can never finish: say so."""
        for path in self.root.glob("*.json"):
            status = self._read(path)
            if status is None or not status.active or not _ran_elsewhere(status):
                continue
            status.state, status.finished = "interrupted", _now()
            status.message = "The app stopped while this job ran; the index kept its last complete state. Run it again."
            for f in status.files:
                if f.state not in ("indexed", "unchanged", "failed"):
                    f.state = "cancelled"
            atomic_write_text(path, json.dumps(status.to_dict(), ensure_ascii=False))

    # --- reading ------------------------------------------------------------------------------------
    def get(self, job_id: str) -> JobStatus | None:
        with self._mutex:
            work = self._work.get(job_id)
            if work is not None:
                return self._shared_copy(work)  # a copy: the worker keeps changing its own
        path = self._path(job_id)
        return self._read(path) if path.exists() else None

    def jobs(self, limit: int = 20) -> list[JobStatus]:
        """Newest first: this process's jobs plus the status files of earlier ones."""
        paths = sorted(self.root.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)[:limit]
        found = {s.id: s for s in (self._read(p) for p in paths) if s is not None}
        with self._mutex:
            for job_id in list(found):
                if job_id in self._work:
                    found[job_id] = self._shared_copy(self._work[job_id])
        return sorted(found.values(), key=lambda s: (s.created, s.id), reverse=True)[:limit]

    def active(self) -> list[JobStatus]:
        with self._mutex:
            return [self._shared_copy(w) for w in self._work.values() if w.status.active]

    # --- control ------------------------------------------------------------------------------------
    def cancel(self, job_id: str) -> bool:
        """Ask a queued or running job to stop; False when it is not running in this process."""
        with self._mutex:
            work = self._work.get(job_id)
        if work is None or not work.status.active:
            return False
        work.cancel.set()
        return True

    def wait(self, job_id: str, timeout: float = 60.0) -> JobStatus:
        """Block until the job finished (tests and the command line); raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = self.get(job_id)
            if status is not None and not status.active:
                return status
            time.sleep(0.02)
        raise TimeoutError(f"job {job_id} still running after {timeout:.0f} s")

    def submit_ingest(self, index, docs: Sequence[Document], *, title: str, kind: JobKind = "ingest",
                      settings: dict[str, Any] | None = None,
                      finish: Callable[[JobState, JobStatus], str | None] | None = None) -> JobStatus:
        """Queue indexing ``docs`` into ``index``; returns the job's first status at once.

        ``finish(state, status)`` runs in the worker once the documents are done, cancelled or failed, before the
        job says so (a re-index swaps the serving index there); it returns the closing message or None.
        """
        docs = list(docs)  # (no isinstance filter: a module reloaded by Streamlit's file watcher has a new class)
        missing = [type(d).__name__ for d in docs if not all(hasattr(d, a) for a in ("id", "name", "size"))]
        if missing:
            raise ValueError(f"an ingest job takes documents, got {', '.join(sorted(set(missing)))}")
        status = JobStatus(id=uuid.uuid4().hex[:12], kind=kind, title=title, collection=index.name,
                           files=[FileStatus(d.id, d.name, d.size) for d in docs], settings=dict(settings or {}))
        work = _Work(status, lambda w: ingest_job.run_ingest(self, w, index, docs), finish=finish)
        return self._submit(work)

    def submit_task(self, task: Callable[[TaskHandle], str], *, kind: JobKind, title: str, collection: str = "",
                    settings: dict[str, Any] | None = None) -> JobStatus:
        """Queue ``task`` (it reports through its ``TaskHandle`` and returns the job's closing message; it raises
        ``Cancelled`` when it stopped on a cancel); returns the job's first status at once."""
        status = JobStatus(id=uuid.uuid4().hex[:12], kind=kind, title=title, collection=collection,
                           settings=dict(settings or {}))

        def run(work: _Work) -> None:
            work.status.message = task(TaskHandle(self, work)) or ""

        return self._submit(_Work(status, run))

    def _submit(self, work: _Work) -> JobStatus:
        with self._mutex:
            self._work[work.status.id] = work
            self._save(work)
            submitted = JobStatus.from_dict(work.status.to_dict())
            self._queue.put(work)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=f"jobs-{self.root.parent.name}",
                                                daemon=True)
                self._thread.start()
        return submitted

    def _loop(self) -> None:
        lower_priority()
        while True:
            try:
                work = self._queue.get(timeout=5.0)
            except queue.Empty:
                with self._mutex:
                    if self._queue.empty():
                        self._thread = None
                        return
                continue
            self._execute(work)
            self._prune()

    def _execute(self, work: _Work) -> None:
        status = work.status
        state: JobState
        if work.cancel.is_set():
            state, message = "cancelled", "Cancelled before it started."
            for f in status.files:
                f.state = "cancelled"
        else:
            status.state, status.started = "running", _now()
            work.started_at = time.monotonic()
            self._save(work)
            try:
                work.run(work)
                state, message = "done", status.message
            except Cancelled as e:  # a task may say what it kept
                state, message = "cancelled", str(e) or "Cancelled; the index keeps what was finished before."
            except Exception as e:  # noqa: BLE001 - the job records why; the app keeps running
                log.exception("job %s failed", status.id)
                state, message = "failed", f"{type(e).__name__}: {e}"
        if work.finish is not None:
            status.message = message  # what happened, for the finish to word its closing message
            try:
                message = work.finish(state, status) or message
            except Exception as e:  # noqa: BLE001 - the job records why; the app keeps running
                log.exception("finishing job %s failed", status.id)
                state, message = "failed", f"{type(e).__name__}: {e}"
        with self._mutex:  # finished in one step: readers see the final status, then the file
            status.state, status.message, status.finished = state, message, _now()
            self._save(work)
            self._work.pop(status.id, None)

    def _prune(self) -> None:
        paths = sorted(self.root.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for path in paths[KEEP_JOBS:]:
            status = self._read(path)
            if status is None or not status.active:
                path.unlink(missing_ok=True)


class TaskHandle:
    """What a task sees of its job: report progress, ask whether someone cancelled, keep a result."""

    def __init__(self, runner: JobRunner, work: _Work):
        self._runner, self._work = runner, work

    def progress(self, done: int, total: int, label: str = "") -> None:
        status = self._work.status
        status.steps_done, status.steps_total, status.step_text = int(done), int(total), label[:300]
        self._runner._save(self._work, force=False)

    def cancelled(self) -> bool:
        return self._work.cancel.is_set()

    def set_result(self, result: str) -> None:
        self._work.status.result = result
        self._runner._save(self._work)


_runners: dict[Path, JobRunner] = {}
_runners_lock = threading.Lock()


WORKER_NICENESS = 10  # added to the job thread's nice value: searches of the open sessions go first


def lower_priority(increment: int = WORKER_NICENESS) -> None:
    """Run the calling thread (and the threads it starts: ONNX, Chroma) at a lower CPU priority. On Linux each
    thread has its own nice value; elsewhere this lowers the whole process, which is left as it is."""
    if not hasattr(os, "setpriority") or not hasattr(threading, "get_native_id"):
        return
    try:
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        if tid != os.getpid():  # a thread of its own: lowering it leaves the app's request threads as they are
            os.setpriority(os.PRIO_PROCESS, tid, min(19, current + increment))
    except OSError as e:  # not permitted (a sandbox): jobs run at normal priority
        log.info("could not lower the job thread's priority (%s)", e)


def runner_for(data_dir: str | os.PathLike) -> JobRunner:
    """The process's one runner for ``data_dir`` (its queue and worker thread)."""
    key = Path(data_dir).resolve()
    with _runners_lock:
        runner = _runners.get(key)
        if runner is None or not runner.root.exists():
            runner = _runners[key] = JobRunner(key)
        return runner
