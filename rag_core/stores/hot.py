"""The hot tier: documents kept in memory with a time-to-live, searched alongside the persistent tier.

Meant for material that matters only for a while (a pasted snippet, today's incident notes): nothing is
written to disk, and an entry vanishes from search, ``get`` and navigation once its TTL has passed.
The clock is injectable so tests control time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from rag_core.stores.keyword import KeywordIndex, bits_of, type_bits
from rag_core.types import Chunk


@dataclass(slots=True)
class HotEntry:
    doc_id: str
    name: str
    chunks: list[Chunk]
    embeddings: np.ndarray
    expires_at: float


class HotTier:
    """In-memory chunks + embeddings per document, each with an expiry time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, HotEntry] = {}
        self._keyword: KeywordIndex | None = None

    def add(self, doc_id: str, name: str, chunks: list[Chunk], embeddings: np.ndarray, ttl_s: float) -> None:
        if not ttl_s or ttl_s <= 0:
            raise ValueError(f"ttl_s must be a positive number of seconds, got {ttl_s!r}")
        if len(chunks) != len(embeddings):
            raise ValueError(f"{len(chunks)} chunks but {len(embeddings)} embeddings")
        entry = HotEntry(doc_id, name, list(chunks), np.asarray(embeddings, dtype=np.float32), self._clock() + ttl_s)
        with self._lock:
            self._entries[doc_id] = entry
            self._keyword = None

    def remove(self, doc_id: str) -> bool:
        with self._lock:
            self._keyword = None
            return self._entries.pop(doc_id, None) is not None

    def _live(self) -> list[HotEntry]:
        """Entries not yet expired (expired ones are dropped)."""
        now = self._clock()
        with self._lock:
            expired = [doc_id for doc_id, entry in self._entries.items() if entry.expires_at <= now]
            for doc_id in expired:
                del self._entries[doc_id]
            if expired:
                self._keyword = None
            return list(self._entries.values())

    def entries(self) -> list[HotEntry]:
        return self._live()

    def seconds_left(self, entry: HotEntry) -> float:
        return max(0.0, entry.expires_at - self._clock())

    def get(self, chunk_id: str) -> Chunk | None:
        for entry in self._live():
            for chunk in entry.chunks:
                if chunk.id == chunk_id:
                    return chunk
        return None

    def chunks(self) -> list[Chunk]:
        return [chunk for entry in self._live() for chunk in entry.chunks]

    def vector_search(
        self,
        query_vector: np.ndarray,
        k: int,
        allowed: Callable[[Chunk], bool],
        exclude_ids: Iterable[str] = (),
    ) -> list[tuple[Chunk, float]]:
        exclude = set(exclude_ids)
        scored: list[tuple[Chunk, float]] = []
        for entry in self._live():
            if not len(entry.chunks):
                continue
            similarities = entry.embeddings @ np.asarray(query_vector, dtype=np.float32)
            for chunk, similarity in zip(entry.chunks, similarities, strict=True):
                if chunk.id not in exclude and allowed(chunk):
                    scored.append((chunk, float(similarity)))
        scored.sort(key=lambda pair: -pair[1])
        return scored[:k]

    def keyword_search(
        self,
        query: str,
        k: int,
        granularity: Sequence[str] | None,
        chunk_types: Sequence[str] | None,
        doc_ids: Sequence[str] | None,
        exclude_ids: Iterable[str] = (),
    ) -> list[tuple[Chunk, float]]:
        live = self._live()
        if not live:
            return []
        by_id = {chunk.id: chunk for entry in live for chunk in entry.chunks}
        with self._lock:
            keyword = self._keyword
        if keyword is None:
            keyword = KeywordIndex.build(by_id, {entry.doc_id: entry.name for entry in live})
            with self._lock:
                self._keyword = keyword
        hits = keyword.search(query, k, granularity, chunk_types, doc_ids, exclude_ids)
        return [(by_id[chunk_id], score) for chunk_id, score in hits if chunk_id in by_id]


def chunk_allowed(
    chunk: Chunk, granularity: Sequence[str] | None, chunk_types: Sequence[str] | None, doc_ids: Sequence[str] | None
) -> bool:
    """Whether ``chunk`` passes the filters, with the same semantics as the Chroma ``where`` clause."""
    if granularity and chunk.granularity not in granularity:
        return False
    if doc_ids and chunk.doc_id not in doc_ids:
        return False
    if chunk_types:
        return bool(type_bits(chunk) & bits_of(chunk_types))
    return True
