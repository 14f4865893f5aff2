"""Reading an index: its documents, chunks by id or by document, counts per granularity and navigation.

Both tiers answer: the committed snapshot (``IndexSync._current``) and the in-memory hot tier.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rag_core.index.model import doc_order
from rag_core.index.navigation import Navigation
from rag_core.stores.filters import as_list
from rag_core.types import GRANULARITIES, Chunk, Document


class IndexReads(Navigation):
    """Mixin for ``Index``: look-ups over both tiers; needs ``_current``, ``hot``, ``_catalog`` and ``embedder``."""

    def documents(self) -> list[dict[str, Any]]:
        """One dict per indexed document: doc_id, name, tier, chunks per granularity, updated."""
        rows = [{"doc_id": doc_id, "tier": "persistent", **entry}
                for doc_id, entry in self._current().manifest.get("documents", {}).items()]
        for entry in self.hot.entries():
            counts: dict[str, int] = {}
            for chunk in entry.chunks:
                counts[chunk.granularity] = counts.get(chunk.granularity, 0) + 1
            rows.append({"doc_id": entry.doc_id, "name": entry.name, "tier": "hot", "chunks": counts,
                         "expires_in_s": round(self.hot.seconds_left(entry), 1)})
        for row in rows:
            row.pop("file", None)
        return rows

    def doc_name(self, doc_id: str) -> str:
        """The source name of a document ("" when unknown)."""
        entry = self._current().manifest.get("documents", {}).get(doc_id)
        if entry:
            return entry["name"]
        return next((e.name for e in self.hot.entries() if e.doc_id == doc_id), "")

    def count(self) -> dict[str, int]:
        """Chunks per granularity in both tiers (from the manifest's per-document counts: no scan)."""
        counts = dict.fromkeys(GRANULARITIES, 0)
        for entry in self._current().manifest.get("documents", {}).values():
            for granularity, n in entry.get("chunks", {}).items():
                counts[granularity] = counts.get(granularity, 0) + n
        for chunk in self.hot.chunks():
            counts[chunk.granularity] = counts.get(chunk.granularity, 0) + 1
        return counts

    def get(self, chunk_id: str) -> Chunk | None:
        return self._current().chunks.get(chunk_id) or self.hot.get(chunk_id)

    def get_many(self, ids: Iterable[str]) -> list[Chunk]:
        """Chunks of ``ids`` that exist, in the given order."""
        found = (self.get(i) for i in ids)
        return [c for c in found if c is not None]

    def chunks(self, doc_id: str | None = None, granularity: str | None = None) -> list[Chunk]:
        """Chunks in document order, optionally of one document and/or granularity."""
        as_list(granularity, GRANULARITIES, "granularity")
        snapshot = self._current()
        hot_by_doc: dict[str, list[Chunk]] = {}
        for entry in self.hot.entries():
            hot_by_doc[entry.doc_id] = doc_order(entry.chunks)
        groups = {**snapshot.by_doc, **hot_by_doc}
        selected = [groups.get(doc_id, [])] if doc_id is not None else list(groups.values())
        return [c for group in selected for c in group if granularity is None or c.granularity == granularity]

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32)

    def source(self, doc_id: str) -> Document | None:
        """The indexed document ``doc_id`` as stored on the Chroma server (None embedded, or when unknown)."""
        if self._catalog is None:
            return None
        data = self._catalog.sources([doc_id]).get(doc_id)
        return Document.from_dict(data) if data else None

