"""Parse Markdown with markdown-it-py into top-level blocks with exact character offsets.

markdown-it reports line ranges (``token.map``); this module turns them into ``[start, end)`` character
spans of the original text (trailing blank lines trimmed) so chunks can be verbatim slices of the source.
Besides the top-level blocks, the parse keeps what the structure-integrity lint needs at every nesting
level: code fences, tables with their header and rows, outermost list items and prose paragraphs. The line
recognisers (``FENCE_LINE``, ``HEADING_LINE``, ``LIST_MARKER``, ``TABLE_DELIMITER_ROW``) serve the modules that
read Markdown a line at a time instead of parsing it.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.admon import admon_plugin
from mdit_py_plugins.front_matter import front_matter_plugin

from rag_core.tokens import get_encoding

_LINE_BREAK = re.compile(r"\r\n|\r|\n")

# One recogniser per Markdown construct for the code that reads Markdown line by line outside the parse (a model's
# answer, a chunk's text, a page questions are drafted from). Each is run with ``match`` on one line (no line break
# in it): anchored at its start, each takes time linear in the line (tests/test_linear_text.py).
FENCE_LINE = re.compile(r"^\s*(```|~~~)")  # a line opening or closing a code fence; group 1: its marker
HEADING_LINE = re.compile(r"^\s{0,3}(#{1,6})\s")  # an ATX heading's opening; group 1: its #s (the level)
LIST_MARKER = re.compile(r"^(\s*)([-*+]|\d+[.)])\s+")  # a list item's marker; groups: indentation, marker
TABLE_DELIMITER_ROW = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")  # ``| --- | :---: |`` (stripped)

# markdown-it block token type -> (block kind, chunk type)
_BLOCK_KINDS: dict[str, tuple[str, str]] = {
    "heading_open": ("heading", "heading"),
    "paragraph_open": ("paragraph", "prose"),
    "fence": ("fence", "code"),
    "code_block": ("code_block", "code"),
    "table_open": ("table", "table"),
    "bullet_list_open": ("list", "list"),
    "ordered_list_open": ("list", "list"),
    "blockquote_open": ("blockquote", "quote"),
    "admonition_open": ("admonition", "quote"),
    "front_matter": ("front_matter", "prose"),
    "html_block": ("html", "prose"),
    "hr": ("hr", "prose"),
}


@dataclass(slots=True)
class Block:
    """One top-level Markdown block: its kind, the chunk type it maps to, and its character span."""

    kind: str
    chunk_type: str
    start: int
    end: int
    level: int = 0  # heading level (1-6)
    title: str = ""  # heading text
    language: str | None = None  # fence info string's first word
    items: list[tuple[int, int]] = field(default_factory=list)  # list items or table body rows
    header: tuple[int, int] | None = None  # table: header row line
    delimiter: tuple[int, int] | None = None  # table: the |---| line
    fence_body: tuple[int, int] | None = None  # fence: span of the code between the fence lines
    no_cut: list[tuple[int, int]] = field(default_factory=list)  # nested fences a split must not enter


@dataclass(slots=True)
class TableSpan:
    start: int
    end: int
    header: tuple[int, int]
    delimiter: tuple[int, int]
    rows: list[tuple[int, int]]


@dataclass(slots=True)
class ParsedMarkdown:
    """Blocks plus the structural spans the lint checks, all as character offsets into ``text``."""

    text: str
    blocks: list[Block]
    fences: list[tuple[int, int]]
    tables: list[TableSpan]
    list_items: list[tuple[int, int]]
    headings: list[tuple[int, int, int]]  # top-level headings: (start, end, level)
    paragraphs: list[tuple[int, int]]  # prose paragraphs outside list items (sentence checks)


@lru_cache(maxsize=1)
def markdown_parser() -> MarkdownIt:
    """CommonMark + GFM tables + front matter + MkDocs admonitions, block level only.

    Inline parsing (links, emphasis) is switched off: chunking needs only block structure, and inline
    parsing is two thirds of markdown-it's time. Heading titles come from the raw inline content. The
    ``text_join`` core rule only post-processes inline children, so it is switched off with it.
    """
    return _block_parser(())


# Block rules that cannot match a text lacking all of the given substrings: a table's header line holds a
# "|", an admonition opens with "!!!" or "???", an HTML block starts with "<".
_RULE_NEEDS: dict[str, tuple[str, ...]] = {"table": ("|",), "admonition": ("!!!", "???"), "html_block": ("<",)}


@lru_cache(maxsize=8)
def _block_parser(skipped_rules: tuple[str, ...]) -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin).use(admon_plugin)
    return md.disable(["inline", "text_join", *skipped_rules])


# A thematic break ("hr") is a line ending with three or more of one marker (*, - or _) separated only by
# spaces or tabs (whatever list markers, quote marks or indentation precede it). A text without such a line
# end cannot hold one; the hr rule fails without side effects, so switching it off then changes no token.
_HR_TAIL = re.compile(r"([*_-])(?:[ \t]*\1){2,}[ \t]*$", re.MULTILINE)


def parser_for(text: str) -> MarkdownIt:
    """The block parser for ``text`` with the rules that cannot match it switched off.

    The tokens are the same as ``markdown_parser()``'s: every line tries each block rule (and each
    paragraph line tries the terminating ones), so dropping rules that must fail is a quarter of the parse.
    """
    skipped = tuple(rule for rule, needs in _RULE_NEEDS.items() if not any(n in text for n in needs))
    if "\r" not in text and _HR_TAIL.search(text) is None:  # "\r" line ends: not worth the care
        skipped = (*skipped, "hr")
    return _block_parser(skipped)


def line_starts(text: str) -> list[int]:
    """Character offset of each line start, counting line breaks the way markdown-it normalises them."""
    if "\r" not in text:  # the usual case: only "\n" breaks lines
        return [0, *accumulate(len(line) + 1 for line in text.split("\n")[:-1])]
    starts = [0]
    starts.extend(m.end() for m in _LINE_BREAK.finditer(text))
    return starts


def strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without the white space at either end (empty when it is all white space)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


class _Spans:
    """Turns markdown-it line ranges into trimmed character spans."""

    def __init__(self, text: str):
        self.text = text
        self.starts = line_starts(text)
        self._spans: dict[tuple[int, int], tuple[int, int]] = {}  # nested tokens share line ranges

    def offset(self, line: int) -> int:
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def span(self, line_map: list[int] | tuple[int, int]) -> tuple[int, int]:
        key = (line_map[0], line_map[1])
        found = self._spans.get(key)
        if found is not None:
            return found
        start = self.offset(key[0])
        end = self.offset(key[1])
        text = self.text
        while end > start and text[end - 1].isspace():
            end -= 1
        # Leading blank space inside the first line (indentation) stays: it is part of the block's source.
        found = self._spans[key] = (start, end)
        return found


def _close_index(tokens: list[Token], i: int) -> int:
    """Index of the token closing the block opened at ``tokens[i]``."""
    if tokens[i].nesting != 1:
        return i
    depth = 0
    for j in range(i, len(tokens)):
        depth += tokens[j].nesting
        if depth == 0:
            return j
    return len(tokens) - 1


def _fence_body(text: str, spans: _Spans, tok: Token, end: int) -> tuple[int, int]:
    """Span of the code between the opening and (when present) closing fence lines."""
    body_start = min(spans.offset(tok.map[0] + 1), end)
    last_line = spans.offset(tok.map[1] - 1)
    closed = tok.map[1] - 1 > tok.map[0] and text[last_line:end].strip().startswith(tok.markup)
    body_end = last_line if closed else end
    while body_end > body_start and text[body_end - 1] in "\r\n":
        body_end -= 1
    return body_start, max(body_start, body_end)


def _within(spans: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The spans (sorted by start) lying inside ``[start, end)``."""
    lo = bisect_left(spans, (start, -1))
    hi = bisect_left(spans, (end, -1))
    return [s for s in spans[lo:hi] if s[1] <= end]


