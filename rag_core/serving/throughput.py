"""How long work takes on this machine: ETAs from a job's measured pace, and the cost of an ingest before it runs.

An ETA comes from what this job measured, never a prior: its pace is taken over a recent window since it first
reported progress (``pace_anchor``: a model load or an index opening before or between steps stops counting once
past), and there is no ETA until that pace has been measured for a while.

Before an ingest is queued its cost is estimated from the throughput this machine measured on earlier ingests with
the same embedder (kept in ``data_dir/throughput.json``, updated as each ingest job ends): source bytes per second
and chunks per byte. Without one, ``measure`` times the embedder on a sample of the documents.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from rag_core.chunking import chunk_document
from rag_core.files import atomic_write_text
from rag_core.stores.contextual import plan_vectors
from rag_core.types import Document

log = logging.getLogger(__name__)

MIN_MEASURED_S = 1.0  # seconds of measured work before an ETA is given
MIN_WINDOW_S = 20.0  # the pace is measured over at least the last 20 s, and over the later half of the job
LONG_INGEST_S = 120.0  # an ingest estimated longer than this is confirmed before it is queued
SAMPLE_BYTES = 16 * 1024  # what ``measure`` chunks and embeds of the documents to time this machine
MIN_CHECKED_BYTES = 64 * 1024  # smaller ingests are not measured first (the measurement would cost more)
_FILE = "throughput.json"


def seconds_left(progress: float, elapsed_s: float, start_progress: float, start_s: float,
                 min_measured_s: float = MIN_MEASURED_S) -> float | None:
    """Seconds until ``progress`` (0..1) reaches 1 at the pace measured since ``start_s`` (when progress was
    ``start_progress``); None while there is no measurement (``start_s`` < 0, under ``min_measured_s`` measured,
    or no progress since)."""
    if start_s < 0:
        return None
    measured_s, measured = elapsed_s - start_s, progress - start_progress
    if measured_s < min_measured_s or measured <= 0:
        return None
    return max(0.0, (1.0 - progress) * measured_s / measured)


def pace_anchor(points: Sequence[tuple[float, float]], now_s: float,
                min_window_s: float = MIN_WINDOW_S) -> tuple[float, float] | None:
    """Where a job's pace is measured from: of its ``(elapsed_s, progress)`` points since it first moved (oldest
    first), the oldest within the window: the last ``min_window_s`` seconds or the later half of the time since it
    first moved, whichever is longer. A stall long past (a model loading after cached texts, an index opening)
    drops out; a recent slowdown shows. None without points."""
    if not points:
        return None
    window = max(min_window_s, (now_s - points[0][0]) / 2)
    return next((point for point in points if point[0] >= now_s - window), points[-1])


@dataclass(slots=True)
class Throughput:
    """Indexing speed of this machine with one embedder: source bytes per second (chunking, embedding and
    writing) and chunks made per source byte; ``source`` says where the figure comes from."""

    bytes_per_s: float
    chunks_per_byte: float
    source: str
    bytes_measured: int = 0


@dataclass(slots=True, frozen=True)
class IngestEstimate:
    chunks: int
    seconds: float
    source: str

    @property
    def long(self) -> bool:
        return self.seconds > LONG_INGEST_S


_RECORD = TypeAdapter(Throughput)


def estimate(total_bytes: int, throughput: Throughput) -> IngestEstimate:
    """What indexing ``total_bytes`` of source makes and takes at ``throughput``."""
    chunks = round(total_bytes * throughput.chunks_per_byte)
    seconds = total_bytes / throughput.bytes_per_s if throughput.bytes_per_s > 0 else 0.0
    return IngestEstimate(chunks, seconds, throughput.source)


def combine(old: Throughput | None, new_bytes: int, new_seconds: float, new_chunks: int,
            keep_bytes: int = 64 * 1024 * 1024) -> Throughput | None:
    """``old`` updated with one more ingest measurement, weighted by bytes (the last ``keep_bytes`` count), so
    one tiny file does not swing the figure and a changed machine shows within a few ingests."""
    if new_bytes <= 0 or new_seconds <= 0:
        return old
    if old is None or old.bytes_measured <= 0:
        return Throughput(new_bytes / new_seconds, new_chunks / new_bytes, "measured on this machine", new_bytes)
    weight_old = min(old.bytes_measured, max(keep_bytes - new_bytes, 0))
    total = weight_old + new_bytes
    old_seconds = weight_old / old.bytes_per_s if old.bytes_per_s > 0 else 0.0
    chunks = old.chunks_per_byte * weight_old + new_chunks
    return Throughput(total / (old_seconds + new_seconds), chunks / total, "measured on this machine", total)


def load(data_dir: str | Path, embedder_id: str) -> Throughput | None:
    """The throughput recorded for ``embedder_id`` in ``data_dir``; None when there is none (or it is unreadable)."""
    path = Path(data_dir) / _FILE
    try:
        found = json.loads(path.read_text(encoding="utf-8")).get(embedder_id)
        if found is None:
            return None
        throughput = _RECORD.validate_python(found)
        if throughput.bytes_per_s <= 0 or throughput.chunks_per_byte < 0:
            raise ValueError(f"not a throughput: {found!r}")
        return throughput
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError, ValidationError) as e:
        log.warning("unreadable throughput record %s (%s); measuring again", path, e)
        return None


def record(data_dir: str | Path, embedder_id: str, nbytes: int, seconds: float, chunks: int) -> None:
    """Add one ingest's measurement (``nbytes`` of source indexed in ``seconds``, making ``chunks``)."""
    updated = combine(load(data_dir, embedder_id), nbytes, seconds, chunks)
    if updated is not None:
        _save(data_dir, embedder_id, updated)


