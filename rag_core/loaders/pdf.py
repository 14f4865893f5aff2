"""PDF → Markdown that keeps the structure: pypdf opens and checks the file and reads its outline; pdfplumber
(on pdfminer.six) gives every character's font and position, and finds ruled tables; ``pdf_layout`` turns the
lines into headings, paragraphs, lists, code and tables. Running headers, footers and page numbers are dropped
from the text (the page map in the metadata keeps the pages).

Bad input: encrypted, corrupt or over-long files, content streams that inflate past pypdf's limits, and PDFs
without a text layer each get a message that says what to do. If pdfplumber cannot lay a readable file out,
the text comes from pypdf page by page (no structure) with a warning.
"""

from __future__ import annotations

import io
import logging
import re
import zipfile
from collections import Counter
from typing import Any

from rag_core.errors import LoadError
from rag_core.loaders.formats import MAX_PDF_PAGES, Converted
from rag_core.loaders.pdf_layout import (
    CODE_MONO_SHARE,
    Group,
    Line,
    OutlineEntry,
    Table,
    body_size,
    classify,
    group_lines,
    merge_across_pages,
    render,
)

MAX_OUTLINE_ENTRIES = 10_000
MAX_OUTLINE_DEPTH = 12
MARGIN_SHARE = 0.1  # running headers/footers live in the top or bottom tenth of the page
EDGE_SHARE = 0.035  # small print this close to the edge is furniture even when it does not repeat
SMALL_PRINT_RATIO = 0.85  # "small": at most this share of the body text size
FURNITURE_PAGE_SHARE = 0.5  # ... and repeat at the same place on at least half of the pages
MAX_BULLET_SIZE = 8.0  # a filled shape this small just left of a line is a list bullet
_BOLD_RE = re.compile(r"bold|black|heavy|semibold|demi", re.I)
_MONO_RE = re.compile(r"mono|courier|consol|code|menlo|monaco|typewriter|fixed|cmtt|nimbusmon|lucidacons", re.I)
_ROMAN = r"(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})"
_PAGE_NUMBER_RE = re.compile(rf"^(?:page\s+)?[-–—(]?\s*(?:\d{{1,5}}|{_ROMAN})\s*[-–—)]?"
                             r"(?:\s*(?:/|of)\s*\d{1,5})?$", re.I)
_CID_RE = re.compile(r"\(cid:\d+\)")  # a glyph without a Unicode mapping (an emoji, a symbol font)
_PDF_ERRORS: tuple[type[BaseException], ...] = (ValueError, KeyError, TypeError, AttributeError, IndexError,
                                                AssertionError, OSError, RecursionError, zipfile.BadZipFile)


def is_pdf(data: bytes) -> bool:
    """A PDF header at the start, or (the spec allows leading junk) in the first 1 KB of a file ending in %%EOF.

    The second condition keeps a Markdown note that merely mentions "%PDF-" from being read as a PDF.
    """
    head = data[:1024]
    return head.lstrip().startswith(b"%PDF-") or (b"%PDF-" in head and b"%%EOF" in data[-2048:])


def convert_pdf(name: str, data: bytes) -> Converted:
    """Markdown for a PDF; ``metadata["pages"]`` maps text offsets to page numbers."""
    # lazy: pypdf is heavy, imported only where it is used
    from pypdf.errors import LimitReachedError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns loudly on harmless quirks
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    try:
        reader, encrypted = _open(name, data)
        n_pages = len(reader.pages)
        if n_pages > MAX_PDF_PAGES:
            raise LoadError(f"{name}: the PDF has {n_pages} pages; the limit is {MAX_PDF_PAGES}. Split it first.")
        for page in reader.pages:  # pypdf refuses streams that inflate past its limits (a decompression bomb)
            page.get_contents()
        outline = _outline(reader)
    except LoadError:
        raise
    except LimitReachedError as e:
        raise LoadError(f"{name}: the PDF has content that inflates past the safe limit (a decompression bomb?); "
                        f"refusing it ({e}).") from e
    except (PyPdfError, *_PDF_ERRORS) as e:
        raise LoadError(f"{name}: the PDF is corrupt or truncated and cannot be read ({type(e).__name__}: {e}).") from e
    warnings: list[str] = []
    try:
        lines, tables, read_pages = _read_pages(data, "" if encrypted else None)
    except Exception as e:  # pdfminer's own exception types vary by version; pypdf already read the file
        lines, tables, read_pages = [], [], None
        warnings.append(f"the page layout could not be read ({type(e).__name__}); text kept without structure")
    if read_pages is None:
        converted = _plain_text(name, reader)
    else:
        converted = _structured(name, lines, tables, outline, read_pages)
    converted.metadata["page_count"] = n_pages
    converted.warnings[:0] = warnings
    title = _title(reader)
    if title:
        converted.metadata["title"] = title
    if encrypted:
        converted.metadata["encrypted"] = "opened with an empty password"
    return converted