def _child_spans(tokens: list[Token], i: int, j: int, spans: _Spans) -> list[tuple[int, int]]:
    """Spans of the direct child blocks of a container (quote, admonition): where it may be split."""
    level = tokens[i].level + 1
    children = [spans.span(t.map) for t in tokens[i + 1 : j] if t.level == level and t.map and t.nesting >= 0]
    return [c for c in children if c[1] > c[0]]


def _table_span(tokens: list[Token], i: int, j: int, spans: _Spans) -> TableSpan:
    start, end = spans.span(tokens[i].map)
    header = delimiter = None
    rows: list[tuple[int, int]] = []
    in_head = False
    for k in range(i + 1, j):
        tok = tokens[k]
        if tok.type == "thead_open":
            in_head = True
        elif tok.type == "thead_close":
            in_head = False
        elif tok.type == "tr_open" and tok.map:
            row = spans.span(tok.map)
            if in_head:
                header = row
                delimiter = spans.span((tok.map[1], tok.map[1] + 1))
            else:
                rows.append(row)
    if header is None or delimiter is None:  # cannot happen for a GFM table, kept defensive
        header = delimiter = (start, start)
    return TableSpan(start, end, header, delimiter, rows)


@lru_cache(maxsize=16)
def parse_markdown(text: str) -> ParsedMarkdown:
    """Parse ``text`` and return its top-level blocks and nested structural spans.

    Cached on the text (read-only result): re-chunking a document with other parameters, or linting it
    right after chunking, does not parse it again — parsing is most of the chunker's time.
    """
    tokens = parser_for(text).parse(text)
    spans = _Spans(text)
    blocks: list[Block] = []
    fences: list[tuple[int, int]] = []
    tables: list[TableSpan] = []
    list_items: list[tuple[int, int]] = []
    headings: list[tuple[int, int, int]] = []
    paragraphs: list[tuple[int, int]] = []

    span = spans.span
    item_depth = 0  # > 0 while inside a list item
    top_items: list[int] = []  # token indices of the items of top-level lists (level 1), in order
    top_level: list[int] = []  # token indices of the top-level blocks (openers and self-closed tokens)
    close_of: dict[int, int] = {}  # top-level opener index -> index of its closing token
    for i, tok in enumerate(tokens):
        if tok.level == 0:
            if tok.nesting >= 0:
                top_level.append(i)
            else:
                close_of[top_level[-1]] = i
        kind = tok.type
        if kind == "list_item_open":
            if tok.map:
                if item_depth == 0:
                    list_items.append(span(tok.map))
                if tok.level == 1:
                    top_items.append(i)
            item_depth += 1
        elif kind == "list_item_close":
            item_depth -= 1
        elif kind == "paragraph_open":
            if item_depth == 0 and tok.map:
                paragraphs.append(span(tok.map))
        elif kind == "fence":
            if tok.map:
                fences.append(span(tok.map))
        elif kind == "heading_open":
            if tok.map and tok.level == 0:
                s, e = span(tok.map)
                headings.append((s, e, int(tok.tag[1])))
        elif kind == "table_open" and tok.map:
            tables.append(_table_span(tokens, i, _close_index(tokens, i), spans))

    for i in top_level:
        tok = tokens[i]
        j = close_of.get(i, i if tok.nesting == 0 else len(tokens) - 1)
        kind_type = _BLOCK_KINDS.get(tok.type)
        if kind_type and tok.map:
            kind, chunk_type = kind_type
            start, end = span(tok.map)
            block = Block(kind, chunk_type, start, end)
            if kind == "heading":
                block.level = int(tok.tag[1])
                block.title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            elif kind == "fence":
                block.language = (tok.info.split() or [None])[0]
                block.fence_body = _fence_body(text, spans, tok, end)
            elif kind == "table":
                table = next(t for t in tables if t.start == start)
                block.items, block.header, block.delimiter = table.rows, table.header, table.delimiter
            elif kind == "list":
                # Level-1 items between the list's open and close tokens are its own items.
                first, last = bisect_right(top_items, i), bisect_left(top_items, j)
                block.items = [span(tokens[k].map) for k in top_items[first:last]]
            elif kind in ("blockquote", "admonition"):
                block.items = _child_spans(tokens, i, j, spans)
            if kind in ("list", "blockquote", "admonition"):
                block.no_cut = _within(fences, start, end) + _within(list_items, start, end)
            if end > start:
                blocks.append(block)
    return ParsedMarkdown(text, _fill_gaps(text, blocks), fences, tables, list_items, headings, paragraphs)


def _fill_gaps(text: str, blocks: list[Block]) -> list[Block]:
    """Source text that makes no token (link reference definitions such as ``[id]: https://…``) becomes a
    prose block of its own, so every non-blank character of the document belongs to some block."""
    filled: list[Block] = []
    position = 0
    for block in [*blocks, None]:
        start, end = strip_span(text, position, block.start if block is not None else len(text))
        if end > start:
            filled.append(Block("references", "prose", start, end))
        if block is not None:
            filled.append(block)
            position = max(position, block.end)
    return filled


@lru_cache(maxsize=16)
def markdown_block_tokens(text: str) -> tuple[int, ...]:
    """cl100k tokens of each block of ``parse_markdown(text)``, counted once per text (read-only, like the parse)."""
    encode = get_encoding().encode_ordinary
    return tuple(len(encode(text[b.start : b.end])) for b in parse_markdown(text).blocks)  # blocks are never empty
