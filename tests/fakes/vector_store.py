"""``MemoryVectorStore``: a complete small vector store backend, in memory (numpy cosine), and its row.

It implements ``rag_core.stores.vector.VectorStore`` and the functions of a row of ``rag_core.stores.backends``;
``tests/stores/test_vector_contract.py`` holds it to the same behaviour as Chroma. A new backend can start as a copy
of this file. Register it for a test with ``use_memory_backend(monkeypatch, settings)``: the app then opens every
index of those settings on it, through the same ``open_vector_store`` it uses for Chroma.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_core.config import Settings
from rag_core.stores import backends
from rag_core.stores.filters import Filters

NAME = "memory"

# Every store of the process, by (data directory, index name): reopening an index finds its rows again.
_STORES: dict[tuple[str, str], MemoryVectorStore] = {}
_LOCK = threading.Lock()


def _passes(metadata: dict[str, Any], filters: Filters | None) -> bool:
    """Whether a row's ``chunk_metadata`` passes ``filters`` (the semantics every backend gives them)."""
    if filters is None:
        return True
    if filters.granularity and metadata.get("granularity") not in filters.granularity:
        return False
    if filters.chunk_types and not any(metadata.get(f"has_{t}") for t in filters.chunk_types):
        return False
    return not filters.doc_ids or metadata.get("doc_id") in filters.doc_ids


class MemoryVectorStore:
    """Rows in dicts; a query is a cosine over every row passing the filters."""

    def __init__(self, metadata: dict[str, Any]):
        self._metadata = dict(metadata)
        self._vectors: dict[str, np.ndarray] = {}
        self._metadatas: dict[str, dict[str, Any]] = {}
        self._documents: dict[str, str] = {}
        self._lock = threading.Lock()

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[dict[str, Any]],
               documents: Sequence[str] | None = None) -> None:
        ids = list(ids)
        embeddings = np.asarray(embeddings, dtype=np.float32)
        if len(ids) != len(embeddings) or len(ids) != len(metadatas) or (documents is not None
                                                                         and len(documents) != len(ids)):
            raise ValueError(f"upsert needs as many ids ({len(ids)}) as embeddings ({len(embeddings)}) and metadatas")
        with self._lock:
            for i, row_id in enumerate(ids):
                self._vectors[row_id] = embeddings[i].copy()
                # As Chroma's upsert: metadata merged into the row's, its document kept when none is given.
                self._metadatas[row_id] = {**self._metadatas.get(row_id, {}), **metadatas[i]}
                if documents is not None:
                    self._documents[row_id] = documents[i]

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            for row_id in ids:
                self._vectors.pop(row_id, None)
                self._metadatas.pop(row_id, None)
                self._documents.pop(row_id, None)

    def query(self, embedding: np.ndarray, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        with self._lock:
            ids = [i for i, metadata in self._metadatas.items() if _passes(metadata, filters)]
            if n <= 0 or not ids:
                return []
            matrix = np.stack([self._vectors[i] for i in ids])
        query = np.asarray(embedding, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
        scores = matrix @ query / np.where(norms > 0, norms, 1.0)
        ranked = sorted(zip(ids, scores.tolist(), strict=True), key=lambda pair: (-pair[1], pair[0]))
        return [(row_id, float(score)) for row_id, score in ranked[:n]]

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        with self._lock:
            return {i: self._vectors[i].copy() for i in ids if i in self._vectors}

    def documents(self, ids: Sequence[str]) -> dict[str, str]:
        with self._lock:
            return {i: self._documents[i] for i in ids if i in self._documents}

    def all_ids(self) -> list[str]:
        with self._lock:
            return list(self._vectors)

    def metadata(self) -> dict[str, Any]:
        return dict(self._metadata)

    def count(self) -> int:
        """Rows stored (for listings and tests; the index never asks)."""
        return len(self._vectors)


def open_store(settings: Settings, name: str, metadata: dict[str, Any], fresh: bool = False) -> MemoryVectorStore:
    """The store of index ``name`` in ``settings.data_dir``, created with ``metadata`` when missing (one process
    shares it, so ``fresh`` changes nothing)."""
    with _LOCK:
        return _STORES.setdefault((str(settings.data_dir), name), MemoryVectorStore(metadata))


def describe(settings: Settings) -> str:
    return f"in-memory vector store of {settings.data_dir}"


def collections(settings: Settings) -> list[tuple[str, dict[str, Any], int]]:
    with _LOCK:
        return [(name, store.metadata(), store.count()) for (data_dir, name), store in sorted(_STORES.items())
                if data_dir == str(settings.data_dir)]


def drop(settings: Settings, name: str) -> bool:
    with _LOCK:
        return _STORES.pop((str(settings.data_dir), name), None) is not None


ROW = backends.VectorBackend(open=open_store, describe=describe, collections=collections, drop=drop)


def use_memory_backend(monkeypatch, settings: Settings) -> Settings:
    """Register the row under ``"memory"`` for this test and return ``settings`` naming it."""
    monkeypatch.setitem(backends.BACKENDS, NAME, ROW)
    monkeypatch.setattr(__import__(__name__, fromlist=["_STORES"]), "_STORES", {})  # this test's stores only
    return settings.model_copy(update={"vector_store": NAME})
