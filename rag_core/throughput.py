"""How long work takes on this machine: ETAs from a job's measured pace, and the cost of an ingest before it runs.

An ETA comes from what this job measured, never a prior: its pace is taken from the first moment it reported
progress (so the model load or an index opening before the first step is not counted as work) to now, and there is
no ETA until that pace has been measured for a while.

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

from rag_core.chunking import chunk_document
from rag_core.loaders.document_store import atomic_write_text
from rag_core.stores.contextual import plan_vectors
from rag_core.types import Document

log = logging.getLogger(__name__)

MIN_MEASURED_S = 1.0  # seconds of measured work before an ETA is given
LONG_INGEST_S = 120.0  # an ingest estimated longer than this is confirmed before it is queued
SAMPLE_BYTES = 64 * 1024  # what ``measure`` chunks and embeds of the documents to time this machine
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
        return Throughput(**found) if isinstance(found, dict) else None
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError) as e:
        log.warning("unreadable throughput record %s (%s); measuring again", path, e)
        return None


def record(data_dir: str | Path, embedder_id: str, nbytes: int, seconds: float, chunks: int) -> None:
    """Add one ingest's measurement (``nbytes`` of source indexed in ``seconds``, making ``chunks``)."""
    path = Path(data_dir) / _FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        data = data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        data = {}
    found = data.get(embedder_id)
    try:
        old = Throughput(**found) if isinstance(found, dict) else None
    except TypeError:
        old = None
    updated = combine(old, nbytes, seconds, chunks)
    if updated is not None:
        data[embedder_id] = asdict(updated)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data))


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
    return Throughput(size / seconds, len(chunks) / size, "measured just now on a sample of these files")