def _open(name: str, data: bytes):
    # lazy: pypdf is heavy, imported only where it is used
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(data))
        encrypted = reader.is_encrypted
        if encrypted:
            try:
                unlocked = reader.decrypt("")
            except (DependencyError, NotImplementedError) as e:
                raise LoadError(f"{name}: the PDF is encrypted with a cipher we cannot open; "
                                "save an unencrypted copy and upload that.") from e
            if not unlocked:
                raise LoadError(f"{name}: the PDF is password-protected (encrypted); "
                                "remove the password (e.g. print to PDF) and upload it again.")
    except FileNotDecryptedError as e:
        raise LoadError(f"{name}: the PDF is password-protected (encrypted); remove the password and retry.") from e
    return reader, encrypted


def _title(reader) -> str:
    try:
        return ((reader.metadata.title or "").strip() if reader.metadata else "")[:200]
    except Exception:  # a damaged info dictionary must not lose the text we already have
        return ""


def _outline(reader) -> list[OutlineEntry]:
    """The document outline (bookmarks) flattened in order, depth-limited; empty when missing or damaged."""
    try:
        root = reader.outline
    except Exception:  # a broken outline only costs the outline
        return []
    entries: list[OutlineEntry] = []
    stack: list[tuple[list, int, int]] = [(root, 0, 1)]
    while stack and len(entries) < MAX_OUTLINE_ENTRIES:
        items, index, level = stack.pop()
        if index >= len(items):
            continue
        stack.append((items, index + 1, level))
        item = items[index]
        if isinstance(item, list):
            if level < MAX_OUTLINE_DEPTH:
                stack.append((item, 0, level + 1))
            continue
        try:
            title = str(item.title or "").strip()
            page = reader.get_destination_page_number(item) + 1
        except Exception:
            title, page = str(getattr(item, "title", "") or "").strip(), 0
        if title:
            entries.append(OutlineEntry(title, level, max(page, 0)))
    return entries


