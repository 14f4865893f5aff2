"""Searches remembered across a study's trials: the same question asks an unchanged index the same searches.

A study scores every trial's configuration on the same questions over indexes nothing writes to while it runs, so
a retrieval-only trial repeats the previous trials' searches: the same query, the same filters, often the same
depth; only fusion, gating and de-dup change what is made of the candidates. ``MemoIndex`` wraps one such index
and answers a search it has seen from memory, with exactly the result the index gives:

- a vector search is remembered at the deepest ``k`` asked so far and a shallower one served by its prefix, only
  when the index says its vector search is exact (``Index.exact_vector_search``: ranked by cosine, ties by id, so
  the top ``k`` is the prefix of any deeper list); an approximate store (Chroma's HNSW) is remembered per ``k``;
- a keyword search likewise, except where the ``k``-th and the next hit tie in score (BM25 picks among tied chunks
  per depth): such a ``k`` is asked of the index and remembered on its own;
- chunks by id and the vectors of texts (de-duplication's cosine test) are remembered one by one.

The memory lives as long as the study's index cache; it is never right for an index that changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rag_core.types import Chunk

Pairs = list[tuple[Chunk, float]]


def _filters_key(filters) -> tuple:
    if filters is None:
        return (None, None, None)
    return tuple(None if value is None else tuple(value)
                 for value in (filters.granularity, filters.chunk_types, filters.doc_ids))


class _Ranked:
    """One kind of search remembered: per (query, filters, excluded) the deepest list asked, plus exact depths."""

    def __init__(self, search, prefix_exact: bool, ties_matter: bool) -> None:
        self.search, self.prefix_exact, self.ties_matter = search, prefix_exact, ties_matter
        self.deepest: dict[tuple, tuple[int, Pairs]] = {}
        self.exact: dict[tuple, Pairs] = {}
        self.calls = 0
        self.served = 0

    def __call__(self, query: str, k: int, filters=None, exclude_ids: Iterable[str] = ()) -> Pairs:
        exclude = tuple(exclude_ids)
        key = (query, _filters_key(filters), exclude)
        served = self._from_memory(key, k)
        if served is not None:
            self.served += 1
            return list(served)
        self.calls += 1
        found = self.search(query, k, filters, exclude)
        self.exact[(*key, k)] = found
        if self.prefix_exact and k > self.deepest.get(key, (0, []))[0]:
            self.deepest[key] = (k, found)
        return list(found)

    def _from_memory(self, key: tuple, k: int) -> Pairs | None:
        if (*key, k) in self.exact:
            return self.exact[(*key, k)]
        if not self.prefix_exact or key not in self.deepest:
            return None
        depth, found = self.deepest[key]
        if k > depth:
            return None
        if len(found) <= k:  # the deeper search found fewer than k: so does this one
            return found
        if self.ties_matter and found[k - 1][1] == found[k][1]:
            return None  # a tie at the cut: which of the tied chunks comes back depends on k
        return found[:k]


class MemoIndex:
    """An index whose searches, chunk look-ups and text vectors are remembered (see the module docstring); every
    other attribute is the wrapped index's."""

    def __init__(self, index) -> None:
        self.inner = index
        exact = bool(getattr(index, "exact_vector_search", False))
        self.vector_search = _Ranked(index.vector_search, prefix_exact=exact, ties_matter=False)
        self.keyword_search = _Ranked(index.keyword_search, prefix_exact=True, ties_matter=True)
        self._chunks: dict[str, Chunk | None] = {}
        self._vectors: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def get_many(self, ids: Iterable[str]) -> list[Chunk]:
        ids = list(ids)
        missing = [i for i in dict.fromkeys(ids) if i not in self._chunks]
        if missing:
            found = {chunk.id: chunk for chunk in self.inner.get_many(missing)}
            self._chunks.update({i: found.get(i) for i in missing})
        return [chunk for chunk in (self._chunks[i] for i in ids) if chunk is not None]

    def get(self, chunk_id: str) -> Chunk | None:
        found = self.get_many([chunk_id])
        return found[0] if found else None

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, np.asarray(self.inner.embed_texts(missing), dtype=np.float32),
                                     strict=True))
        dim = next(iter(self._vectors.values())).shape[0] if self._vectors else 0
        return np.stack([self._vectors[t] for t in texts]) if texts else np.empty((0, dim), dtype=np.float32)
