"""Converters for DOCX (python-docx), CSV (a Markdown table) and plain text, and the PDF page map (PDF itself:
``pdf``).

Each returns the Markdown/plain text the chunker reads plus metadata (page map, warnings); each turns the
library's failures into a ``LoadError`` that names the file and says what to do.
"""

from __future__ import annotations

import csv
import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from rag_core.config import get_settings
from rag_core.errors import LoadError
from rag_core.loaders.zipread import InflateLimit, expansion_budget, human_bytes, iter_member

# A DOCX is a ZIP; refuse archives that would inflate past these bounds before handing them to a parser.
MAX_DOCX_UNCOMPRESSED = 200 * 1024 * 1024
MAX_DOCX_RATIO = 200
MAX_DOCX_MEMBERS = 5000
MAX_PDF_PAGES = 5000
# Paragraph styles Word and common templates use for source code; consecutive ones become one fenced block.
CODE_STYLES = frozenset({"code", "source code", "html preformatted", "plain text", "macro text", "code block",
                         "verbatim", "preformatted text"})
_WHITESPACE_RE = re.compile(r"\s+")


@dataclass(slots=True)
class Converted:
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _table_cell(text: str) -> str:
    """One Markdown table cell: single line, pipes and backslashes escaped (fast path for plain cells)."""
    if "\n" in text or "\r" in text or "\t" in text or "  " in text:
        text = _WHITESPACE_RE.sub(" ", text)
    text = text.strip()
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    return text.replace("|", "\\|") if "|" in text else text


def markdown_table(rows: list[list[str]]) -> tuple[str, int]:
    """A GFM table whose first row is the header; returns the table and how many short rows were padded."""
    width = max(len(r) for r in rows)
    padded = sum(1 for r in rows[1:] if len(r) < width)
    header = [_table_cell(c) for c in rows[0]] + [f"Column {i + 1}" for i in range(len(rows[0]), width)]
    header = [h or f"Column {i + 1}" for i, h in enumerate(header)]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * width) + "|"]
    for row in rows[1:]:
        cells = [_table_cell(c) for c in row] + [""] * (width - len(row))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), padded


# ---------------------------------------------------------------------------------------------------- PDF


def page_of(document_metadata: dict[str, Any], offset: int) -> int | None:
    """The page number holding character ``offset`` of a PDF document's text (None for other documents)."""
    pages = document_metadata.get("pages") or []
    found = None
    for start, number in pages:
        if start > offset:
            break
        found = number
    return found


# --------------------------------------------------------------------------------------------------- DOCX


def zip_expansion(infos: list[zipfile.ZipInfo], max_total: int, max_ratio: float) -> tuple[int, int] | None:
    """``(declared size, compressed size)`` of ZIP members that would expand past ``max_total`` bytes, or past
    10 MB at more than ``max_ratio`` times their compressed size (a zip bomb); None within the limits. The one rule
    for uploaded ZIPs of folders and for DOCX files (each with its own limits and message)."""
    total = sum(i.file_size for i in infos)
    compressed = sum(i.compress_size for i in infos) or 1
    if total > max_total or (total > 10 * 1024 * 1024 and total / compressed > max_ratio):
        return total, compressed
    return None