def _line(page_number: int, raw: dict[str, Any], bullets: list[tuple[float, float, float]]) -> Line | None:
    chars = [c for c in raw.get("chars", []) if c.get("upright", True) and str(c.get("text", "")).strip()
             and not _CID_RE.fullmatch(str(c.get("text", "")))]
    text = re.sub(r"\s+", " ", _CID_RE.sub("", str(raw.get("text", "")).replace("\x00", ""))).strip()
    if not chars or not text:
        return None
    mono = [bool(_MONO_RE.search(str(c.get("fontname", "")))) for c in chars]
    prose = [c for c, m in zip(chars, mono, strict=True) if not m] or chars
    size = Counter(round(float(c.get("size", 0)), 1) for c in prose).most_common(1)[0][0]
    bold = all(_BOLD_RE.search(str(c.get("fontname", ""))) for c in prose)
    x0, top, bottom = float(raw["x0"]), float(raw["top"]), float(raw["bottom"])
    middle = (top + bottom) / 2
    bullet = any(x1 <= x0 + 1 and x0 - x1 < 3 * size and abs(mid - middle) < size * 0.6 for x1, mid, _ in bullets)
    widths = sorted(float(c["x1"]) - float(c["x0"]) for c in chars)
    char_width = widths[len(widths) // 2]
    mono_share = sum(mono) / len(mono)
    if mono_share >= CODE_MONO_SHARE and char_width > 0:
        text = _columns(chars, x0, char_width)
    return Line(page_number, text, x0, float(raw["x1"]), top, bottom, size, bold, mono_share, char_width, bullet)


def _columns(chars: list[dict[str, Any]], left: float, width: float) -> str:
    """A monospaced line with its inner spacing kept: each character at its column (code alignment)."""
    out: list[str] = []
    for char in sorted(chars, key=lambda c: float(c["x0"])):
        column = int(round((float(char["x0"]) - left) / width))
        if column > len(out):
            out.extend(" " * min(column - len(out), 200))
        out.append(str(char["text"]))
    return "".join(out).rstrip()


def _read_pages(data: bytes, password: str | None) -> tuple[list[Line], list[Table], int]:
    """Text lines outside tables, the tables, and the page count, page by page (cache freed as it goes)."""
    # lazy: pdfplumber is heavy, imported only where it is used
    import pdfplumber

    lines: list[Line] = []
    tables: list[Table] = []
    heights: dict[int, float] = {}
    with pdfplumber.open(io.BytesIO(data), password=password) as pdf:
        for number, page in enumerate(pdf.pages, start=1):
            page_tables = _tables(page, number)
            boxes = [box for box, _ in page_tables]
            tables.extend(table for _, table in page_tables)

            def outside(obj, boxes=boxes) -> bool:
                if obj.get("object_type") != "char":
                    return True
                x, y = (obj["x0"] + obj["x1"]) / 2, (obj["top"] + obj["bottom"]) / 2
                return not any(b[0] <= x <= b[2] and b[1] <= y <= b[3] for b in boxes)

            view = page.filter(outside) if boxes else page
            bullets = [(float(s["x1"]), (float(s["top"]) + float(s["bottom"])) / 2, float(s["width"]))
                       for s in (*page.curves, *page.rects)
                       if 1.5 <= float(s["width"]) <= MAX_BULLET_SIZE and 1.5 <= float(s["height"]) <= MAX_BULLET_SIZE]
            for raw in view.extract_text_lines(x_tolerance_ratio=0.15, return_chars=True, strip=True):
                line = _line(number, raw, bullets)
                if line is not None:
                    lines.append(line)
            heights[number] = float(page.height)
            page.close()
        count = len(pdf.pages)
    return _drop_furniture(lines, heights), tables, count


def _tables(page, number: int) -> list[tuple[tuple[float, float, float, float], Table]]:
    """Ruled tables (pdfplumber's finder) with at least two rows and two columns; a single framed box (a code
    block's background, a callout) is not a table."""
    found = []
    for table in page.find_tables():
        rows = [[re.sub(r"\s+", " ", cell or "").strip() for cell in row] for row in table.extract()]
        rows = [row for row in rows if any(row)]
        if len(rows) >= 2 and max(len(r) for r in rows) >= 2:
            found.append((table.bbox, Table(number, float(table.bbox[1]), rows)))
    return found


def _drop_furniture(lines: list[Line], heights: dict[int, float]) -> list[Line]:
    """Remove page numbers and running headers/footers: lines in the top or bottom margin that repeat (digits
    ignored) at about the same height on at least half of the pages, lone page numbers there, and small print
    at the very edge (a one-page document's header cannot repeat)."""
    def in_margin(line: Line, share: float = MARGIN_SHARE) -> bool:
        height = heights.get(line.page, 0.0)
        return line.bottom <= height * share or line.top >= height * (1 - share)

    small = body_size(lines) * SMALL_PRINT_RATIO if lines else 0.0

    def key(line: Line) -> tuple[str, int]:
        return re.sub(r"\d+", "#", line.text.lower()), int(line.top // 8)

    pages_with_text = len({line.page for line in lines})
    seen: dict[tuple[str, int], set[int]] = {}
    for line in lines:
        if in_margin(line):
            seen.setdefault(key(line), set()).add(line.page)
    threshold = max(2, FURNITURE_PAGE_SHARE * pages_with_text)
    repeated = {k for k, pages in seen.items() if len(pages) >= threshold and pages_with_text >= 2}
    return [line for line in lines
            if not (in_margin(line) and (key(line) in repeated or _PAGE_NUMBER_RE.match(line.text)))
            and not (in_margin(line, EDGE_SHARE) and line.size <= small and line.mono_share < 0.5)]


def _structured(name: str, lines: list[Line], tables: list[Table], outline: list[OutlineEntry],
                n_pages: int) -> Converted:
    if not lines and not tables:
        raise LoadError(f"{name}: the PDF has no extractable text (no text layer: a scanned image?). No OCR is "
                        "available here; run OCR on it first (e.g. ocrmypdf) and upload the result.")
    body = body_size(lines) if lines else 10.0
    groups = group_lines(lines, body)
    groups.extend(Group([], table=table) for table in tables)
    groups.sort(key=lambda g: (g.page, g.table.top if g.table else g.lines[0].top))
    classify(groups, body, outline)
    layout = render(merge_across_pages(groups))
    pages_with_text = len({line.page for line in lines} | {table.page for table in tables})
    metadata: dict[str, Any] = {"pages": layout.pages, "structure": layout.counts}
    if outline:
        metadata["outline_entries"] = len(outline)
    empty = n_pages - pages_with_text
    warnings = [f"{empty} PDF page(s) without extractable text skipped"] if empty else []
    return Converted(layout.text, metadata, warnings)


def _plain_text(name: str, reader) -> Converted:
    """pypdf's text page by page (no structure): the fallback when the layout cannot be read."""
    # lazy: pypdf is heavy, imported only where it is used
    from pypdf.errors import PyPdfError

    parts: list[str] = []
    pages: list[list[int]] = []
    offset = 0
    try:
        for number, page in enumerate(reader.pages, start=1):
            page_text = (page.extract_text() or "").replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
            page_text = page_text.strip()
            if not page_text:
                continue
            if parts:
                offset += 2  # the blank line between pages
            pages.append([offset, number])
            parts.append(page_text)
            offset += len(page_text)
    except (PyPdfError, *_PDF_ERRORS) as e:
        raise LoadError(f"{name}: the PDF is corrupt or truncated and cannot be read ({type(e).__name__}: {e}).") from e
    if not parts:
        raise LoadError(f"{name}: the PDF has no extractable text (a scanned image?); run OCR on it first.")
    empty = len(reader.pages) - len(pages)
    warnings = [f"{empty} PDF page(s) without extractable text skipped"] if empty else []
    return Converted("\n\n".join(parts) + "\n", {"pages": pages}, warnings)
