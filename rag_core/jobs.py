"""Background jobs per data directory: one worker thread runs queued jobs in order; every job's status is a JSON
file in ``data_dir/jobs/`` so any page, session or rerun can show it (no Streamlit here).

Two kinds of work share the queue: ingest jobs (below) and tasks (``submit_task``: evaluation runs and sweeps),
whose progress is a count of steps with a line saying what is being done.

An ingest job indexes its documents in batches of up to ``INGEST_BATCH_FILES``, one commit each; every file keeps
its own status (queued → chunking → embedding → indexed, or failed with the reason) and a cancel takes effect
within one embedding batch: the batch in progress is rolled back by the index's atomic write, the batches before it
stay indexed, and the files not started stay queued → cancelled. Searches meanwhile answer from the committed
index (``Index`` readers use an immutable snapshot).
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
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import TypeAdapter, ValidationError

from rag_core.loaders.document_store import atomic_write_text
from rag_core.types import Document

log = logging.getLogger(__name__)

FileState = Literal["queued", "chunking", "embedding", "indexed", "unchanged", "failed", "cancelled"]
FILE_STATES: tuple[FileState, ...] = get_args(FileState)
JobState = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]
JOB_STATES: tuple[JobState, ...] = get_args(JobState)
ACTIVE_STATES: tuple[JobState, ...] = ("queued", "running")
# What a job does: index documents (ingest, a re-index, removing a replaced index) or run a task (an evaluation or a
# sweep, choosing the guided demo's question, drafting questions, a tuning study).
JobKind = Literal["ingest", "reindex", "cleanup", "evaluation", "sweep", "demo", "draft", "tune"]
JOB_KINDS: tuple[JobKind, ...] = get_args(JobKind)
KEEP_JOBS = 50  # finished job files kept per data directory (older ones are removed)
# Documents an ingest job commits at once: each commit rebuilds the keyword index of the whole collection, so one
# commit per file made a folder of n files cost n² (10,000 files); a cancel rolls back the batch in progress.
INGEST_BATCH_FILES = 100
INGEST_BATCH_BYTES = 8 * 1024 * 1024
_SAVE_EVERY_S = 0.5  # progress writes are throttled; state changes are written at once


def process_started(pid: int) -> str:
    """When process ``pid`` started (field 22 of /proc/<pid>/stat, in clock ticks since boot); "" where unknown.

    A PID alone does not name a process: after a restart PID 1 or the app's own PID is alive but is not the job's.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2:].split()  # the command name, in parentheses, may hold spaces
    return fields[19] if len(fields) > 19 else ""


_OWN_START = process_started(os.getpid())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Cancelled(Exception):
    """Raised inside a job when someone asked to cancel it (its message, if any, says what was kept)."""


@dataclass(slots=True)
class FileStatus:
    doc_id: str
    name: str
    size: int
    state: FileState = "queued"
    error: str = ""
    chunks: int = 0
    seconds: float = 0.0


