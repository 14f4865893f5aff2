"""What a question can be drafted from: a document's sections (by its Markdown headings) and, in each, the sentences,
list items, table rows and code lines that can serve as verbatim evidence spans.

Headings follow the evidence-span datasets' own rule (``../shared/datasets/*/validate.py``): ATX headings outside
fenced code, the ``{ #anchor }`` suffix removed; a span's ``heading_path`` is the heading stack at its position.
Every span is a slice of the document's text, so it is verbatim by construction (and checked again).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from rag_core.chunking.markdown_blocks import FENCE_LINE, HEADING_LINE, LIST_MARKER

MIN_SPAN_CHARS = 40  # the datasets' minimum span length
MAX_SPAN_CHARS = 360

_ANCHOR = re.compile(r"\s*\{\s*#[^}]*\}\s*$")
# Looser than markdown_blocks.TABLE_DELIMITER_ROW on purpose: inside a table every line of only pipes, colons,
# dashes and blanks is skipped, a delimiter row with cells of one or two dashes (valid GFM) and an empty row alike,
# so neither becomes a table's header or a question's row.
_TABLE_RULE = re.compile(r"^\|?[\s:|-]+\|?$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`*\"(\[])")
_SKIP_LINE = re.compile(r"^\s*(\{\*|///|!!!|\?\?\?|<|!\[|\[\^|-{3,}\s*$|={3,}\s*$)")
_SPACES = re.compile(r"\s+")
_MARKUP = re.compile(r"[*`]|\[([^\]]*)\]\([^)]*\)|<[^>]+>")  # not "_": it belongs to identifiers
IDENTIFIER = re.compile(r"`([A-Za-z_][A-Za-z0-9_.\-]{2,38}(?:\(\))?)`")
_DEFINITION = re.compile(
    r"^(?:An? |The )?((?:\*\*|`)?[A-Za-z][\w .\-]{1,38}?(?:\*\*|`)?) (?:is|are|means|refers to) "
    r"(?:an? |the |used |how |what |when )",
)
_CODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{3,}")
STOPWORDS = frozenset(
    "about above after again also always another because been before being below between both cannot could does doing "
    "down during each every from further have having here into itself just more most much must need only other over "
    "same should some such than that their them then there these they this those through under until upon very were "
    "what when where which while will with within without would your yours you'll it's that's there's don't can't "
    "using used make makes made like want wants example examples first second next last case note notes tip tips "
    "info well even still thing things something anything way ways here's let's know part parts section page "
    "docs documentation".split()
)


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip: the datasets' matching rule."""
    return _SPACES.sub(" ", text).strip()


def plain(text: str) -> str:
    """Heading or cell text without Markdown emphasis (``*``), code marks, links and HTML tags."""
    return normalize_ws(_MARKUP.sub(lambda m: m.group(1) or "", text))


@dataclass(slots=True)
class Span:
    """A verbatim slice of a document: ``doc_text[start:end] == text``; ``kind`` is what it is."""

    text: str
    start: int
    kind: str  # sentence | item | step | row | code
    context: str = ""  # a table's header row, for rows


@dataclass(slots=True)
class Section:
    """The text under one heading (up to the next heading of any level), with its evidence spans."""

    doc_index: int
    file: str
    heading_path: list[str]
    start: int
    end: int
    spans: list[Span] = field(default_factory=list)

    @property
    def title(self) -> str:
        return plain(self.heading_path[-1]) if self.heading_path else topic_of_file(self.file)


def topic_of_file(name: str) -> str:
    """``tutorial/query-params.md`` → ``query params``."""
    stem = PurePosixPath(name.replace("\\", "/")).stem
    return normalize_ws(re.sub(r"[-_.]+", " ", stem)) or name


def _heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line in the validators' rule: its # in the first column, not indented."""
    mark = HEADING_LINE.match(line)
    return (len(mark.group(1)), line[mark.end():].strip()) if mark and line.startswith("#") else None


def _list_item(line: str) -> re.Match[str] | None:
    """The marker of a list item line with words after it; a number of four digits or more ("2024. was ...") is a
    year opening a sentence, not a step."""
    item = LIST_MARKER.match(line)
    return item if item and len(item.group(2)) <= 4 and item.end() < len(line) else None


def headings(text: str) -> list[tuple[int, int, str]]:
    """(offset, level, title) of the ATX headings outside fenced code (the validators' rule)."""
    found: list[tuple[int, int, str]] = []
    fence: str | None = None
    offset = 0
    for line in text.splitlines(keepends=True):
        mark = FENCE_LINE.match(line)
        if mark:
            if fence is None:
                fence = mark.group(1)
            elif mark.group(1) == fence:
                fence = None
        elif fence is None:
            heading = _heading(line.rstrip("\n"))
            if heading:
                found.append((offset, heading[0], _ANCHOR.sub("", heading[1]).strip()))
        offset += len(line)
    return found


