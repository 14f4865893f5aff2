"""Split stage: each block as pieces of at most ``max_tokens`` (a block that fits is one piece).

An oversized block is cut where its structure allows: prose between sentences with overlap, code at blank lines
(a fence's pieces re-fenced), tables between rows with the header repeated, lists and quotes between items.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_core.chunking.code import split_code
from rag_core.chunking.parse import GAP_TOKENS, ParsedDocument
from rag_core.chunking.sentences import pack_sentences, sentence_spans
from rag_core.tokens import count_tokens


@dataclass(slots=True)
class Piece:
    """A whole block, or one of the consecutive pieces of a block larger than ``max_tokens``."""

    block: int
    start: int
    end: int
    text: str
    tokens: int
    verbatim: bool = True
    oversized: bool = False
    continued: bool = False
    piece: int = 0
    pieces: int = 1


def split_block(parsed: ParsedDocument, index: int, max_tokens: int, overlap: int) -> list[Piece]:
    """Block ``index`` as pieces of at most ``max_tokens``; one that cannot be cut is one oversized piece."""
    text = parsed.text
    block, tokens = parsed.blocks[index], parsed.block_tokens[index]
    block_text = text[block.start : block.end]
    if tokens <= max_tokens:
        return [Piece(index, block.start, block.end, block_text, tokens)]
    if block.kind == "fence" and block.fence_body:
        pieces = _split_fence(parsed, index, max_tokens)
    elif block.kind in ("code_block", "source"):
        spans = split_code(text, block.start, block.end, max_tokens, count_tokens)
        pieces = [Piece(index, s, e, text[s:e], t, oversized=t > max_tokens) for s, e, t in spans]
    elif block.kind == "table" and block.items:
        pieces = _split_rows(parsed, index, max_tokens)
    elif block.kind == "list" or (block.kind in ("blockquote", "admonition") and len(block.items) > 1):
        pieces = _split_items(parsed, index, max_tokens)
    else:
        sentences = sentence_spans(text, block.start, block.end, block.no_cut)
        runs = pack_sentences(text, sentences, max_tokens, overlap, count_tokens)
        pieces = [Piece(index, r.start, r.end, text[r.start : r.end], r.tokens, oversized=r.oversized) for r in runs]
    if len(pieces) <= 1:
        return [Piece(index, block.start, block.end, block_text, tokens, oversized=True)]
    for i, piece in enumerate(pieces):
        piece.piece, piece.pieces = i, len(pieces)
        piece.continued = piece.continued or i > 0
    return pieces


def _split_fence(parsed: ParsedDocument, index: int, max_tokens: int) -> list[Piece]:
    block = parsed.blocks[index]
    budget = max(max_tokens - parsed.fence_lines_tokens(block) - 2, 1)
    body_start, body_end = block.fence_body
    pieces = []
    for s, e, _ in split_code(parsed.text, body_start, body_end, budget, count_tokens):
        piece_text = parsed.refence(block, s, e)
        tokens = count_tokens(piece_text)
        pieces.append(Piece(index, s, e, piece_text, tokens, verbatim=False, oversized=tokens > max_tokens,
                            continued=True))
    return pieces


def _split_rows(parsed: ParsedDocument, index: int, max_tokens: int) -> list[Piece]:
    text, block = parsed.text, parsed.blocks[index]
    header = parsed.table_header(block)
    header_tokens = count_tokens(header) + GAP_TOKENS
    row_tokens = parsed.row_tokens(index)
    pieces: list[Piece] = []
    for i, j, total in _runs(row_tokens, max_tokens, header_tokens):
        last_end = block.items[j - 1][1]
        if not pieces:
            pieces.append(Piece(index, block.start, last_end, text[block.start : last_end], total))
        else:
            start = block.items[i][0]
            pieces.append(Piece(index, start, last_end, f"{header}\n{text[start:last_end]}", total, verbatim=False))
        pieces[-1].oversized = total > max_tokens
    return pieces


def _split_items(parsed: ParsedDocument, index: int, max_tokens: int) -> list[Piece]:
    text, block = parsed.text, parsed.blocks[index]
    sizes = [count_tokens(text[s:e]) + GAP_TOKENS for s, e in block.items]
    pieces: list[Piece] = []
    for i, j, total in _runs(sizes, max_tokens, 0):
        start = block.start if i == 0 else block.items[i][0]
        end = block.items[j - 1][1]
        pieces.append(Piece(index, start, end, text[start:end], total, oversized=total > max_tokens))
    return pieces


def _runs(sizes: list[int], max_tokens: int, base: int) -> list[tuple[int, int, int]]:
    """Consecutive ``[i, j)`` runs of items, each as many as fit ``max_tokens`` on top of ``base`` (at least one),
    with their total."""
    runs = []
    i = 0
    while i < len(sizes):
        j, total = i, base
        while j < len(sizes) and (j == i or total + sizes[j] <= max_tokens):
            total += sizes[j]
            j += 1
        runs.append((i, j, total))
        i = j
    return runs
