"""Structure-aware multi-granularity chunker: document → section → paragraph → row with parent/child links.

Stages, one module each: ``parse`` (blocks, each counted once, with heading paths) → ``split`` (oversized
blocks as pieces) → ``assemble`` (a draft chunk's text and span from its pieces) → ``pack`` (pieces into
passages, passages into section and document parts). This module links the drafts into the tree, adds table
rows (the header repeated), and turns drafts into chunks with stable ids.
"""

from __future__ import annotations

from bisect import bisect_left

from rag_core.chunking.assemble import Draft
from rag_core.chunking.ids import chunk_id, pages_for_span
from rag_core.chunking.pack import PART_SCALE, parts, passages, sections, size_limit
from rag_core.chunking.parse import GAP_TOKENS, ParsedDocument, parse_blocks
from rag_core.config import ChunkingConfig
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Document

__all__ = ["PART_SCALE", "size_limit", "structure_chunks"]


def structure_chunks(doc: Document, config: ChunkingConfig) -> list[Chunk]:
    """All granularities of ``doc`` (Markdown-like documents via markdown-it, source code via ``code``)."""
    parsed = parse_blocks(doc)
    drafts = _tree(parsed, config.max_tokens, config.overlap)
    return _to_chunks(doc, drafts, f"structure:{config.max_tokens}:{config.overlap}")


def _tree(parsed: ParsedDocument, max_tokens: int, overlap: int) -> list[Draft]:
    """Every draft of the document, linked: document parts, section parts, passages and rows."""
    doc = parsed.doc
    doc_passages = passages(parsed, max_tokens, overlap)
    if not doc_passages:
        return []
    documents = parts(parsed, "document", doc_passages, [], max_tokens)
    if doc.doc_type == "code":
        doc_sections = parts(parsed, "section", doc_passages, [], max_tokens)
        for part in doc_sections:
            names = [parsed.blocks[p.pieces[0].block].title for p in part.children]
            part.heading_path = [next((n for n in names if n), doc.name)]
        enclosing = [[next(s for s in doc_sections if any(c is p for c in s.children))] for p in doc_passages]
    else:
        doc_sections, enclosing = sections(parsed, doc_passages, max_tokens)
    doc_part = {id(c): d for d in documents for c in d.children}
    index_of = {id(p): i for i, p in enumerate(doc_passages)}
    first_passage = {id(part): index_of[id(part.children[0])] for part in doc_sections}
    for part in doc_sections + documents:
        part.children = []
    # Parent of a passage: the innermost enclosing section part, else the document part.
    for i, passage in enumerate(doc_passages):
        passage.parent = enclosing[i][-1] if enclosing[i] else doc_part[id(passage)]
    # Parent of a section part: the enclosing section's part holding its first passage, else the document.
    for part in doc_sections:
        first = first_passage[id(part)]
        chain = enclosing[first]
        depth = next(k for k, s in enumerate(chain) if s is part)
        part.parent = chain[depth - 1] if depth > 0 else doc_part[id(doc_passages[first])]
    drafts = documents + doc_sections + doc_passages + _rows(parsed, doc_passages, max_tokens)
    for d in drafts:
        if d.parent is not None:
            d.parent.children.append(d)
    return drafts


def _rows(parsed: ParsedDocument, doc_passages: list[Draft], max_tokens: int) -> list[Draft]:
    """Each table body row with the header row and delimiter repeated (synthesised, not verbatim)."""
    rows: list[Draft] = []
    for passage in doc_passages:
        for piece in passage.pieces:
            block = parsed.blocks[piece.block]
            if block.kind != "table" or not block.items:
                continue
            header = parsed.table_header(block)
            header_tokens = count_tokens(header) + GAP_TOKENS
            sizes = parsed.row_tokens(piece.block)
            first = bisect_left(block.items, (piece.start, -1)) if piece.piece else 0
            for number in range(first + 1, len(block.items) + 1):
                s, e = block.items[number - 1]
                if e > piece.end:
                    break
                tokens = header_tokens + sizes[number - 1] - GAP_TOKENS
                row = Draft("row", s, e, f"{header}\n{parsed.text[s:e]}", tokens, "table", verbatim=False,
                            heading_path=list(parsed.paths[piece.block]), oversized=tokens > max_tokens,
                            contains_types=["table"], metadata={"row": number, "rows": len(block.items)})
                row.parent = passage
                rows.append(row)
    return rows


def _to_chunks(doc: Document, drafts: list[Draft], params: str) -> list[Chunk]:
    def span_key(draft: Draft) -> tuple[int, int]:
        return draft.start, draft.end

    for draft in drafts:
        if len(draft.children) > 1:
            draft.children.sort(key=span_key)
    positions = {id(c): i for draft in drafts for i, c in enumerate(draft.children)}
    order = {"document": 0, "section": 1, "paragraph": 2, "row": 3}
    drafts = sorted(drafts, key=lambda n: (order[n.granularity], n.start, n.end))
    ids: dict[int, str] = {}
    position_of: dict[int, int] = {}
    top = 0
    for draft in drafts:
        key = id(draft)
        position = positions.get(key)
        if position is None:
            position, top = top, top + 1
        position_of[key] = position
        scope = "\0".join(draft.heading_path) if draft.granularity == "section" else ""
        ids[key] = chunk_id(doc.id, draft.granularity, draft.start, draft.end, position, params, scope)
    has_pages = bool(doc.metadata and doc.metadata.get("pages"))
    chunks = []
    for draft in drafts:
        metadata = dict(draft.metadata)
        metadata["strategy"] = "structure"
        if has_pages:
            pages = pages_for_span(doc.metadata, draft.start, draft.end)
            if pages is not None:
                metadata["pages"] = pages
        granularity = draft.granularity
        chunks.append(Chunk(
            id=ids[id(draft)], doc_id=doc.id, granularity=granularity, chunk_type=draft.chunk_type,
            text=draft.text, start=draft.start, end=draft.end, tokens=draft.tokens, heading_path=draft.heading_path,
            parent_id=ids[id(draft.parent)] if draft.parent is not None else None,
            child_ids=[ids[id(c)] for c in draft.children], language=draft.language, verbatim=draft.verbatim,
            oversized=draft.oversized, continued=draft.continued, position=position_of[id(draft)],
            contains_types=draft.contains_types if granularity in ("document", "section") else [],
            metadata=metadata,
        ))
    return chunks
