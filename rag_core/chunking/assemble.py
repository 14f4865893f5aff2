"""Assemble stage: a draft chunk over consecutive pieces: its text and span, tokens, main type and flags.

The text is the verbatim source span where possible; a whole split block is its source again, a partial run of
re-fenced code pieces is re-fenced once, table pieces carry one header.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_core.chunking.parse import GAP_TOKENS, ParsedDocument
from rag_core.chunking.split import Piece


@dataclass(slots=True)
class Draft:
    """A chunk under construction (ids and links are assigned once the whole tree is known)."""

    granularity: str
    start: int
    end: int
    text: str
    tokens: int
    chunk_type: str
    verbatim: bool = True
    language: str | None = None
    heading_path: list[str] = field(default_factory=list)
    oversized: bool = False
    continued: bool = False
    contains_types: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    parent: Draft | None = None
    children: list[Draft] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    by_type: dict[str, int] = field(default_factory=dict)  # tokens per block chunk type, in order of first piece
    pieces_verbatim: bool = True  # every piece is a verbatim span (not the same as ``verbatim``)
    pieces_end: int = 0  # the largest piece end


def draft(parsed: ParsedDocument, granularity: str, pieces: list[Piece], heading_path: list[str],
          max_tokens: int) -> Draft:
    """A chunk over ``pieces``; its token count is the sum of the pieces' counts plus one per joining gap
    (each block is counted once; cl100k merges at most the gap into a neighbour, so the sum never
    undercounts in practice and keeps re-chunking cheap)."""
    blocks = parsed.blocks
    tokens = GAP_TOKENS * (len(pieces) - 1)
    by_type: dict[str, int] = {}
    language = None
    oversized = continued = False
    pieces_verbatim = True
    pieces_end = pieces[0].end
    for p in pieces:
        tokens += p.tokens
        block = blocks[p.block]
        by_type[block.chunk_type] = by_type.get(block.chunk_type, 0) + p.tokens
        if language is None and block.language:
            language = block.language
        oversized = oversized or p.oversized
        continued = continued or p.continued
        pieces_verbatim = pieces_verbatim and p.verbatim
        if p.end > pieces_end:
            pieces_end = p.end
    result = _draft(parsed, granularity, pieces, heading_path, tokens, by_type, language, pieces_verbatim,
                    pieces_end)
    result.oversized = oversized and tokens > max_tokens
    result.continued = continued
    return result


def draft_of_passages(parsed: ParsedDocument, granularity: str, passages: list[Draft],
                      heading_path: list[str]) -> Draft:
    """A chunk over consecutive passages, from their summaries (same result as ``draft`` over all their
    pieces, without walking the pieces again at every section level)."""
    pieces = [p for passage in passages for p in passage.pieces]
    by_type: dict[str, int] = {}
    language = None
    pieces_verbatim = True
    pieces_end = passages[0].pieces_end
    for passage in passages:
        for chunk_type, count in passage.by_type.items():
            by_type[chunk_type] = by_type.get(chunk_type, 0) + count
        if language is None and passage.language:
            language = passage.language
        pieces_verbatim = pieces_verbatim and passage.pieces_verbatim
        if passage.pieces_end > pieces_end:
            pieces_end = passage.pieces_end
    tokens = sum(p.tokens for p in passages) + GAP_TOKENS * (len(passages) - 1)
    return _draft(parsed, granularity, pieces, heading_path, tokens, by_type, language, pieces_verbatim, pieces_end)


def _draft(parsed: ParsedDocument, granularity: str, pieces: list[Piece], heading_path: list[str], tokens: int,
           by_type: dict[str, int], language: str | None, pieces_verbatim: bool, pieces_end: int) -> Draft:
    """The chunk over ``pieces`` from their summary (what ``draft`` and ``draft_of_passages`` share)."""
    if pieces_verbatim:  # the common case: one source span
        start, end = pieces[0].start, pieces_end
        text, verbatim = parsed.text[start:end], True
    else:
        text, verbatim, start, end = assemble_text(parsed, pieces)
    # The main type: the non-heading type with the most tokens, the first seen on a tie.
    main, most = "heading", -1
    for chunk_type, count in by_type.items():
        if chunk_type != "heading" and count > most:
            main, most = chunk_type, count
    result = Draft(granularity, start, end, text, tokens, main, verbatim, language=language,
                   heading_path=list(heading_path), contains_types=sorted(by_type), pieces=pieces, by_type=by_type,
                   pieces_verbatim=pieces_verbatim, pieces_end=pieces_end)
    if len(pieces) == 1 and pieces[0].pieces > 1:
        result.metadata.update(piece=pieces[0].piece + 1, pieces=pieces[0].pieces)
    return result


def assemble_text(parsed: ParsedDocument, pieces: list[Piece]) -> tuple[str, bool, int, int]:
    """Text, verbatim flag and span of consecutive pieces, some synthesised (callers take the plain source span
    themselves when every piece is verbatim)."""
    text = parsed.text
    segments: list[tuple[int, int, str, bool]] = []
    i = 0
    while i < len(pieces):
        j = i
        while j + 1 < len(pieces) and pieces[j + 1].block == pieces[i].block:
            j += 1
        same_block = pieces[i : j + 1]
        block = parsed.blocks[same_block[0].block]
        first, last = same_block[0], same_block[-1]
        start, end = first.start, last.end
        if all(p.verbatim for p in same_block):
            segments.append((start, end, text[start:end], True))
        elif first.piece == 0 and last.piece == last.pieces - 1:
            segments.append((block.start, block.end, text[block.start : block.end], True))
        elif block.kind == "fence":
            # The re-fenced text carries the fence lines, so the span it stands for reaches them too.
            outer_start = block.start if first.piece == 0 else start
            outer_end = block.end if last.piece == last.pieces - 1 else end
            segments.append((outer_start, outer_end, parsed.refence(block, start, end), False))
        elif block.kind == "table":
            if first.verbatim:  # starts with the verbatim first piece
                segments.append((block.start, end, text[block.start : end], True))
            else:
                segments.append((start, end, f"{parsed.table_header(block)}\n{text[start:end]}", False))
        else:
            segments.append((start, end, "\n\n".join(p.text for p in same_block), False))
        i = j + 1
    parts: list[str] = []
    verbatim = True
    prev_end = None
    for start, end, segment_text, is_verbatim in segments:
        if prev_end is not None:
            parts.append(text[prev_end:start] if start >= prev_end else "\n\n")
        parts.append(segment_text)
        verbatim = verbatim and is_verbatim
        prev_end = end
    return "".join(parts), verbatim, segments[0][0], segments[-1][1]
