"""``chunk_document``: the one entry point that picks the strategy and the granularities."""

from __future__ import annotations

from collections.abc import Iterable

from rag_core.chunking.strategies import strategy
from rag_core.config import ChunkingConfig
from rag_core.types import GRANULARITIES, Chunk, Document

GRANULARITY_CHOICES: tuple[str, ...] = (*GRANULARITIES, "all")


def chunk_document(doc: Document, config: ChunkingConfig | None = None, granularity: str = "all") -> list[Chunk]:
    """Chunks of ``doc`` at ``granularity`` (``document|section|paragraph|row|all``), in document order
    within each granularity, made by ``config.strategy``'s row of ``chunking.strategies``.

    The ``structure`` strategy parses Markdown-like documents (Markdown, text, and the Markdown the loaders
    make of HTML, DOCX, CSV and PDF) and splits source code (``doc_type == "code"``) at top-level units.
    The ``fixed`` strategy is the token-window baseline and only has the ``paragraph`` granularity.
    """
    if granularity not in GRANULARITY_CHOICES:
        raise ValueError(f"unknown granularity {granularity!r}; allowed: {', '.join(GRANULARITY_CHOICES)}")
    config = config or ChunkingConfig()
    row = strategy(config.strategy)
    if granularity != "all" and granularity not in row.granularities:
        return []
    chunks = row.chunk(doc, config)
    if granularity != "all":
        chunks = [c for c in chunks if c.granularity == granularity]
    return chunks


def chunk_documents(
    docs: Iterable[Document], config: ChunkingConfig | None = None, granularity: str = "all"
) -> list[Chunk]:
    """``chunk_document`` over several documents, concatenated."""
    return [chunk for doc in docs for chunk in chunk_document(doc, config, granularity)]
