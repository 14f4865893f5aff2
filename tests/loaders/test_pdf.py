"""PDFs keep their structure: headings, sections, paragraphs, lists, code and tables, without page furniture."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.chunking import chunk_document
from rag_core.chunking.markdown_blocks import parse_markdown
from rag_core.config import ChunkingConfig
from rag_core.errors import LoadError
from rag_core.loaders import load_bytes, page_of
from rag_core.loaders.pdf_layout import escape_start
from tests.loaders.conftest import dot, rule, text

SPEC_PDF = Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf")
BODY = "The quick brown fox jumps over the lazy dog again"


def _blocks(doc):
    return [(b.kind, doc.text[b.start:b.end]) for b in parse_markdown(doc.text).blocks]


def _headings(doc) -> list[tuple[int, str]]:
    return [(b.level, b.title) for b in parse_markdown(doc.text).blocks if b.kind == "heading"]


def _sections(doc) -> list[list[str]]:
    return [c.heading_path for c in chunk_document(doc, ChunkingConfig(), "section")]


def _report(make_layout_pdf, outline=None) -> bytes:
    page1 = [
        text(40, 40, "Quarterly Report", 20, "bold"),
        text(40, 80, "Revenue", 14, "bold"),
        text(40, 105, BODY), text(40, 118, "and then it rests."),
        text(40, 150, "Costs", 14, "bold"),
        text(40, 175, "Costs rose in every region this quarter."),
        text(40, 200, "Travel", 11, "bold"),
        text(40, 222, "Travel costs doubled after the summer."),
    ]
    return make_layout_pdf([page1], outline=outline)


def test_headings_from_font_size_and_weight_nest_into_sections(make_layout_pdf):
    doc = load_bytes("report.pdf", _report(make_layout_pdf))
    assert _headings(doc) == [(1, "Quarterly Report"), (2, "Revenue"), (2, "Costs"), (3, "Travel")]
    assert ["Quarterly Report", "Costs", "Travel"] in _sections(doc)
    assert doc.metadata["structure"]["headings"] == 4


def test_outline_decides_headings_and_levels(make_layout_pdf):
    outline = [("Quarterly Report", 1, 1), ("Revenue", 1, 2), ("Costs", 1, 2)]
    doc = load_bytes("report.pdf", _report(make_layout_pdf, outline))
    # "Travel" is bold but not in the outline: it stays text, and the outline's levels win over font sizes.
    assert _headings(doc) == [(1, "Quarterly Report"), (2, "Revenue"), (2, "Costs")]
    assert doc.metadata["outline_entries"] == 3
    assert "Travel\n\nTravel costs doubled" in doc.text


def test_numbered_headings_nest_by_their_numbers(make_layout_pdf):
    page = [
        text(40, 40, "1. Introduction", 11, "bold"), text(40, 60, BODY),
        text(40, 90, "1.1. Scope", 11, "bold"), text(40, 110, BODY),
        text(40, 140, "1.2. Terms", 11, "bold"), text(40, 160, BODY),
        text(40, 190, "2. Design", 11, "bold"), text(40, 210, BODY),
    ]
    doc = load_bytes("spec.pdf", make_layout_pdf([page]))
    assert _headings(doc) == [(1, "1. Introduction"), (2, "1.1. Scope"), (2, "1.2. Terms"), (1, "2. Design")]
    assert ["1. Introduction", "1.2. Terms"] in _sections(doc)


def _page(number: int, body: list[str]) -> list[str]:
    lines = [text(40, 12, "ACME Handbook", 8), text(300, 12, "Confidential", 8)]
    lines += [text(40, 60 + 14 * i, line) for i, line in enumerate(body)]
    lines.append(text(190, 575, str(number), 9))
    return lines


def test_running_headers_footers_and_page_numbers_are_dropped_and_pages_kept(make_layout_pdf):
    pages = [_page(1, ["Alpha is the first topic."]), _page(2, ["Beta is the second topic."]),
             _page(3, ["Gamma is the third topic."])]
    doc = load_bytes("handbook.pdf", make_layout_pdf(pages))
    assert doc.text == "Alpha is the first topic.\n\nBeta is the second topic.\n\nGamma is the third topic.\n"
    assert "ACME" not in doc.text and "Confidential" not in doc.text
    assert page_of(doc.metadata, doc.text.index("Gamma")) == 3
    paragraphs = chunk_document(doc, ChunkingConfig(), "paragraph")
    assert [c.metadata["pages"] for c in paragraphs] == [[1, 2, 3]]  # one passage over three short pages


def test_paragraphs_from_line_spacing_and_hyphenation_joined(make_layout_pdf):
    page = [
        text(40, 40, "The report covers the infor-"), text(40, 53, "mation we gathered last year."),
        text(40, 85, "A second paragraph starts after a wider gap."),
    ]
    doc = load_bytes("p.pdf", make_layout_pdf([page]))
    assert doc.text == ("The report covers the information we gathered last year.\n\n"
                        "A second paragraph starts after a wider gap.\n")


def test_paragraph_continues_across_a_page_break_with_exact_page_map(make_layout_pdf):
    pages = [[text(40, 40, "This sentence starts on one page and")], [text(40, 40, "ends on the next one.")]]
    doc = load_bytes("p.pdf", make_layout_pdf(pages))
    assert doc.text == "This sentence starts on one page and ends on the next one.\n"
    assert page_of(doc.metadata, doc.text.index("ends")) == 2
    assert page_of(doc.metadata, 0) == 1


def test_lists_from_bullet_characters_shapes_and_numbers(make_layout_pdf):
    page = [
        text(40, 40, "Steps:"),
        text(40, 60, "• Open the valve"), text(40, 74, "• Close the lid"),
        text(40, 100, "Then:"),
        dot(44, 122), text(52, 120, "Shape bullet item"), dot(44, 136), text(52, 134, "Second shape item"),
        dot(64, 150), text(72, 148, "Nested shape item"),
        text(40, 180, "Finally:"),
        text(40, 200, "1. First step"), text(40, 214, "2. Second step"),
    ]
    doc = load_bytes("l.pdf", make_layout_pdf([page]))
    assert "- Open the valve\n- Close the lid" in doc.text
    assert "- Shape bullet item\n- Second shape item\n    - Nested shape item" in doc.text
    assert "1. First step\n2. Second step" in doc.text
    kinds = [kind for kind, _ in _blocks(doc)]
    assert kinds == ["paragraph", "list", "paragraph", "list", "paragraph", "list"]


def test_monospaced_lines_become_a_fenced_block_with_indentation(make_layout_pdf):
    page = [
        text(40, 40, "Example:"),
        text(40, 62, "def greet(name):", 9, "mono"),
        text(40 + 4 * 5.4, 73, 'return "hi " + name', 9, "mono"),
        text(40, 95, 'print(greet("you"))', 9, "mono"),
        text(40, 125, "After the code."),
    ]
    doc = load_bytes("c.pdf", make_layout_pdf([page]))
    assert '```\ndef greet(name):\n    return "hi " + name\n\nprint(greet("you"))\n```' in doc.text
    assert [kind for kind, _ in _blocks(doc)] == ["paragraph", "fence", "paragraph"]


def test_ruled_table_becomes_a_markdown_table_with_its_header(make_layout_pdf):
    rows = [("Plan", "Price"), ("Basic", "10"), ("Pro", "25")]
    page = [text(40, 30, "Prices:")]
    for i, (a, b) in enumerate(rows):
        page += [text(45, 53 + 20 * i, a, font="bold" if i == 0 else "regular"), text(145, 53 + 20 * i, b)]
    page += [rule(40, 50 + 20 * i, 240, 50 + 20 * i) for i in range(4)]
    page += [rule(x, 50, x, 110) for x in (40, 140, 240)]
    page.append(text(40, 130, "Prices are monthly."))
    doc = load_bytes("t.pdf", make_layout_pdf([page]))
    assert "| Plan | Price |\n|---|---|\n| Basic | 10 |\n| Pro | 25 |" in doc.text
    assert doc.text.endswith("Prices are monthly.\n")
    chunk_rows = chunk_document(doc, ChunkingConfig(), "row")
    assert [c.chunk_type for c in chunk_rows] == ["table", "table"]


def test_prose_that_looks_like_markdown_is_escaped(make_layout_pdf):
    page = [text(40, 40, "# is the hash sign"), text(40, 70, "> quoted? no"), text(40, 100, "<div> tags")]
    doc = load_bytes("e.pdf", make_layout_pdf([page]))
    assert [kind for kind, _ in _blocks(doc)] == ["paragraph", "paragraph", "paragraph"]
    assert escape_start("2024. A good year") == "2024\\. A good year"
    assert escape_start("plain") == "plain"


def test_scanned_pdf_without_text_layer_says_ocr_is_needed(make_layout_pdf):
    with pytest.raises(LoadError) as error:
        load_bytes("scan.pdf", make_layout_pdf([[dot(10, 10, 200)]]))
    assert "no text layer" in str(error.value) and "OCR" in str(error.value)


def test_layout_failure_falls_back_to_plain_text_with_a_warning(make_layout_pdf, monkeypatch):
    import rag_core.loaders.pdf as pdf

    def broken(*args, **kwargs):
        raise RuntimeError("layout engine crashed")

    monkeypatch.setattr(pdf, "_read_pages", broken)
    doc = load_bytes("r.pdf", _report(make_layout_pdf))
    assert "Quarterly Report" in doc.text and "#" not in doc.text
    assert any("could not be read" in w for w in doc.metadata["warnings"])


@pytest.mark.skipif(not SPEC_PDF.exists(), reason="Debian's shared-mime-info package is not installed")
def test_debian_shared_mime_info_spec_keeps_numbered_sections():
    doc = load_bytes(SPEC_PDF.name, SPEC_PDF.read_bytes())
    headings = _headings(doc)
    assert (2, "1.3. Language used in this specification") in headings
    assert (1, "2. Unified system") in headings
    assert ["1. Introduction", "1.3. Language used in this specification"] in _sections(doc)
    paragraphs = chunk_document(doc, ChunkingConfig(), "paragraph")
    assert paragraphs[0].chunk_type != "list"
    # The running header and the page numbers were on every page; only the title line is left.
    lines = doc.text.splitlines()
    assert lines.count("Shared MIME-info Database") == 1
    assert not any(line.strip().isdigit() for line in lines)
    assert all(c.metadata.get("pages") for c in paragraphs)


def test_content_stream_that_inflates_past_the_limit_is_refused():
    import io
    import zlib

    from pypdf import PdfWriter
    from pypdf.generic import NameObject, StreamObject

    writer = PdfWriter()
    page = writer.add_blank_page(width=200, height=200)
    bomb = StreamObject()
    bomb.set_data(zlib.compress(b" " * 80_000_000, 9))
    bomb[NameObject("/Filter")] = NameObject("/FlateDecode")
    page[NameObject("/Contents")] = writer._add_object(bomb)
    out = io.BytesIO()
    writer.write(out)
    assert len(out.getvalue()) < 200_000
    with pytest.raises(LoadError) as error:
        load_bytes("bomb.pdf", out.getvalue())
    assert "decompression bomb" in str(error.value)


def test_code_block_after_a_paragraph_ending_in_inline_code_stays_whole(make_layout_pdf):
    page = [
        text(40, 40, "Validators now raise the error type"), text(40, 53, "TypeError:", 10, "mono"),
        text(40, 80, "import pytest", 9, "mono"), text(40, 91, "pytest.main()", 9, "mono"),
        text(40, 120, "That is all."),
    ]
    doc = load_bytes("c.pdf", make_layout_pdf([page]))
    assert "Validators now raise the error type TypeError:\n\n```\nimport pytest\npytest.main()\n```" in doc.text


def test_a_bold_monospaced_line_alone_is_a_heading_not_code(make_layout_pdf):
    page = [
        text(40, 40, "Settings", 16, "bold"), text(40, 70, BODY),
        text(40, 100, "init_typed", 11, "monobold"), text(40, 125, BODY),
    ]
    doc = load_bytes("h.pdf", make_layout_pdf([page]))
    assert (2, "init_typed") in _headings(doc)