def sections(doc_index: int, file: str, text: str) -> list[Section]:
    """The document cut at its headings; the text before the first heading is a section with an empty path."""
    marks = headings(text)
    result: list[Section] = []
    stack: list[tuple[int, str]] = []
    bounds = [(0, None)] + [(offset, (level, title)) for offset, level, title in marks]
    for position, (offset, heading) in enumerate(bounds):
        end = bounds[position + 1][0] if position + 1 < len(bounds) else len(text)
        if heading is not None:
            level, title = heading
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title))
            body_start = text.find("\n", offset, end)
            body_start = end if body_start < 0 else body_start + 1
        else:
            body_start = 0
        if body_start >= end:
            continue
        section = Section(doc_index, file, [t for _, t in stack], body_start, end)
        section.spans = list(_spans(text, body_start, end))
        if section.spans:
            result.append(section)
    return result


def _good(span: str) -> bool:
    return MIN_SPAN_CHARS <= len(span) <= MAX_SPAN_CHARS and len(WORD.findall(span)) >= 4


def _spans(text: str, start: int, end: int) -> Iterator[Span]:
    """Sentences of prose paragraphs, list items, table rows (not the header or rule) and code lines."""
    fence: str | None = None
    paragraph: list[tuple[int, str]] = []
    table_header = ""
    offset = start
    for line in text[start:end].splitlines(keepends=True):
        here, body = offset, line.rstrip("\n")
        offset += len(line)
        mark = FENCE_LINE.match(line)
        if mark or fence is not None:
            yield from _sentences(paragraph)
            paragraph = []
            if mark and fence is None:
                fence = mark.group(1)
            elif mark and mark.group(1) == fence:
                fence = None
            else:
                code = body.strip()
                if _good(code) and not code.startswith("#") and "{!" not in code and "docs_src" not in code:
                    yield Span(code, here + body.index(code), "code")
            continue
        stripped = body.strip()
        if not stripped or _SKIP_LINE.match(body) or _heading(body):
            yield from _sentences(paragraph)
            paragraph = []
            table_header = "" if not stripped.startswith("|") else table_header
            continue
        if stripped.startswith("|"):
            yield from _sentences(paragraph)
            paragraph = []
            if _TABLE_RULE.match(stripped):
                continue
            if not table_header:
                table_header = stripped
            elif _good(stripped):
                yield Span(stripped, here + body.index(stripped), "row", table_header)
            continue
        table_header = ""
        item = _list_item(body)
        if item:
            yield from _sentences(paragraph)
            paragraph = []
            if _good(stripped):
                yield Span(stripped, here + len(item.group(1)), "step" if item.group(2)[0].isdigit() else "item")
            continue
        paragraph.append((here, body))
    yield from _sentences(paragraph)


def _sentences(lines: list[tuple[int, str]]) -> Iterator[Span]:
    """The sentences of one prose paragraph (consecutive lines), each a slice of the document."""
    if not lines:
        return
    first = lines[0][0]
    joined = "".join(body + "\n" for _, body in lines)  # the paragraph exactly as in the document
    cursor = 0
    for piece in _SENTENCE_END.split(joined):
        at = joined.index(piece, cursor)
        cursor = at + len(piece)
        sentence = piece.strip()
        if _good(sentence) and not sentence.endswith(":") and "{*" not in sentence:
            yield Span(sentence, first + at + (len(piece) - len(piece.lstrip())), "sentence")


def definition_subject(sentence: str) -> str | None:
    """``X`` of a sentence ``X is a …`` / ``X means …``, or None."""
    match = _DEFINITION.match(sentence)
    if not match:
        return None
    subject = plain(match.group(1))
    return subject if 2 <= len(subject) <= 40 and subject.lower() not in ("it", "this", "that", "there") else None


def identifiers(text: str) -> list[str]:
    """The inline-code identifiers of ``text`` (``name``, ``obj.attr``, ``func()``), in order, without repeats."""
    return list(dict.fromkeys(m.group(1) for m in IDENTIFIER.finditer(text)))


def code_names(text: str) -> list[str]:
    """Names in a line of code (``tsdb_path``, ``client.get``, ``RateLimitedError``), in order, without repeats."""
    return list(dict.fromkeys(m.group(0) for m in _CODE_NAME.finditer(text)))


def keywords(text: str) -> list[str]:
    """Lower-cased content words of ``text`` (no stop words), in order, without repeats."""
    words = (w.lower() for w in WORD.findall(plain(text)))
    return list(dict.fromkeys(w for w in words if w not in STOPWORDS))
