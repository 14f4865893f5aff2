"""``SearchIndex``: what retrieval, the agent's tools and the agent loop need of an index.

``rag_core.index.Index`` is the one the app, the CLI and the benchmarks open (``rag_core.services``); tests pass
in-memory fakes through the same door. A Protocol, so nothing has to inherit from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rag_core.embeddings.base import Embedder
from rag_core.types import Chunk

if TYPE_CHECKING:
    from rag_core.index import Filters


class SearchIndex(Protocol):
    """Ranked search over chunks, look-ups by id, the embedder, and navigation between granularities."""

    embedder: Embedder

    def vector_search(self, query: str, k: int, filters: Filters | None = None, exclude_ids: Iterable[str] = (),
                      ) -> list[tuple[Chunk, float]]:
        """Chunks by cosine similarity to ``query``, best first."""
        ...

    def keyword_search(self, query: str, k: int, filters: Filters | None = None, exclude_ids: Iterable[str] = (),
                       ) -> list[tuple[Chunk, float]]:
        """Chunks by raw BM25 score, best first."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray: ...

    def get(self, chunk_id: str) -> Chunk | None: ...

    def get_many(self, ids: Iterable[str]) -> list[Chunk]: ...

    def chunks(self, doc_id: str | None = None, granularity: str | None = None) -> list[Chunk]: ...

    def documents(self) -> list[dict[str, Any]]: ...

    def doc_name(self, doc_id: str) -> str: ...

    def zoom_in(self, section_id: str) -> list[Chunk]: ...

    def zoom_out(self, chunk_id: str) -> Chunk | None: ...

    def list_sections(self, doc_id: str) -> list[Chunk]: ...

    def read_section(self, doc_id: str, section_id: str) -> Chunk: ...
