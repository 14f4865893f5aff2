"""What a background job is and says: its kind and state, each file's status, progress and ETA (as saved in its
status file), and ``Cancelled``, how a job stops on a cancel (``rag_core.serving.jobs`` runs the jobs and
re-exports all of this)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, get_args

from rag_core.serving.throughput import seconds_left

# "chunked": its chunks wait for the embedder (busy with the files before it); "embedded": its vectors are made and
# wait for the batch's commit.
FileState = Literal["queued", "chunking", "chunked", "embedding", "embedded", "indexed", "unchanged", "failed",
                    "cancelled"]
FILE_STATES: tuple[FileState, ...] = get_args(FileState)
JobState = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]
JOB_STATES: tuple[JobState, ...] = get_args(JobState)
ACTIVE_STATES: tuple[JobState, ...] = ("queued", "running")
# What a job does: index documents (ingest, a re-index, removing a replaced index) or run a task (an evaluation or a
# sweep, choosing the guided demo's question, drafting questions, a tuning study).
JobKind = Literal["ingest", "reindex", "cleanup", "evaluation", "sweep", "demo", "draft", "tune"]
JOB_KINDS: tuple[JobKind, ...] = get_args(JobKind)
EMBEDDED_SHARE = 0.95  # of a file's progress, the part done when its chunks are embedded (the commit follows)


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


@dataclass(slots=True)
class FileStatus:
    doc_id: str
    name: str
    size: int
    state: FileState = "queued"
    error: str = ""
    chunks: int = 0  # its own chunks (known once chunked)
    seconds: float = 0.0  # the time it spent chunking and embedding
    embedded: int = 0  # of its chunks, those embedded so far


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
    current_done: int = 0  # texts embedded of the batch in progress (all its files; each file's own: FileStatus)
    current_total: int = 0
    elapsed_s: float = 0.0
    pid: int = field(default_factory=os.getpid)
    pid_started: str = field(default_factory=lambda: _OWN_START)  # with pid: the process that runs the job
    settings: dict[str, Any] = field(default_factory=dict)  # e.g. the chunking a re-index uses
    steps_done: int = 0  # a task's progress (jobs without files): steps done of steps_total, doing step_text
    steps_total: int = 0
    step_text: str = ""
    result: str = ""  # what a finished task made, e.g. the id of the evaluation run it stored
    pace_from_s: float = -1.0  # elapsed_s its pace is measured from (``rag_core.serving.throughput.pace_anchor``)
    pace_from: float = 0.0  # its progress then

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
        """Share of the work done: by document size, the batch being embedded by its texts embedded (the measure
        of embedding work: a file's own chunk count is not, its sections and document need no texts); a task by
        its steps."""
        if not self.files and self.steps_total:
            return min(self.steps_done / self.steps_total, 1.0)
        total = self.total_bytes
        if not total:
            return 1.0 if not self.active else 0.0
        embedded = min(self.current_done / self.current_total, 1.0) if self.current_total else 0.0
        done = 0.0
        for f in self.files:
            if f.state in ("indexed", "unchanged", "failed", "cancelled"):
                done += max(f.size, 1)
            elif f.state in ("chunked", "embedding", "embedded"):  # the commit of the batch is the rest
                done += max(f.size, 1) * EMBEDDED_SHARE * embedded
        return min(done / total, 1.0)

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace measured since the job first moved; None until there is a pace to go by."""
        if self.state != "running":
            return None
        return seconds_left(self.progress, self.elapsed_s, self.pace_from, self.pace_from_s)

    def current_file(self) -> FileStatus | None:
        """The file being worked on: embedded now, else chunked now (None between files or in a task)."""
        return (next((f for f in self.files if f.state == "embedding"), None)
                or next((f for f in self.files if f.state == "chunking"), None))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobStatus:
        files = [FileStatus(**f) for f in data.get("files", [])]
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "files"}
        return cls(**known, files=files)


class Cancelled(Exception):
    """Raised inside a job when someone asked to cancel it (its message, if any, says what was kept)."""


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "estimating…"
    if seconds < 60:
        return f"about {max(1, round(seconds))} s left"
    return f"about {seconds / 60:.0f} min left"
