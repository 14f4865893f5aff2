"""``VectorStore``: what an index needs of its vector store (exactly what ``rag_core.index`` calls), and the flat
metadata each chunk row carries for filtering (``chunk_metadata``).

Backends (``rag_core.stores.backends``: Chroma in ``rag_core.stores.chroma``) implement the protocol and apply
``Filters`` over that metadata in their own terms; ``tests/stores/test_vector_contract.py`` holds every backend to
the same behaviour, and ``tests/fakes/vector_store.py`` is a complete small one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from rag_core.stores.filters import Filters
from rag_core.types import CHUNK_TYPES, Chunk


class VectorStore(Protocol):
    """One index's rows: (id, vector, flat metadata and optionally a document), searched by cosine similarity."""

    def upsert(self, ids: Sequence[str], embeddings: np.ndarray, metadatas: Sequence[dict[str, Any]],
               documents: Sequence[str] | None = None) -> None:
        """Write rows; ``documents`` is each row's text (with a server: the chunk's full JSON, the server being the
        record); a ``ValueError`` when the lengths differ. A row of the same id gets the new vector and metadata
        values; its document, when none is given, and metadata keys not given again remain (as in Chroma; a chunk
        id names its content, so the index never rewrites a row with other keys)."""
        ...

    def delete(self, ids: Sequence[str]) -> None:
        """Remove the rows of ``ids`` (ids not present are ignored)."""
        ...

    def query(self, embedding: np.ndarray, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        """At most ``n`` ``(id, cosine similarity)`` pairs of rows whose metadata passes ``filters``, best first."""
        ...

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (those present)."""
        ...

    def documents(self, ids: Sequence[str]) -> dict[str, str]:
        """The stored documents of ``ids`` (those present and written with one)."""
        ...

    def all_ids(self) -> list[str]:
        """Every row's id."""
        ...

    def metadata(self) -> dict[str, Any]:
        """The metadata the store was created with (embedder, dim, chunking, created)."""
        ...


def chunk_metadata(chunk: Chunk, source_name: str, updated: str) -> dict[str, Any]:
    """Flat, None-free metadata for one chunk (Chroma rejects None and empty lists)."""
    metadata: dict[str, Any] = {
        "doc_id": chunk.doc_id,
        "granularity": chunk.granularity,
        "chunk_type": chunk.chunk_type,
        "language": chunk.language or "",
        "heading": chunk.heading,
        "parent_id": chunk.parent_id or "",
        "tokens": int(chunk.tokens),
        "start": int(chunk.start),
        "end": int(chunk.end),
        "source": source_name,
        "updated": updated,
    }
    # A coarse chunk (section, document) matches a chunk-type filter when it contains that type.
    for chunk_type in {chunk.chunk_type, *chunk.contains_types}:
        if chunk_type in CHUNK_TYPES:
            metadata[f"has_{chunk_type}"] = True
    return metadata