def check_zip_bomb(name: str, data: bytes) -> None:
    """Refuse a DOCX that would inflate to something huge, before python-docx opens it.

    First by the sizes its parts declare, then by what they really inflate to: every part is streamed (and thrown
    away) under the byte budget, and a part whose real size differs from its header is refused, so the parser, which
    reads parts whole, only ever inflates the checked sizes (a 37 KB file whose part lied took 1 GB).
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise LoadError(f"{name}: the DOCX is corrupt (not a readable ZIP archive).") from e
    if len(infos) > MAX_DOCX_MEMBERS:
        raise LoadError(f"{name}: the DOCX holds {len(infos)} parts (limit {MAX_DOCX_MEMBERS}); refusing it.")
    expands = zip_expansion(infos, MAX_DOCX_UNCOMPRESSED, MAX_DOCX_RATIO)
    if expands:
        total, compressed = expands
        raise LoadError(f"{name}: the DOCX would expand to {total / 1024 / 1024:.0f} MB from "
                        f"{compressed / 1024:.0f} KB (a zip bomb?); refusing to open it.")
    budget = expansion_budget(len(data), MAX_DOCX_UNCOMPRESSED, MAX_DOCX_RATIO)
    inflated = 0
    for info in infos:
        try:
            for piece in iter_member(data, info, budget - inflated):
                inflated += len(piece)
        except InflateLimit as e:
            raise LoadError(f"{name}: the DOCX inflates to more than {human_bytes(budget)} from "
                            f"{human_bytes(len(data))} (a zip bomb?); refusing to open it.") from e
        except (zipfile.BadZipFile, NotImplementedError, ValueError) as e:
            raise LoadError(f"{name}: the DOCX is corrupt (part {info.filename}: {e}); "
                            "open it in Word and save it again.") from e


def _outline_level(paragraph) -> int | None:
    """Heading level from ``w:outlineLvl`` on the paragraph or its style chain (localised Word names its heading
    styles "Überschrift 1", "Titre 1" …, but the outline level is the same); None for body text."""
    # lazy: python-docx is heavy, imported only where it is used
    from docx.oxml.ns import qn

    elements = [paragraph._p]
    style, seen = paragraph.style, 0
    while style is not None and seen < 10:
        elements.append(style.element)
        style, seen = style.base_style, seen + 1
    for element in elements:
        found = element.find(qn("w:pPr") + "/" + qn("w:outlineLvl"))
        if found is not None:
            value = str(found.get(qn("w:val")))
            return int(value) + 1 if value.isdigit() and int(value) < 9 else None
    return None


def _docx_paragraph(paragraph, numbered_counters: dict[int, int], heading_shift: int = 0) -> str:
    # lazy: python-docx is heavy, imported only where it is used
    from docx.oxml.ns import qn

    text = paragraph.text.replace("\r", "").strip()
    if not text:
        return ""
    style = (paragraph.style.name if paragraph.style is not None else "") or ""
    lower = style.lower()
    match = re.match(r"heading\s*(\d)", lower)
    level = int(match.group(1)) if match else _outline_level(paragraph)
    if level:
        return "#" * min(level + heading_shift, 6) + " " + re.sub(r"\s+", " ", text)
    if lower == "title":
        return "# " + re.sub(r"\s+", " ", text)
    num_pr = paragraph._p.find(qn("w:pPr") + "/" + qn("w:numPr")) if paragraph._p.pPr is not None else None
    if lower.startswith("list") or num_pr is not None:
        level = 0
        if num_pr is not None:
            ilvl = num_pr.find(qn("w:ilvl"))
            if ilvl is not None and str(ilvl.get(qn("w:val"))).isdigit():
                level = min(int(ilvl.get(qn("w:val"))), 8)
        digits = re.search(r"(\d)$", lower)
        if digits and not lower.startswith("list number"):
            level = max(level, int(digits.group(1)) - 1)
        text = re.sub(r"\s+", " ", text)
        if lower.startswith("list number"):
            numbered_counters[level] = numbered_counters.get(level, 0) + 1
            return "   " * level + f"{numbered_counters[level]}. {text}"
        return "  " * level + "- " + text
    numbered_counters.clear()
    return text


def _fenced(code: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}\n{code.strip(chr(10))}\n{ticks}"


def convert_docx(name: str, data: bytes) -> Converted:
    """Headings by style level → ``#`` (one level deeper under a Title), tables → Markdown tables, list
    paragraphs → ``- `` items."""
    check_zip_bomb(name, data)
    # lazy: python-docx is heavy, imported only where it is used
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
        # A Title paragraph is the level above Heading 1, so sections under the title nest under it.
        has_title = any((p.style.name or "").lower() == "title" for p in document.paragraphs if p.style is not None)
        heading_shift = 1 if has_title else 0
        blocks: list[str] = []
        counters: dict[int, int] = {}
        warnings: list[str] = []
        code_lines: list[str] = []
        for element in document.element.body.iterchildren():
            tag = element.tag.rsplit("}", 1)[-1]
            paragraph = Paragraph(element, document) if tag == "p" else None
            style = (paragraph.style.name or "").lower() if paragraph is not None and paragraph.style else ""
            if paragraph is not None and style in CODE_STYLES:
                code_lines.append(paragraph.text.replace("\r", "").rstrip())
                continue
            if code_lines:  # consecutive code-styled paragraphs form one fenced block
                blocks.append(_fenced("\n".join(code_lines)))
                code_lines = []
            if paragraph is not None:
                line = _docx_paragraph(paragraph, counters, heading_shift)
                if line:
                    blocks.append(line)
            elif tag == "tbl":
                counters.clear()
                rows = [[cell.text for cell in row.cells] for row in Table(element, document).rows]
                rows = [r for r in rows if any(c.strip() for c in r)]
                if rows:
                    table, padded = markdown_table(rows)
                    blocks.append(table)
                    if padded:
                        warnings.append(f"{padded} short table rows padded")
        if code_lines:
            blocks.append(_fenced("\n".join(code_lines)))
    except LoadError:
        raise
    except Exception as e:  # python-docx raises KeyError/ValueError/lxml errors on damaged parts
        raise LoadError(f"{name}: the DOCX is corrupt or not a Word document ({type(e).__name__}: {e}).") from e
    # Consecutive list items form one list; everything else is separated by a blank line.
    text = ""
    previous_kind = None
    for block in blocks:
        item = re.match(r"^\s*(- |\d+\. )", block)
        kind = None if item is None else ("bullet" if item.group(1) == "- " else "number")
        if text:
            text += "\n" if kind is not None and kind == previous_kind else "\n\n"
        text += block
        previous_kind = kind
    if not text.strip():
        raise LoadError(f"{name}: the DOCX has no text.")
    return Converted(text + "\n", {}, warnings)


# ---------------------------------------------------------------------------------------------------- CSV


def convert_plain(name: str, text: str) -> Converted:
    """Text and source code as they are: the chunker reads the file's own text."""
    return Converted(text)