@dataclass(slots=True)
class JobStatus:
    """What a job is doing, as saved in its status file."""

    id: str
    kind: JobKind
    title: str
    collection: str
    state: JobState = "queued"
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat())  # µs: orders the jobs
    started: str = ""
    finished: str = ""
    message: str = ""
    files: list[FileStatus] = field(default_factory=list)
    current_done: int = 0  # chunks embedded of the file in progress
    current_total: int = 0
    elapsed_s: float = 0.0
    pid: int = field(default_factory=os.getpid)
    pid_started: str = field(default_factory=lambda: _OWN_START)  # with pid: the process that runs the job
    settings: dict[str, Any] = field(default_factory=dict)  # e.g. the chunking a re-index uses
    steps_done: int = 0  # a task's progress (jobs without files): steps done of steps_total, doing step_text
    steps_total: int = 0
    step_text: str = ""
    result: str = ""  # what a finished task made, e.g. the id of the evaluation run it stored

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def total_bytes(self) -> int:
        return sum(max(f.size, 1) for f in self.files)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(FILE_STATES, 0)
        for f in self.files:
            counts[f.state] += 1
        return counts

    @property
    def progress(self) -> float:
        """Share of the work done (by document size; the file in progress by its embedded chunks; a task by its
        steps)."""
        if not self.files and self.steps_total:
            return min(self.steps_done / self.steps_total, 1.0)
        total = self.total_bytes
        if not total:
            return 1.0 if not self.active else 0.0
        done = 0.0
        for f in self.files:
            if f.state in ("indexed", "unchanged", "failed", "cancelled"):
                done += max(f.size, 1)
            elif f.state == "embedding" and self.current_total:
                done += max(f.size, 1) * min(self.current_done / self.current_total, 1.0)
        return min(done / total, 1.0)

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far; None until there is a pace to go by."""
        progress = self.progress
        if self.state != "running" or progress <= 0.02 or self.elapsed_s < 1.0:
            return None
        return self.elapsed_s * (1 - progress) / progress

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobStatus:
        files = [FileStatus(**f) for f in data.get("files", [])]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "files"}
        return cls(**known, files=files)


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


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "estimating…"
    if seconds < 60:
        return f"about {max(1, round(seconds))} s left"
    return f"about {seconds / 60:.0f} min left"


@dataclass(slots=True)
class _Work:
    status: JobStatus
    run: Callable[[_Work], None]
    cancel: threading.Event = field(default_factory=threading.Event)
    saved_at: float = 0.0
    started_at: float = 0.0
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
        self._mark_interrupted()

    # --- status files -------------------------------------------------------------------------------
    def _path(self, job_id: str) -> Path:
        if not job_id.isalnum():
            raise ValueError(f"not a job id: {job_id!r}")
        return self.root / f"{job_id}.json"

    def _save(self, work: _Work, force: bool = True) -> None:
        now = time.monotonic()
        if not force and now - work.saved_at < _SAVE_EVERY_S:
            return
        if work.started_at:
            work.status.elapsed_s = round(now - work.started_at, 2)
        work.saved_at = now
        atomic_write_text(self._path(work.status.id), json.dumps(work.status.to_dict(), ensure_ascii=False))

    def _read(self, path: Path) -> JobStatus | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return _STATUS.validate_python(data)  # a wrong type ("created": 5) is refused here, not on a page
        except (OSError, ValueError, TypeError, ValidationError) as e:
            log.warning("unreadable job status %s (%s); ignoring it", path, e)
            return None

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
                return JobStatus.from_dict(work.status.to_dict())  # a copy: the worker keeps changing its own
        path = self._path(job_id)
        return self._read(path) if path.exists() else None

    def jobs(self, limit: int = 20) -> list[JobStatus]:
        """Newest first: this process's jobs plus the status files of earlier ones."""
        paths = sorted(self.root.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)[:limit]
        found = {s.id: s for s in (self._read(p) for p in paths) if s is not None}
        with self._mutex:
            for job_id in list(found):
                if job_id in self._work:
                    found[job_id] = JobStatus.from_dict(self._work[job_id].status.to_dict())
        return sorted(found.values(), key=lambda s: (s.created, s.id), reverse=True)[:limit]

    def active(self) -> list[JobStatus]:
        with self._mutex:
            return [JobStatus.from_dict(w.status.to_dict()) for w in self._work.values() if w.status.active]

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
        work = _Work(status, lambda w: _run_ingest(self, w, index, docs), finish=finish)
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


def ingest_batches(docs: Sequence[Document], max_files: int = INGEST_BATCH_FILES,
                   max_bytes: int = INGEST_BATCH_BYTES) -> list[list[Document]]:
    """``docs`` in order, cut into the batches an ingest job commits one at a time: at most ``max_files`` documents
    and ``max_bytes`` bytes each (a bigger document alone), and never two of one name in a batch, so a later version
    still replaces an earlier one as it does when they are indexed one by one."""
    batches: list[list[Document]] = []
    batch: list[Document] = []
    names: set[str] = set()
    size = 0
    for doc in docs:
        if batch and (len(batch) >= max_files or size + doc.size > max_bytes or doc.name in names):
            batches.append(batch)
            batch, names, size = [], set(), 0
        batch.append(doc)
        names.add(doc.name)
        size += doc.size
    if batch:
        batches.append(batch)
    return batches


