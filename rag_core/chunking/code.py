"""Source code blocks: Python split at top-level ``def``/``class`` via ``ast``; other languages at
blank-line-separated top-level blocks; oversized code split at blank lines between top-level statements."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

from rag_core.chunking.markdown_blocks import line_starts

# A line that closes a block rather than starting a new top-level statement.
_CLOSER = re.compile(r"^\s*(?:[}\])]|end\b|fi\b|done\b|esac\b|</)")
_NAMED = re.compile(
    r"^\s*(?:export\s+|public\s+|private\s+|static\s+|async\s+|pub\s+|default\s+)*"
    r"(?:def|class|function|func|fn|interface|struct|enum|impl|trait|type|const|let|var|module)\s+([A-Za-z_$][\w$]*)"
)


@dataclass(slots=True)
class SourceBlock:
    """A top-level block of a source file: a function, a class, or a run of other statements."""

    start: int
    end: int
    name: str = ""  # "def load", "class Store" or "" for other statements


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while end > start and text[end - 1].isspace():
        end -= 1
    while start < end and text[start] in "\r\n":
        start += 1
    return start, end


def python_blocks(text: str) -> list[SourceBlock] | None:
    """Top-level blocks of Python source via ``ast``; None when the source does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    starts = line_starts(text)
    lines = text.splitlines()

    def offset(line_no: int) -> int:  # 1-based line number -> char offset of its start
        return starts[line_no - 1] if line_no - 1 < len(starts) else len(text)

    blocks: list[SourceBlock] = []
    pending_start: int | None = None  # first line of a run of plain statements
    pending_end = 0
    prev_end_line = 0
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        # Comment lines directly above a definition belong to it.
        while first - 1 > prev_end_line and lines[first - 2].lstrip().startswith("#"):
            first -= 1
        if prev_end_line == 0:
            first = 1  # a leading comment block or shebang belongs to the first block
        last = node.end_lineno or node.lineno
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if pending_start is not None:
                blocks.append(SourceBlock(*_trim(text, offset(pending_start), offset(pending_end + 1))))
                pending_start = None
            kind = "class" if isinstance(node, ast.ClassDef) else "def"
            blocks.append(SourceBlock(*_trim(text, offset(first), offset(last + 1)), name=f"{kind} {node.name}"))
        else:
            if pending_start is None:
                pending_start = first
            pending_end = last
        prev_end_line = last
    if pending_start is not None:
        blocks.append(SourceBlock(*_trim(text, offset(pending_start), offset(pending_end + 1))))
    tail = _trim(text, blocks[-1].end if blocks else 0, len(text))
    if tail[1] > tail[0]:
        blocks.append(SourceBlock(*tail))
    return [b for b in blocks if b.end > b.start]


def blank_line_blocks(text: str) -> list[SourceBlock]:
    """Top-level blocks of any language: a new block starts after a blank line at a non-indented line that
    does not close a bracket (``}``, ``end`` ...)."""
    starts = line_starts(text)
    lines = [text[starts[i] : (starts[i + 1] if i + 1 < len(starts) else len(text))] for i in range(len(starts))]
    blocks: list[SourceBlock] = []
    block_start: int | None = None
    after_blank = False
    for i, line in enumerate(lines):
        if not line.strip():
            after_blank = True
            continue
        top_level = not line[:1].isspace() and not _CLOSER.match(line)
        if block_start is None:
            block_start = starts[i]
        elif after_blank and top_level:
            blocks.append(SourceBlock(*_trim(text, block_start, starts[i])))
            block_start = starts[i]
        after_blank = False
    if block_start is not None:
        blocks.append(SourceBlock(*_trim(text, block_start, len(text))))
    for block in blocks:
        m = _NAMED.match(text[block.start : block.end])
        if m:
            block.name = m.group(0).strip()
    return [b for b in blocks if b.end > b.start]


def source_blocks(text: str, language: str | None) -> list[SourceBlock]:
    """Blocks of a source file: ``ast`` for Python (falls back to blank lines on a syntax error)."""
    if (language or "").lower() in ("python", "py"):
        blocks = python_blocks(text)
        if blocks is not None:
            return blocks
    return blank_line_blocks(text)


def split_code(
    text: str, start: int, end: int, max_tokens: int, count: Callable[[str], int]
) -> list[tuple[int, int, int]]:
    """Split ``text[start:end]`` into ``(start, end, tokens)`` pieces of at most ``max_tokens`` (when possible).

    Cut points, best first: a blank line followed by the least indented statement (top-level statements,
    then a class's methods, then blocks inside a body), then any line break. A piece that still does not
    fit is returned alone.
    """
    segment = text[start:end]
    rel_starts = line_starts(segment)
    line_spans = [(rel_starts[i], rel_starts[i + 1] if i + 1 < len(rel_starts) else len(segment))
                  for i in range(len(rel_starts))]
    # Rank of cutting before line i: the indentation of a statement that follows a blank line; any other line
    # break ranks last.
    any_line = 1 << 20
    ranks = [any_line] * len(line_spans)
    for i in range(1, len(line_spans)):
        line = segment[line_spans[i][0] : line_spans[i][1]]
        prev = segment[line_spans[i - 1][0] : line_spans[i - 1][1]]
        if line.strip() and not prev.strip() and not _CLOSER.match(line):
            ranks[i] = len(line) - len(line.lstrip())
    sizes = [count(segment[s:e]) for s, e in line_spans]
    prefix = [0]
    for size in sizes:
        prefix.append(prefix[-1] + size)

    pieces: list[tuple[int, int, int]] = []
    i, n = 0, len(line_spans)
    while i < n:
        j = i + 1
        while j < n and prefix[j + 1] - prefix[i] <= max_tokens:
            j += 1
        if j < n:
            # Move the cut back to the best-ranked line start in this piece, keeping it at least a quarter full.
            candidates = [k for k in range(i + 1, j + 1) if prefix[k] - prefix[i] >= max_tokens // 4]
            if candidates:
                best = min(ranks[k] for k in candidates)
                j = max(k for k in candidates if ranks[k] == best)
        s, e = _trim(segment, line_spans[i][0], line_spans[j - 1][1])
        if e > s:
            pieces.append((start + s, start + e, prefix[j] - prefix[i]))
        i = j
    return pieces