def convert_csv_file(name: str, text: str) -> Converted:
    """A CSV or TSV file (``.tsv``: tab-separated, else the delimiter is sniffed), cut at ``RAG_MAX_CSV_ROWS``."""
    delimiter = "\t" if PurePosixPath(name).suffix.lower() == ".tsv" else None
    return convert_csv(name, text, delimiter=delimiter, max_rows=get_settings().max_csv_rows)


def convert_csv(name: str, text: str, delimiter: str | None = None, max_rows: int | None = None) -> Converted:
    """A Markdown table with the first row as header; ragged rows padded and reported; rows past ``max_rows``
    cut, with a warning saying so (each row becomes chunks to embed: an unbounded file was minutes of work)."""
    sample = text[:16384]
    if delimiter is None:
        try:
            delimiter = csv.Sniffer().sniff(sample, delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    try:
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter, strict=False) if row]
    except csv.Error as e:
        raise LoadError(f"{name}: the CSV cannot be parsed ({e}); check its quoting.") from e
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise LoadError(f"{name}: the CSV has no rows.")
    cut = []
    if max_rows is not None and len(rows) - 1 > max_rows:
        cut = [f"only the first {max_rows:,} of {len(rows) - 1:,} rows were loaded (limit RAG_MAX_CSV_ROWS); "
               "split the file to load the rest"]
        rows = rows[: max_rows + 1]
    width = max(len(r) for r in rows)
    long_rows = sum(1 for r in rows[1:] if len(r) > len(rows[0]))
    table, padded = markdown_table(rows)
    warnings = list(cut)
    if padded:
        warnings.append(f"{padded} ragged CSV rows padded")
    if long_rows:
        warnings.append(f"{long_rows} CSV rows longer than the header (extra columns named)")
    metadata = {"rows": len(rows) - 1, "columns": width, "delimiter": delimiter}
    return Converted(table + "\n", metadata, warnings)
