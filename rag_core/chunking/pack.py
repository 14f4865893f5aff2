"""Pack stage: pieces into passages (never across a heading), passages into section and document parts."""

from __future__ import annotations

from bisect import bisect_left

from rag_core.chunking.assemble import Draft, draft, draft_of_passages
from rag_core.chunking.parse import GAP_TOKENS, ParsedDocument
from rag_core.chunking.split import Piece, split_block

LEAD_IN_MAX_TOKENS = 64  # a paragraph ending with ":" up to this size is a lead-in kept with the next block
# Sections and documents are context around passages: a part holds up to this many passages' worth of tokens.
PART_SCALE = 4


def size_limit(granularity: str, max_tokens: int) -> int:
    """The most tokens a chunk of ``granularity`` holds (unless one atomic block is larger)."""
    return max_tokens * PART_SCALE if granularity in ("section", "document") else max_tokens


def passages(parsed: ParsedDocument, max_tokens: int, overlap: int) -> list[Draft]:
    """Passages: the blocks between two headings (a heading with what follows it) packed in order up to
    ``max_tokens``, in balanced parts when they do not fit in one; a block that does not fit alone is
    split first (``split_block``). A passage never reaches across a heading, and never ends with a heading or
    a lead-in, which belong to what they introduce."""
    groups: list[list[Piece]] = []
    under_heading: list[Piece] = []
    for index, block in enumerate(parsed.blocks):
        if block.kind == "heading" and under_heading:
            groups.extend(_balanced(parsed, under_heading, max_tokens))
            under_heading = []
        under_heading.extend(split_block(parsed, index, max_tokens, overlap))
    if under_heading:
        groups.extend(_balanced(parsed, under_heading, max_tokens))
    return [draft(parsed, "paragraph", pieces, _path_of(parsed, pieces), max_tokens) for pieces in groups]


def _path_of(parsed: ParsedDocument, pieces: list[Piece]) -> list[str]:
    """A passage's heading path: its heading's (it holds at most one, at its start); in source code, the
    first named block's."""
    if parsed.doc.doc_type != "code":
        return parsed.paths[pieces[-1].block]
    return next((parsed.paths[p.block] for p in pieces if parsed.paths[p.block]), [])


def _introduces(parsed: ParsedDocument, piece: Piece) -> bool:
    """A heading or a lead-in: it belongs with the piece that follows it."""
    block = parsed.blocks[piece.block]
    if block.kind == "heading":
        return True
    return (piece.pieces == 1 and block.kind == "paragraph"
            and parsed.block_tokens[piece.block] <= LEAD_IN_MAX_TOKENS
            and parsed.text[block.start : block.end].rstrip().endswith(":"))


def _balanced(parsed: ParsedDocument, pieces: list[Piece], max_tokens: int) -> list[list[Piece]]:
    """Consecutive ``pieces`` in passages of at most ``max_tokens``, balanced: ``n`` passages for pieces that
    need ``n``, each cut once it reaches their size ÷ ``n``."""
    total = sum(p.tokens for p in pieces) + GAP_TOKENS * (len(pieces) - 1)
    if total <= max_tokens:
        return [pieces]
    target = total / -(-total // max_tokens)
    groups: list[list[Piece]] = []
    current: list[Piece] = []
    size = 0
    for piece in pieces:
        if current and (size + GAP_TOKENS + piece.tokens > max_tokens or size >= target):
            carry: list[Piece] = []
            while current and _introduces(parsed, current[-1]):
                carry.insert(0, current.pop())
            carry_size = sum(p.tokens for p in carry) + GAP_TOKENS * len(carry)
            if carry and carry_size + piece.tokens > max_tokens:
                current, carry = current + carry, []  # it cannot join the next piece: it stays behind
            if current:
                groups.append(current)
            current = carry
            size = sum(p.tokens for p in current) + GAP_TOKENS * max(len(current) - 1, 0)
        size += piece.tokens + (GAP_TOKENS if current else 0)
        current.append(piece)
    if current:
        groups.append(current)
    return groups


def parts(parsed: ParsedDocument, granularity: str, passages: list[Draft], heading_path: list[str],
          max_tokens: int) -> list[Draft]:
    """One chunk over ``passages`` when it fits ``size_limit``, else consecutive parts cut at passage
    boundaries (preferring a cut before a heading once a part is half full)."""
    if not passages:
        return []
    limit = size_limit(granularity, max_tokens)
    groups: list[list[Draft]] = [[]]
    total = 0
    for passage in passages:
        current = groups[-1]
        starts_heading = parsed.blocks[passage.pieces[0].block].kind == "heading"
        over = total + passage.tokens + GAP_TOKENS > limit
        if current and (over or (starts_heading and total >= limit // 2)):
            groups.append([])
            total = 0
        groups[-1].append(passage)
        total += passage.tokens + GAP_TOKENS
    result: list[Draft] = []
    span = (passages[0].start, passages[-1].end)
    for i, group in enumerate(groups):
        part = draft_of_passages(parsed, granularity, group, heading_path)
        part.children = list(group)
        part.continued = i > 0
        part.oversized = part.tokens > limit and len(group) == 1 and group[0].oversized
        if len(groups) > 1:
            part.metadata.update(part=i + 1, parts=len(groups), section_start=span[0], section_end=span[1])
        result.append(part)
    return result


def sections(parsed: ParsedDocument, passages: list[Draft], max_tokens: int) -> tuple[list[Draft], list[list[Draft]]]:
    """Section parts (nested by heading level) and, per passage, the parts of every enclosing section."""
    blocks = parsed.blocks
    result: list[Draft] = []
    enclosing: list[list[Draft]] = [[] for _ in passages]
    first_block = [p.pieces[0].block for p in passages]
    headings = [i for i, b in enumerate(blocks) if b.kind == "heading"]
    # End block of each section: the next heading of the same or a higher level (one pass with a stack).
    section_end = dict.fromkeys(headings, len(blocks))
    open_sections: list[int] = []
    for h in headings:
        while open_sections and blocks[open_sections[-1]].level >= blocks[h].level:
            section_end[open_sections.pop()] = h
        open_sections.append(h)
    for h in headings:
        members = range(bisect_left(first_block, h), bisect_left(first_block, section_end[h]))
        section_parts = parts(parsed, "section", [passages[i] for i in members], parsed.paths[h], max_tokens)
        result.extend(section_parts)
        part_of = {id(c): part for part in section_parts for c in part.children}
        for i in members:
            enclosing[i].append(part_of[id(passages[i])])
    return result, enclosing
