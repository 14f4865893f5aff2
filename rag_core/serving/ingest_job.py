"""The ingest job: a job's documents indexed in batches of up to ``INGEST_BATCH_FILES``, one commit each.

Every file keeps its own status (queued → chunking → embedding → indexed, or failed with the reason) and a cancel
takes effect within one embedding batch: the batch in progress is rolled back by the index's atomic write, the
batches before it stay indexed, and the files not started stay queued → cancelled. Searches meanwhile answer from
the committed index (``Index`` readers use an immutable snapshot). ``JobRunner.submit_ingest``
(``rag_core.serving.jobs``) queues it; ``run_ingest`` runs in the job's worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_core.index.progress import FileEvent
from rag_core.serving.jobstatus import Cancelled, FileStatus
from rag_core.serving.throughput import record as record_throughput
from rag_core.types import Document

if TYPE_CHECKING:
    from rag_core.serving.jobs import JobRunner, _Work

log = logging.getLogger(__name__)

# Documents an ingest job commits at once: each commit rebuilds the keyword index of the whole collection, so one
# commit per file made a folder of n files cost n² (10,000 files); a cancel rolls back the batch in progress.
INGEST_BATCH_FILES = 100
INGEST_BATCH_BYTES = 8 * 1024 * 1024


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


class _FileClock:
    """Each file's own state and seconds from the index's per-file events (``rag_core.index.progress``): a file's
    seconds are the time it spent chunking and embedding, measured as it happens."""

    def __init__(self, runner: JobRunner, work: _Work, files: list[FileStatus]):
        self.runner, self.work = runner, work
        self.by_id = {f.doc_id: f for f in files}
        self.since: dict[str, float] = {}
        self.heard = False  # whether the index sent any event (a stand-in index may send none)

    def __call__(self, event: FileEvent) -> None:
        if self.work.cancel.is_set():
            raise Cancelled
        file = self.by_id.get(event.doc_id)
        if file is None:
            return
        self.heard = True
        if event.state != file.state:
            self.stop(file)
            file.state = event.state
            if event.state in ("chunking", "embedding"):
                self.since[file.doc_id] = time.perf_counter()
        if event.state == "failed":
            file.error = event.error
        if event.total:
            file.chunks = event.total
        if event.state in ("embedding", "embedded"):
            file.embedded = event.done
        self.runner._save(self.work, force=False)

    def stop(self, file: FileStatus) -> None:
        started = self.since.pop(file.doc_id, None)
        if started is not None:
            file.seconds = round(file.seconds + time.perf_counter() - started, 2)

    def stop_all(self) -> None:
        for doc_id in list(self.since):
            self.stop(self.by_id[doc_id])


def _ingest_batch(runner: JobRunner, work: _Work, index, batch: list[Document], files: list[FileStatus]) -> None:
    """Index one batch in one commit, each file's status following the index's events; raises ``Cancelled``. When
    the batch fails as a whole, or some of its files fail, those files are indexed again one by one, so one file
    cannot fail the others."""
    status = work.status
    files[0].state = "chunking"  # the index starts with it (its first event confirms it or says "unchanged")
    status.current_done = status.current_total = 0
    runner._save(work)
    started = time.perf_counter()
    clock = _FileClock(runner, work, files)

    def progress(done: int, total: int, label: str = "") -> None:
        if work.cancel.is_set():
            raise Cancelled
        if not clock.heard and files[0].state != "embedding":  # an index without per-file events: the batch
            for file in files:
                file.state = "embedding"
            runner._save(work)
        status.current_done, status.current_total = done, total  # the batch's texts embedded (all its files)
        runner._save(work, force=False)

    try:
        report = index.ingest(batch, progress=progress, on_file=clock)
    except Cancelled:
        clock.stop_all()
        for file in files:
            file.state = "cancelled"
        raise
    except Exception as e:  # noqa: BLE001 - one file's failure is its status; the others go on
        clock.stop_all()
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
    clock.stop_all()
    average = round((time.perf_counter() - started) / len(batch), 2)
    counts = _chunk_counts(index, batch, report)
    for doc, file in zip(batch, files, strict=True):
        if not clock.heard:
            file.seconds = average
        if doc.name in report.errors:
            if len(batch) > 1:  # e.g. over the chunks of one ingest only together with the others: alone again
                if work.cancel.is_set():
                    raise Cancelled
                file.state, file.error = "queued", ""
                _ingest_batch(runner, work, index, [doc], [file])
                continue
            file.state, file.error = "failed", report.errors[doc.name]
        elif doc.id in report.unchanged:
            file.state = "unchanged"
        else:
            file.state, file.chunks = "indexed", counts.get(doc.id, file.chunks)
            file.embedded = file.chunks
    runner._save(work)


def run_ingest(runner: JobRunner, work: _Work, index, docs: Sequence[Document]) -> None:
    """Index the job's documents in batches (``ingest_batches``), one commit each, keeping each file's status."""
    status = work.status
    start, started = 0, time.perf_counter()
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
    unfinished = ("queued", "chunking", "chunked", "embedding", "embedded")
    if work.cancel.is_set() and any(f.state in (*unfinished, "cancelled") for f in status.files):
        for file in status.files:
            if file.state in unfinished:
                file.state = "cancelled"
        raise Cancelled
    _record_throughput(runner, index, status.files, time.perf_counter() - started)
    counts = status.counts()
    status.message = (f"{counts['indexed']} indexed, {counts['unchanged']} already indexed, "
                      f"{counts['failed']} failed")


MIN_RECORDED_BYTES = 200 * 1024  # smaller jobs are mostly fixed costs (a model load): not this machine's pace


def _record_throughput(runner: JobRunner, index, files: list[FileStatus], seconds: float) -> None:
    """Keep this job's pace (bytes indexed per second, chunks per byte) for the cost warnings of later ingests."""
    indexed = [f for f in files if f.state == "indexed"]
    nbytes = sum(f.size for f in indexed)
    if nbytes < MIN_RECORDED_BYTES:
        return
    try:
        record_throughput(runner.root.parent, str(index.embedder.id), nbytes, seconds, sum(f.chunks for f in indexed))
    except (OSError, AttributeError) as e:  # the figure is a help for later warnings; the job is done
        log.warning("could not record the ingest throughput: %s", e)
