"""Structure-integrity lint: where a list of chunks cuts code, tables, list items, headings or sentences.

The lint re-parses the document itself and checks chunk boundaries against that parse, so it judges any
chunker's output (ours, the fixed baseline, LangChain or Chonkie chunks mapped to spans) the same way and
never trusts a chunk's own flags. Over-long chunks made of a single atomic unit (one code fence, one table
row, one list item, one sentence) are reported apart as ``oversized_atomic``: they are flagged, not violations.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, field

from rag_core.chunking.code import source_blocks
from rag_core.chunking.markdown_blocks import ParsedMarkdown, markdown_parser, parse_markdown
from rag_core.chunking.sentences import sentence_spans
from rag_core.chunking.structure import size_limit
from rag_core.loaders.front_matter import without_front_matter
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Document

LINT_KINDS: tuple[str, ...] = (
    "code_fence_cut",
    "table_cut_or_headerless_row",
    "list_item_cut",
    "heading_not_at_start",
    "sentence_cut",
    "over_max_tokens",
)
OVERSIZED_KIND = "oversized_atomic"
_BLANK_BEFORE = re.compile(r"\n[ \t]*\r?\n[ \t]*$")
_BLANK_AFTER = re.compile(r"[ \t]*\r?\n[ \t]*\r?\n")


@dataclass(slots=True)
class Violation:
    """One finding: its kind, the chunk, the span of the structure concerned, and a readable detail."""

    kind: str
    chunk_id: str
    start: int
    end: int
    detail: str


@dataclass(slots=True)
class LintReport:
    """Violation counts per kind (``total`` excludes ``oversized_atomic``, which is listed apart)."""

    counts: dict[str, int]
    violations: list[Violation] = field(default_factory=list)
    oversized: list[Violation] = field(default_factory=list)
    chunks: int = 0

    @property
    def total(self) -> int:
        return sum(n for kind, n in self.counts.items() if kind != OVERSIZED_KIND)

    def to_dict(self) -> dict:
        return {
            "counts": dict(self.counts),
            "total": self.total,
            "oversized_atomic": len(self.oversized),
            "chunks": self.chunks,
            "violations": [asdict(v) for v in self.violations],
            "oversized": [asdict(v) for v in self.oversized],
        }


class _Spans:
    """Non-overlapping spans sorted by start, with 'which span strictly contains this offset' lookups."""

    def __init__(self, spans: list[tuple[int, int]], text: str = ""):
        # Leading indentation is not content: a chunk starting at an indented item's first character is fine.
        self.spans = sorted((s + len(text[s:e]) - len(text[s:e].lstrip()), e) for s, e in spans)
        self.starts = [s for s, _ in self.spans]

    def containing(self, offset: int) -> int | None:
        i = bisect_left(self.starts, offset) - 1  # last span starting strictly before offset
        if i >= 0 and offset < self.spans[i][1]:
            return i
        return None

    def overlapping(self, start: int, end: int) -> list[tuple[int, int]]:
        i = max(bisect_right(self.starts, start) - 1, 0)
        return [(s, e) for s, e in self.spans[i : bisect_left(self.starts, end)] if s < end and e > start]


class _Linter:
    def __init__(self, doc: Document, max_tokens: int | None):
        self.doc = doc
        self.text = doc.text
        self.max_tokens = max_tokens
        self.counts = dict.fromkeys((*LINT_KINDS, OVERSIZED_KIND), 0)
        self.violations: list[Violation] = []
        self.oversized: list[Violation] = []
        self._sentences: dict[tuple[int, int], list[tuple[int, int]]] = {}
        if doc.doc_type == "code":
            self.parsed: ParsedMarkdown | None = None
            self.code = _Spans([(u.start, u.end) for u in source_blocks(doc.text, doc.language)], doc.text)
            self.fences = self.tables_spans = self.items = self.paragraphs = _Spans([])
            self.tables = []
            self.headings: list[tuple[int, int, int]] = []
        else:
            self.parsed = parse_markdown(without_front_matter(doc))
            self.code = _Spans([])
            self.fences = _Spans(self.parsed.fences, doc.text)
            self.tables = sorted(self.parsed.tables, key=lambda t: t.start)
            self.tables_spans = _Spans([(t.start, t.end) for t in self.tables])
            self.items = _Spans(self.parsed.list_items, doc.text)
            self.paragraphs = _Spans(self.parsed.paragraphs, doc.text)
            self.headings = sorted(self.parsed.headings)
        self.heading_starts = [h[0] for h in self.headings]

    def add(self, kind: str, chunk: Chunk, span: tuple[int, int], detail: str) -> None:
        self.counts[kind] += 1
        target = self.oversized if kind == OVERSIZED_KIND else self.violations
        target.append(Violation(kind, chunk.id, span[0], span[1], detail))

    def bounds(self, chunk: Chunk) -> tuple[int, int]:
        """Chunk span with surrounding whitespace trimmed (a boundary in blank space cuts nothing)."""
        a, b = max(chunk.start, 0), min(chunk.end, len(self.text))
        while a < b and self.text[a].isspace():
            a += 1
        while b > a and self.text[b - 1].isspace():
            b -= 1
        return a, b

    def sentences(self, paragraph: tuple[int, int]) -> list[tuple[int, int]]:
        if paragraph not in self._sentences:
            self._sentences[paragraph] = sentence_spans(self.text, *paragraph)
        return self._sentences[paragraph]

    # ---- checks on verbatim chunks ---------------------------------------------------------------------

    def check_boundaries(self, chunk: Chunk, a: int, b: int) -> None:
        for x in (a, b):
            i = self.fences.containing(x)
            if i is not None:
                self.add("code_fence_cut", chunk, self.fences.spans[i], f"chunk boundary at {x} inside a code fence")
            i = self.code.containing(x)
            if i is not None and not self._code_cut_allowed(i, x):
                self.add("code_fence_cut", chunk, self.code.spans[i], f"chunk boundary at {x} inside a code unit")
            i = self.items.containing(x)
            if i is not None:
                self.add("list_item_cut", chunk, self.items.spans[i], f"chunk boundary at {x} inside a list item")
            i = self.paragraphs.containing(x)
            if i is not None and not self._at_sentence_boundary(self.paragraphs.spans[i], x):
                self.add("sentence_cut", chunk, self.paragraphs.spans[i], f"chunk boundary at {x} inside a sentence")
        i = self.tables_spans.containing(a)
        if i is not None:
            self.add("table_cut_or_headerless_row", chunk, self.tables_spans.spans[i],
                     f"chunk starts at {a} inside a table, without its header row")
        i = self.tables_spans.containing(b)
        if i is not None:
            table = self.tables[i]
            row_ends = {e for _, e in table.rows}
            if b not in row_ends:
                self.add("table_cut_or_headerless_row", chunk, (table.start, table.end),
                         f"chunk ends at {b} in the middle of a table row")
        self.check_headings(chunk, a, b)

    def _code_cut_allowed(self, index: int, x: int) -> bool:
        """Inside a unit of a source file, a cut is allowed only when the unit is too big, and then after a
        blank line, or at a line start: data files and long functions (a JSON document, a generated table) can
        hold more than the maximum without a blank line, and the chunker then cuts between lines. A cut inside
        a line is always a violation."""
        s, e = self.code.spans[index]
        if self.max_tokens is None or count_tokens(self.text[s:e]) <= self.max_tokens:
            return False
        if _BLANK_BEFORE.search(self.text, s, x) or _BLANK_AFTER.match(self.text, x, e):
            return True
        line_start = self.text.rfind("\n", s, x) + 1 or s
        line_end = self.text.find("\n", x, e)
        return not self.text[line_start:x].strip() or not self.text[x : e if line_end < 0 else line_end].strip()

    def _at_sentence_boundary(self, paragraph: tuple[int, int], x: int) -> bool:
        for s, e in self.sentences(paragraph):
            if s < x < e:
                return False
        return True

    def check_headings(self, chunk: Chunk, a: int, b: int) -> None:
        lo = bisect_right(self.heading_starts, a)
        hi = bisect_left(self.heading_starts, b)
        if lo >= hi or chunk.granularity == "document":
            return
        allowed_below = None  # headings deeper than this level may sit inside a section chunk
        if chunk.granularity == "section":
            allowed_below = self._section_level(chunk, a)
        for s, e, level in self.headings[lo:hi]:
            if allowed_below is not None and level > allowed_below:
                continue
            self.add("heading_not_at_start", chunk, (s, e), f"heading at {s} is inside the chunk, not at its start")

    def _section_level(self, chunk: Chunk, a: int) -> int | None:
        """Level of the heading a section chunk (or the section a continued part belongs to) starts with."""
        start = chunk.metadata.get("section_start", a) if chunk.metadata else a
        k = bisect_right(self.heading_starts, start) - 1
        if k >= 0 and self.headings[k][0] >= start - 1:
            return self.headings[k][2]
        return None

    # ---- checks on synthesised chunks -----------------------------------------------------------------

    def check_synthesised(self, chunk: Chunk) -> None:
        if self.fences.overlapping(chunk.start, chunk.end) and _has_unclosed_fence(chunk.text):
            self.add("code_fence_cut", chunk, (chunk.start, chunk.end), "synthesised chunk has an unclosed code fence")
        for i, (s, e) in enumerate(self.tables_spans.spans):
            if s < chunk.end and chunk.start < e:
                table = self.tables[i]
                header = self.text[table.header[0] : table.header[1]].strip()
                if header not in chunk.text:
                    self.add("table_cut_or_headerless_row", chunk, (s, e), "table rows without the header row")

    # ---- size -------------------------------------------------------------------------------------------

    def check_size(self, chunk: Chunk, a: int, b: int) -> None:
        if self.max_tokens is None:
            return
        limit = size_limit(chunk.granularity, self.max_tokens)
        if chunk.tokens <= limit:
            return
        units = self.atomic_units(a, b)
        detail = f"{chunk.tokens} tokens > {limit}"
        if len(units) <= 1:
            self.add(OVERSIZED_KIND, chunk, units[0] if units else (a, b), f"{detail}, one atomic block")
        else:
            self.add("over_max_tokens", chunk, (a, b), f"{detail}, {len(units)} blocks that could be split apart")

    def atomic_units(self, a: int, b: int) -> list[tuple[int, int]]:
        units = self.fences.overlapping(a, b) + self.items.overlapping(a, b) + self.code.overlapping(a, b)
        for table in self.tables:
            if table.start < b and a < table.end:
                units += [(s, e) for s, e in table.rows if s < b and a < e]
        for paragraph in self.paragraphs.overlapping(a, b):
            units += [(s, e) for s, e in self.sentences(paragraph) if s < b and a < e]
        # A fence inside a list item is part of that item, not a unit of its own.
        return [u for u in units if not any(o != u and o[0] <= u[0] and u[1] <= o[1] for o in units)]


def _has_unclosed_fence(text: str) -> bool:
    """True when a code fence in ``text`` runs to the end without its closing line."""
    for token in markdown_parser().parse(text):
        if token.type == "fence" and token.map:
            lines = text.splitlines()[token.map[0] : token.map[1]]
            closing = lines[-1].strip() if len(lines) > 1 else ""
            if not (closing.startswith(token.markup) and not closing.strip(token.markup[0])):
                return True
    return False


def lint(doc: Document, chunks: list[Chunk], max_tokens: int | None = None) -> LintReport:
    """Structure-integrity findings of ``chunks`` over ``doc`` (size checks only when ``max_tokens`` is given)."""
    linter = _Linter(doc, max_tokens)
    for chunk in chunks:
        a, b = linter.bounds(chunk)
        if b <= a:
            continue
        verbatim = chunk.verbatim and doc.text[chunk.start : chunk.end] == chunk.text
        if verbatim:
            linter.check_boundaries(chunk, a, b)
        else:
            linter.check_synthesised(chunk)
        linter.check_size(chunk, a, b)
    return LintReport(linter.counts, linter.violations, linter.oversized, len(chunks))
