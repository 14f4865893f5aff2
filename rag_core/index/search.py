"""Searching an index: vector search (exact in process, or Chroma's HNSW) and BM25 keyword search, both tiers.

Searches only return chunks of the committed snapshot (and the hot tier), so vectors of an ingest that has not
committed are never seen.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rag_core.index.model import Snapshot
from rag_core.stores.backends import server_mode
from rag_core.stores.exact import EXACT_MAX_CHUNKS, ExactVectors
from rag_core.stores.filters import Filters
from rag_core.stores.hot import chunk_allowed
from rag_core.types import Chunk


def _check_search(query: str, k: int) -> bool:
    """Validate search arguments; False when there is nothing to search for (blank query or k = 0)."""
    if not isinstance(query, str):
        raise ValueError(f"the query must be a string, got {type(query).__name__}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"k must be a whole number ≥ 0, got {k!r}")
    return bool(query.strip()) and k > 0


class IndexSearch:
    """Mixin for ``Index``: ranked search over both tiers; needs ``_current``, ``hot``, ``embedder``, ``_store``,
    ``settings`` and ``_exact``."""

    def vector_search(self, query: str, k: int, filters: Filters | None = None, exclude_ids: Iterable[str] = (),
                      ) -> list[tuple[Chunk, float]]:
        """Chunks by cosine similarity to ``query`` (in [-1, 1]), best first, both tiers."""
        filters = filters or Filters()
        if not _check_search(query, k):
            return []
        snapshot = self._current()
        exclude = set(exclude_ids)
        query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        hits: list[tuple[Chunk, float]] = []
        exact = self._exact_vectors(snapshot)
        if exact is not None:
            found = exact.search(query_vector, k, filters.granularity, filters.chunk_types, filters.doc_ids, exclude)
            hits = [(snapshot.chunks[i], s) for i, s in found]
        elif snapshot.chunks:
            # Over-fetch: the store may hold vectors of an uncommitted ingest, and excluded ids are dropped here.
            n = min(k + len(exclude) + 8, len(snapshot.chunks) + 64)
            while True:
                found = self._store.query(query_vector, n, filters)
                hits = [(snapshot.chunks[i], s) for i, s in found if i in snapshot.chunks and i not in exclude]
                if len(hits) >= k or len(found) < n:
                    break
                n *= 2
        allowed = lambda c: chunk_allowed(c, filters.granularity, filters.chunk_types, filters.doc_ids)  # noqa: E731
        hits.extend(self.hot.vector_search(query_vector, k, allowed, exclude))
        best: dict[str, tuple[Chunk, float]] = {}
        for chunk, score in hits:  # a chunk in both tiers (re-added hot) counts once
            if chunk.id not in best or score > best[chunk.id][1]:
                best[chunk.id] = (chunk, score)
        return sorted(best.values(), key=lambda pair: -pair[1])[:k]

    @property
    def exact_vector_search(self) -> bool:
        """Whether vector search is exact over every chunk (ranked by cosine, ties by id, so a top ``k`` is the
        prefix of any deeper one): an embedded index within ``EXACT_MAX_CHUNKS`` and nothing in the hot tier."""
        return self._exact_vectors(self._current()) is not None and not self.hot.chunks()

    def _exact_vectors(self, snapshot: Snapshot) -> ExactVectors | None:
        """Exact search data for ``snapshot`` (read once per index version), or None to search Chroma's HNSW:
        a Chroma server (scale-out keeps the search there) or more than ``EXACT_MAX_CHUNKS`` chunks."""
        cached = self._exact
        if cached is not None and cached[0] is snapshot:
            return cached[1]
        exact = None
        if not server_mode(self.settings) and 0 < len(snapshot.chunks) <= EXACT_MAX_CHUNKS:
            exact = ExactVectors.from_store(snapshot.chunks, self._store)
        self._exact = (snapshot, exact)
        return exact

    def keyword_search(self, query: str, k: int, filters: Filters | None = None, exclude_ids: Iterable[str] = (),
                       ) -> list[tuple[Chunk, float]]:
        """Chunks by raw BM25 score (positive only), best first, both tiers."""
        filters = filters or Filters()
        if not _check_search(query, k):
            return []
        snapshot = self._current()
        args = (filters.granularity, filters.chunk_types, filters.doc_ids, exclude_ids)
        hits = [(snapshot.chunks[i], s) for i, s in snapshot.keyword.search(query, k, *args)]
        hits.extend(self.hot.keyword_search(query, k, *args))
        hits.sort(key=lambda pair: -pair[1])
        return hits[:k]