def measure(index, docs: Sequence[Document], sample_bytes: int = SAMPLE_BYTES) -> Throughput | None:
    """Time this machine on a sample of ``docs``: chunk up to ``sample_bytes`` of their text with ``index``'s
    chunking and embed what that makes with its embedder (bytes count as the files' sizes, as a job counts them).
    None when there is nothing to measure."""
    sample, used, size = [], 0, 0.0
    for doc in docs:
        if used >= sample_bytes or not doc.text.strip():
            continue
        text = doc.text[: sample_bytes - used]
        if len(text) < len(doc.text) and text.rfind("\n\n") > 0:
            text = text[: text.rfind("\n\n")]  # whole paragraphs, as the chunker sees them
        sample.append(replace(doc, id=f"{doc.id}-sample", text=text))
        used += len(text)
        size += max(doc.size, 1) * len(text) / len(doc.text)
    if not sample:
        return None
    index.embedder.embed_documents(["warm up"])  # a model loaded now is not this machine's pace
    started = time.perf_counter()
    chunks = [c for doc in sample for c in chunk_document(doc, index.chunking, "all")]
    plan = plan_vectors(chunks, {doc.id: doc.name for doc in sample})
    if plan.texts:
        index.embedder.embed_documents(plan.texts)
    seconds = max(time.perf_counter() - started, 1e-6)
    return Throughput(size / seconds, len(chunks) / size, "measured on a sample of these files", round(size))


def ingest_estimate(index, docs: Sequence[Document], data_dir: str | Path,
                    min_bytes: int = MIN_CHECKED_BYTES) -> IngestEstimate | None:
    """What indexing ``docs`` into ``index`` makes and takes on this machine: from the throughput recorded for its
    embedder, else measured now on a sample (and kept as a first figure). None for an ingest under ``min_bytes``
    when nothing is recorded, or when nothing could be measured."""
    total = sum(max(doc.size, 1) for doc in docs)
    embedder_id = str(getattr(index.embedder, "id", "")) or "unknown"
    found = load(data_dir, embedder_id)
    if found is None:
        if total < min_bytes:
            return None
        found = measure(index, docs)
        if found is None:
            return None
        _save(data_dir, embedder_id, found)
    return estimate(total, found)


def _save(data_dir: str | Path, embedder_id: str, throughput: Throughput) -> None:
    path = Path(data_dir) / _FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data = data if isinstance(data, dict) else {}
        data[embedder_id] = asdict(throughput)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data))
    except (OSError, ValueError) as e:  # a figure kept for next time; the estimate stands without it
        log.warning("could not keep the measured throughput in %s: %s", path, e)


def duration_text(seconds: float) -> str:
    """``about 3 min``, ``about 2 h 50 min``: an estimate's length in words."""
    minutes = max(1, round(seconds / 60))
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60} min" if minutes % 60 else f"about {minutes // 60} h"
