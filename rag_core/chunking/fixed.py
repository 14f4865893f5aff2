"""The naive baseline: fixed windows of ``max_tokens`` cl100k tokens with ``overlap``, blind to structure."""

from __future__ import annotations

from rag_core.chunking.ids import chunk_id, pages_for_span
from rag_core.config import ChunkingConfig
from rag_core.loaders.front_matter import front_matter_chars
from rag_core.tokens import get_encoding
from rag_core.types import Chunk, Document


def fixed_chunks(doc: Document, max_tokens: int = 512, overlap: int = 50) -> list[Chunk]:
    """Windows of ``max_tokens`` tokens stepping by ``max_tokens - overlap``; each a verbatim span of the source."""
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    if not 0 <= overlap < max_tokens:
        raise ValueError(f"overlap must be between 0 and max_tokens - 1 ({max_tokens - 1}), got {overlap}")
    text = doc.text
    skip = front_matter_chars(doc)  # windows start after the front matter; offsets still index doc.text
    if not text[skip:].strip():
        return []
    encoding = get_encoding()
    token_ids = encoding.encode_ordinary(text[skip:])
    _, offsets = encoding.decode_with_offsets(token_ids)
    offsets = [skip + offset for offset in offsets]
    offsets.append(len(text))
    params = f"fixed:{max_tokens}:{overlap}"
    chunks: list[Chunk] = []
    step = max_tokens - overlap
    first = 0
    while first < len(token_ids):
        last = min(first + max_tokens, len(token_ids))
        start, end = offsets[first], offsets[last]
        if end > start:
            position = len(chunks)
            chunks.append(
                Chunk(
                    id=chunk_id(doc.id, "paragraph", start, end, position, params),
                    doc_id=doc.id,
                    granularity="paragraph",
                    chunk_type="prose",
                    text=text[start:end],
                    start=start,
                    end=end,
                    tokens=last - first,
                    language=doc.language,
                    position=position,
                    metadata={"strategy": "fixed"},
                )
            )
        if last == len(token_ids):
            break
        first += step
    return chunks


def fixed_strategy_chunks(doc: Document, config: ChunkingConfig) -> list[Chunk]:
    """The ``fixed`` strategy's row: ``config``'s windows, each with the pages it covers when ``doc`` has pages."""
    chunks = fixed_chunks(doc, config.max_tokens, config.overlap)
    if doc.metadata.get("pages"):
        for chunk in chunks:
            chunk.metadata["pages"] = pages_for_span(doc.metadata, chunk.start, chunk.end)
    return chunks