def _chunk_counts(index, batch: list[Document], report) -> dict[str, int]:
    """Chunks indexed per document of ``batch`` (the report sums them over the batch)."""
    if len(batch) == 1:
        return {batch[0].id: sum(report.chunks.values())}
    try:
        rows = index.documents()
    except Exception:  # noqa: BLE001 - the counts are a detail of the status; the documents are indexed
        return {}
    return {row["doc_id"]: sum(row.get("chunks", {}).values()) for row in rows}


def _ingest_batch(runner: JobRunner, work: _Work, index, batch: list[Document], files: list[FileStatus]) -> None:
    """Index one batch in one commit, keeping each file's status; raises ``Cancelled``. When the batch fails as a
    whole, or some of its files fail, those files are indexed again one by one, so one file cannot fail the others."""
    status = work.status
    for file in files:
        file.state = "chunking"
    status.current_done = status.current_total = 0
    runner._save(work)
    started = time.perf_counter()

    def progress(done: int, total: int, label: str = "") -> None:
        if work.cancel.is_set():
            raise Cancelled
        if files[0].state != "embedding":
            for file in files:
                file.state = "embedding"
            status.current_total = total
            runner._save(work)
        status.current_done, status.current_total = done, total
        runner._save(work, force=False)

    try:
        report = index.ingest(batch, progress=progress)
    except Cancelled:
        for file in files:
            file.state = "cancelled"
        raise
    except Exception as e:  # noqa: BLE001 - one file's failure is its status; the others go on
        if len(batch) > 1:
            log.warning("indexing a batch of %d files failed (%s); indexing them one by one", len(batch), e)
            for doc, file in zip(batch, files, strict=True):
                if work.cancel.is_set():
                    raise Cancelled from None
                _ingest_batch(runner, work, index, [doc], [file])
            return
        log.warning("indexing %s failed: %s", batch[0].name, e)
        files[0].state, files[0].error = "failed", str(e) or type(e).__name__
        runner._save(work)
        return
    seconds = round((time.perf_counter() - started) / len(batch), 2)
    counts = _chunk_counts(index, batch, report)
    for doc, file in zip(batch, files, strict=True):
        file.seconds = seconds
        if doc.name in report.errors:
            if len(batch) > 1:  # e.g. over the chunks of one ingest only together with the others: alone again
                if work.cancel.is_set():
                    raise Cancelled
                _ingest_batch(runner, work, index, [doc], [file])
                continue
            file.state, file.error = "failed", report.errors[doc.name]
        elif doc.id in report.unchanged:
            file.state = "unchanged"
        else:
            file.state, file.chunks = "indexed", counts.get(doc.id, 0)
    runner._save(work)


def _run_ingest(runner: JobRunner, work: _Work, index, docs: Sequence[Document]) -> None:
    """Index the job's documents in batches (``ingest_batches``), one commit each, keeping each file's status."""
    status = work.status
    start = 0
    for batch in ingest_batches(docs):
        if work.cancel.is_set():
            break
        files = status.files[start : start + len(batch)]
        start += len(batch)
        try:
            _ingest_batch(runner, work, index, batch, files)
        except Cancelled:
            break
    status.current_done = status.current_total = 0
    if work.cancel.is_set() and any(f.state in ("queued", "chunking", "embedding", "cancelled") for f in status.files):
        for file in status.files:
            if file.state in ("queued", "chunking", "embedding"):
                file.state = "cancelled"
        raise Cancelled
    counts = status.counts()
    status.message = (f"{counts['indexed']} indexed, {counts['unchanged']} already indexed, "
                      f"{counts['failed']} failed")


_runners: dict[Path, JobRunner] = {}
_runners_lock = threading.Lock()


def runner_for(data_dir: str | os.PathLike) -> JobRunner:
    """The process's one runner for ``data_dir`` (its queue and worker thread)."""
    key = Path(data_dir).resolve()
    with _runners_lock:
        runner = _runners.get(key)
        if runner is None or not runner.root.exists():
            runner = _runners[key] = JobRunner(key)
        return runner
