"""BM25 keyword search with bm25s: one sub-index per granularity, exact filters through a score mask.

One sub-index per granularity keeps document frequencies meaningful (a word in every section is not rare
because it is in few rows) and makes a granularity filter exact. Chunk-type, document and exclusion filters
are applied as a 0/1 weight over the full score vector before selecting the top k, so filtered search is
exact too (no over-fetch that could miss a match). bm25s has no incremental add; the index is rebuilt on
each ingest (about a second per 100k short chunks here, see bench).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from rag_core.stores.contextual import context_text
from rag_core.types import CHUNK_TYPES, GRANULARITIES, Chunk

_TYPE_BIT = {chunk_type: 1 << position for position, chunk_type in enumerate(CHUNK_TYPES)}
_local = threading.local()


def _stemmer():
    # PyStemmer objects are not thread-safe: one per thread.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased, English-stop-word-free, Snowball-stemmed tokens of each text."""
    return bm25s.tokenize(
        list(texts), stopwords="en", stemmer=_stemmer(), return_ids=False, show_progress=False
    )


def index_text(chunk: Chunk, doc_name: str = "") -> str:
    """What BM25 sees for a chunk: its text after its document name and heading path (``context_text``)."""
    return context_text(chunk, doc_name)


def bits_of(chunk_types: Iterable[str]) -> int:
    """A bit set of chunk types (unknown names set no bit)."""
    bits = 0
    for chunk_type in chunk_types:
        bits |= _TYPE_BIT.get(chunk_type, 0)
    return bits


def type_bits(chunk: Chunk) -> int:
    """The types a chunk matches: its own and, for coarse chunks, those it contains."""
    return bits_of([chunk.chunk_type, *chunk.contains_types])


class _SubIndex:
    """The BM25 index of one granularity plus per-row arrays for filtering."""

    def __init__(self, bm25, ids: list[str], chunks: Mapping[str, Chunk]):
        self.bm25 = bm25
        self.ids = ids
        self.position = {chunk_id: row for row, chunk_id in enumerate(ids)}
        self.doc_ids = np.array([chunks[i].doc_id for i in ids], dtype=object)
        self.type_bits = np.array([type_bits(chunks[i]) for i in ids], dtype=np.int64)

    def mask(self, chunk_types: Sequence[str] | None, doc_ids: Sequence[str] | None, exclude: Iterable[str]):
        keep = np.ones(len(self.ids), dtype=bool)
        if chunk_types:
            keep &= (self.type_bits & bits_of(chunk_types)) != 0
        if doc_ids:
            keep &= np.isin(self.doc_ids, list(doc_ids))
        for chunk_id in exclude:
            row = self.position.get(chunk_id)
            if row is not None:
                keep[row] = False
        return keep


class KeywordIndex:
    """BM25 over chunks, searched with the same filters as the vector store."""

    def __init__(self, subs: dict[str, _SubIndex]):
        self._subs = subs

    @classmethod
    def build(cls, chunks: Mapping[str, Chunk], names: Mapping[str, str] | None = None) -> KeywordIndex:
        """BM25 over ``chunks`` as ``index_text`` reads them (``names``: document id → name)."""
        names = names or {}
        by_granularity: dict[str, list[str]] = {}
        for chunk_id, chunk in chunks.items():
            by_granularity.setdefault(chunk.granularity, []).append(chunk_id)
        subs = {}
        for granularity, ids in by_granularity.items():
            ids.sort()
            bm25 = bm25s.BM25()
            tokens = bm25s.tokenize(
                [index_text(chunks[i], names.get(chunks[i].doc_id, "")) for i in ids],
                stopwords="en", stemmer=_stemmer(), show_progress=False
            )
            bm25.index(tokens, show_progress=False)
            subs[granularity] = _SubIndex(bm25, ids, chunks)
        return cls(subs)

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for granularity, sub in self._subs.items():
            sub_dir = directory / granularity
            sub.bm25.save(str(sub_dir), show_progress=False)
            (sub_dir / "ids.json").write_text(json.dumps(sub.ids), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, chunks: Mapping[str, Chunk], names: Mapping[str, str] | None = None,
             ) -> KeywordIndex:
        """Load a saved index; rebuilds from ``chunks`` when the files are missing or disagree with them."""
        subs = {}
        try:
            for granularity in GRANULARITIES:
                sub_dir = directory / granularity
                if not sub_dir.is_dir():
                    continue
                ids = json.loads((sub_dir / "ids.json").read_text(encoding="utf-8"))
                if any(i not in chunks for i in ids):
                    raise ValueError("saved BM25 ids are not the index's chunks")
                bm25 = bm25s.BM25.load(str(sub_dir), show_progress=False)
                subs[granularity] = _SubIndex(bm25, ids, chunks)
        except (OSError, ValueError, KeyError):
            return cls.build(chunks, names)
        if sum(len(s.ids) for s in subs.values()) != len(chunks):
            return cls.build(chunks, names)
        return cls(subs)

    def search(
        self,
        query: str,
        k: int,
        granularity: Sequence[str] | None = None,
        chunk_types: Sequence[str] | None = None,
        doc_ids: Sequence[str] | None = None,
        exclude_ids: Iterable[str] = (),
    ) -> list[tuple[str, float]]:
        """``(chunk id, raw BM25 score)`` best first; only chunks with a positive score."""
        if k <= 0:
            return []
        tokens = tokenize([query])[0]
        if not tokens:
            return []
        exclude = set(exclude_ids)
        candidates: list[tuple[str, float]] = []
        for name in granularity or list(self._subs):
            sub = self._subs.get(name)
            if sub is None or not sub.ids:
                continue
            scores = np.asarray(sub.bm25.get_scores(tokens), dtype=np.float32)
            scores = np.where(sub.mask(chunk_types, doc_ids, exclude), scores, 0.0)
            top = min(k, len(scores))
            rows = np.argpartition(-scores, top - 1)[:top]
            candidates.extend((sub.ids[row], float(scores[row])) for row in rows if scores[row] > 0)
        candidates.sort(key=lambda pair: (-pair[1], pair[0]))
        return candidates[:k]
