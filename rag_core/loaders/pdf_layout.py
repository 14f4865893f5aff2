"""PDF text lines → Markdown blocks: paragraphs from line spacing, headings (document outline, else font size,
weight and numbering), lists, code (monospaced lines) and tables, so PDFs chunk like Markdown.

Pure functions on ``Line``/``Table`` records that ``rag_core.loaders.pdf`` reads from the file with pdfplumber;
each emitted block keeps the page of every line so the document's page map can be built exactly.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from rag_core.loaders.formats import markdown_table

HEADING_SIZE_RATIO = 1.12  # a line this much larger than body text may be a heading
MAX_HEADING_CHARS = 200
MAX_HEADING_LINES = 3
CODE_MONO_SHARE = 0.9  # share of a group's characters in a monospaced font that makes it code
_NUMBERED_HEADING_RE = re.compile(r"^(?:\d{1,3}(?:\.\d{1,3})*\.?|[A-Z](?:\.\d{1,3})+\.?|[A-Z]\.|[IVX]{1,5}\.)\s+\S")
_BULLET_RE = re.compile(r"^([•◦▪▫‣⁃●○■□–—*·-])\s+")
_ORDERED_RE = re.compile(r"^((?:\d{1,3}|[a-z]|[ivx]{1,4})[.)]|\((?:\d{1,3}|[a-z]|[ivx]{1,4})\))\s+")
_HYPHEN_END_RE = re.compile(r"[A-Za-zÀ-ÿ]-$")
_MARKDOWN_START_RE = re.compile(r"^(?:#{1,6}(?:\s|$)|[-+*](?:\s|$)|[>|<]|`{3,}|~{3,}|=+\s*$|-{3,}\s*$|_{3,}\s*$"
                                r"|\*{3,}\s*$|\[[^\]]*\]:)")
_ORDERED_START_RE = re.compile(r"^(\d{1,9})([.)])(\s|$)")


@dataclass(slots=True)
class Line:
    """One text line of a page, with the font facts the layout rules use."""

    page: int
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    size: float  # the most common size of its non-monospaced characters (of all characters if none)
    bold: bool  # every non-space character is bold
    mono_share: float  # share of characters in a monospaced font
    char_width: float = 0.0  # mean character width (indentation of code)
    bullet: bool = False  # a bullet shape (not a character) sits just left of the line


@dataclass(slots=True)
class Table:
    page: int
    top: float
    rows: list[list[str]]


@dataclass(slots=True)
class Group:
    """Consecutive lines forming one block (or one list item); ``kind`` is set by ``classify``."""

    lines: list[Line]
    kind: str = "paragraph"  # paragraph | heading | item | code | table
    level: int = 0
    table: Table | None = None
    marker: str = ""  # list item marker ("1." for ordered items, "" for bullets)

    @property
    def page(self) -> int:
        return self.table.page if self.table else self.lines[0].page

    @property
    def text(self) -> str:
        return " ".join(line.text for line in self.lines)


@dataclass(slots=True)
class OutlineEntry:
    title: str
    level: int
    page: int  # 1-based; 0 when the destination's page is unknown


@dataclass(slots=True)
class Layout:
    """The Markdown text, its page map (``[offset, page]`` pairs) and counts for the metadata."""

    text: str
    pages: list[list[int]]
    counts: dict[str, int] = field(default_factory=dict)


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def body_size(lines: list[Line]) -> float:
    """The font size of most characters of running text (monospaced lines left out)."""
    sizes: Counter[float] = Counter()
    for line in lines:
        if line.mono_share < 0.5:
            sizes[round(line.size * 2) / 2] += len(line.text)
    if not sizes:
        sizes.update(round(line.size * 2) / 2 for line in lines)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _gap_ratio(lines: list[Line], body: float) -> float:
    """Typical space between two lines of one paragraph of body text, as a share of the font size."""
    gaps = [(b.top - a.bottom) / body for a, b in zip(lines, lines[1:], strict=False)
            if a.page == b.page and abs(a.size - body) < 0.6 and abs(b.size - body) < 0.6
            and -0.2 * body < b.top - a.bottom < 0.9 * body]
    return max(statistics.median(gaps), 0.0) if gaps else 0.25


def _style(line: Line, body: float) -> tuple[bool, bool]:
    """(larger than body, bold): a change of either starts a new group."""
    return line.size >= body * HEADING_SIZE_RATIO, line.bold


def _item_marker(line: Line) -> tuple[str, str] | None:
    """(marker, text without a bullet character) when the line starts a list item."""
    if line.bullet:
        return "", line.text
    if match := _BULLET_RE.match(line.text):
        return "", line.text[match.end():]
    if match := _ORDERED_RE.match(line.text):
        return match.group(1), line.text[match.end():]
    return None


def group_lines(lines: list[Line], body: float) -> list[Group]:
    """Cut the line stream into groups at wide gaps, style changes, list markers and page breaks."""
    ratio = _gap_ratio(lines, body)
    groups: list[Group] = []
    group_code = False  # every line of the current group is monospaced
    for line in lines:
        previous = groups[-1].lines[-1] if groups else None
        mono = line.mono_share >= CODE_MONO_SHARE
        new = previous is None or previous.page != line.page
        if not new:
            size = max(min(previous.size, line.size), 1.0)
            gap = line.top - previous.bottom
            # The group so far is code when all its lines are (a paragraph ending in a line of inline code is not).
            code = mono and group_code
            limit = size * (2.6 if code else max(2 * ratio, ratio + 0.35))
            # Code starts or ends a group only after more than a line's spacing: a prose line that is all
            # inline code (a long path) stays in its paragraph.
            code_change = mono != group_code and gap > size * (ratio + 0.15)
            new = (gap > limit or code_change or _style(line, body) != _style(previous, body)
                   or (not code and _item_marker(line) is not None) or (not code and line.x0 < previous.x0 - 2 * size))
        if new:
            groups.append(Group([line]))
            group_code = mono
        else:
            groups[-1].lines.append(line)
            group_code = group_code and mono
    return groups


def _heading_candidate(group: Group, body: float) -> bool:
    text = group.text
    if len(group.lines) > MAX_HEADING_LINES or len(text) > MAX_HEADING_CHARS or not re.search(r"[^\W\d_]", text):
        return False
    first = group.lines[0]
    if (first.mono_share >= CODE_MONO_SHARE and first.size < body * HEADING_SIZE_RATIO
            and not _code_heading(group)):
        return False
    larger = first.size >= body * HEADING_SIZE_RATIO
    return larger or (first.bold and len(group.lines) <= 2 and not text.rstrip().endswith((".", ":", ",", ";")))


def _code_heading(group: Group) -> bool:
    """One bold monospaced line on its own: a heading that is a name in code (``init_typed``), not a code block."""
    return len(group.lines) == 1 and group.lines[0].bold and group.lines[0].mono_share >= CODE_MONO_SHARE


def _numbering_depth(text: str) -> int:
    match = _NUMBERED_HEADING_RE.match(text)
    if not match:
        return 0
    return match.group(0).rstrip().rstrip(".").count(".") + 1 if match.group(0)[0].isdigit() else 1


def _match_outline(groups: list[Group], outline: list[OutlineEntry]) -> dict[int, int]:
    """Group index → outline level, matching each entry's title to a short group on (or just after) its page,
    in document order."""
    found: dict[int, int] = {}
    position = 0
    for entry in outline:
        title = _norm(entry.title)
        if not title:
            continue
        for index in range(position, len(groups)):
            group = groups[index]
            if group.table is not None or (entry.page and group.page < entry.page):
                continue
            if entry.page and group.page > entry.page + 1:
                break
            text = _norm(group.text)
            if text == title or (len(group.lines) <= MAX_HEADING_LINES and text.startswith(title)
                                 and len(text) <= len(title) + 12):
                found[index] = entry.level
                position = index + 1
                break
    return found


def classify(groups: list[Group], body: float, outline: list[OutlineEntry]) -> None:
    """Set each group's kind and heading level."""
    for group in groups:
        if group.table is not None:
            group.kind = "table"
            continue
        mono = sum(line.mono_share * len(line.text) for line in group.lines)
        if mono >= CODE_MONO_SHARE * sum(len(line.text) for line in group.lines) and not _code_heading(group):
            group.kind = "code"
        elif (marker := _item_marker(group.lines[0])) is not None and not _heading_candidate(group, body):
            group.kind, group.marker = "item", marker[0]
            if not group.lines[0].bullet and marker[0] == "":
                group.lines[0].text = marker[1]
    matched = _match_outline(groups, outline) if outline else {}
    candidates = [i for i, g in enumerate(groups) if g.kind in ("paragraph", "item") and _heading_candidate(g, body)]

    def style(i: int) -> tuple[float, bool]:
        return round(groups[i].lines[0].size * 2) / 2, groups[i].lines[0].bold

    if matched:
        # The outline is authoritative; numbered headings it leaves out (deeper levels) join in when they look
        # like an outlined heading's style and numbering says how deep they sit.
        depth_level = {}
        for i, level in matched.items():
            if depth := _numbering_depth(groups[i].text):
                depth_level.setdefault(depth, level - depth)
        styles = {style(i) for i in matched}
        offset = Counter(depth_level.values()).most_common(1)[0][0] if depth_level else 0
        for i in candidates:
            if i not in matched and (depth := _numbering_depth(groups[i].text)) and style(i) in styles:
                matched[i] = min(max(depth + offset, 1), 6)
        levels = matched
    else:
        ranked = sorted({style(i) for i in candidates}, key=lambda s: (-s[0], not s[1]))
        rank = {s: n + 1 for n, s in enumerate(ranked)}
        levels = {i: min(rank[style(i)], 6) for i in candidates}
        numbered = {i: _numbering_depth(groups[i].text) for i in candidates}
        if sum(1 for d in numbered.values() if d) >= max(3, len(candidates) // 2):
            # A numbered document: "2.1." is one level below "2." whatever the fonts say.
            base = (min(rank[style(i)] for i, d in numbered.items() if d)
                    - min(d for d in numbered.values() if d))
            levels = {i: min(max((d + base) if d else levels[i], 1), 6) for i, d in numbered.items()}
    for i, level in levels.items():
        groups[i].kind, groups[i].level, groups[i].marker = "heading", level, ""


def merge_across_pages(groups: list[Group]) -> list[Group]:
    """Join a paragraph or code block that a page break cut in two (the next page continues it)."""
    merged: list[Group] = []
    for group in groups:
        previous = merged[-1] if merged else None
        if (previous is not None and previous.kind == group.kind and group.page == previous.lines[-1].page + 1
                and previous.table is None and group.table is None):
            last, first = previous.lines[-1], group.lines[0]
            continues = (group.kind == "code" or (group.kind == "paragraph" and abs(first.size - last.size) < 0.6
                         and not last.text.rstrip().endswith((".", "!", "?", ":"))
                         and first.text[:1].islower()))
            if continues:
                previous.lines.extend(group.lines)
                continue
        merged.append(group)
    return merged


def escape_start(text: str) -> str:
    """Escape what would make a line of prose Markdown syntax (a heading, list, quote, table, fence, HTML)."""
    if match := _ORDERED_START_RE.match(text):
        return f"{match.group(1)}\\{text[len(match.group(1)):]}"
    if _MARKDOWN_START_RE.match(text):
        return "\\" + text
    return text


def _join(lines: list[Line], pieces: list[tuple[str, int]]) -> None:
    """Lines of prose as one line: a hyphen at a line end before a lowercase letter joins the word."""
    for i, line in enumerate(lines):
        text = line.text.strip()
        if i and pieces:
            prev_text, prev_page = pieces[-1]
            if _HYPHEN_END_RE.search(prev_text) and text[:1].islower():
                pieces[-1] = (prev_text[:-1], prev_page)
            else:
                pieces.append((" ", line.page))
        pieces.append((text, line.page))


def _code_pieces(lines: list[Line]) -> list[tuple[str, int]]:
    left = min(line.x0 for line in lines)
    widths = [line.char_width for line in lines if line.char_width > 0]
    char = statistics.median(widths) if widths else 6.0
    pitches = [b.top - a.top for a, b in zip(lines, lines[1:], strict=False) if a.page == b.page and b.top > a.top]
    pitch = min(pitches) if pitches else 0.0
    pieces: list[tuple[str, int]] = []
    for i, line in enumerate(lines):
        if i:
            previous = lines[i - 1]
            blank = 0
            if pitch and previous.page == line.page:
                blank = max(int(round((line.top - previous.top) / pitch)) - 1, 0)
            pieces.append(("\n" * (1 + min(blank, 3)), line.page))
        indent = int(round((line.x0 - left) / char)) if char else 0
        pieces.append((" " * min(indent, 40) + line.text.rstrip(), line.page))
    return pieces


def _fence(pieces: list[tuple[str, int]]) -> list[tuple[str, int]]:
    body = "".join(p for p, _ in pieces)
    longest = max((len(m) for m in re.findall(r"`{3,}", body)), default=2)
    ticks = "`" * max(3, longest + 1)
    page = pieces[0][1]
    return [(ticks + "\n", page), *pieces, ("\n" + ticks, pieces[-1][1])]


def _item_levels(items: list[Group]) -> list[int]:
    lefts = sorted({round(g.lines[0].x0) for g in items})
    levels, stops = [], []
    for left in lefts:
        if not stops or left - stops[-1] > 4:
            stops.append(left)
    for g in items:
        x = round(g.lines[0].x0)
        levels.append(min(max((n for n, stop in enumerate(stops) if stop <= x + 4), default=0), 5))
    return levels


def render(groups: list[Group]) -> Layout:
    """Markdown for classified groups, with the offset where each page's text starts."""
    blocks: list[list[tuple[str, int]]] = []
    separators: list[str] = []
    i = 0
    counts = Counter()
    while i < len(groups):
        group = groups[i]
        if group.kind == "item":
            run = [group]
            while i + 1 < len(groups) and groups[i + 1].kind == "item":
                i += 1
                run.append(groups[i])
            for n, (item, level) in enumerate(zip(run, _item_levels(run), strict=True)):
                pieces: list[tuple[str, int]] = []
                _join(item.lines, pieces)
                first = pieces[0][0]
                number = item.marker.strip("()").rstrip(".)")
                if number.isdigit() and first.startswith(item.marker):
                    first, marker = first[len(item.marker):].lstrip(), f"{number}."
                else:
                    marker = "-"  # a bullet, or a lettered/roman marker kept in the text
                pieces[0] = ("    " * level + marker + " " + escape_start(first), pieces[0][1])
                blocks.append(pieces)
                separators.append("\n" if n else "\n\n")
            counts["list_items"] += len(run)
        elif group.kind == "table":
            table, _ = markdown_table(group.table.rows)
            blocks.append([(table, group.page)])
            separators.append("\n\n")
            counts["tables"] += 1
        elif group.kind == "code":
            blocks.append(_fence(_code_pieces(group.lines)))
            separators.append("\n\n")
            counts["code_blocks"] += 1
        else:
            pieces = []
            _join(group.lines, pieces)
            if group.kind == "heading":
                text = re.sub(r"\s+", " ", "".join(p for p, _ in pieces)).strip().rstrip("#").strip()
                pieces = [("#" * group.level + " " + text, group.page)]
                counts["headings"] += 1
            elif pieces:
                pieces[0] = (escape_start(pieces[0][0]), pieces[0][1])
            blocks.append(pieces)
            separators.append("\n\n")
        i += 1
    text_parts: list[str] = []
    page_map: list[list[int]] = []
    offset = 0
    for n, (pieces, separator) in enumerate(zip(blocks, separators, strict=True)):
        if n:
            text_parts.append(separator)
            offset += len(separator)
        for piece, page in pieces:
            if not page_map or page_map[-1][1] != page:
                page_map.append([offset, page])
            text_parts.append(piece)
            offset += len(piece)
    return Layout("".join(text_parts) + "\n", page_map, dict(counts))

