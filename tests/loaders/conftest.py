"""Builders for tiny binary fixtures (PDF, DOCX) written for the loader tests."""

from __future__ import annotations

import io

import pytest
from pypdf import PdfWriter
from pypdf.generic import DecodedStreamObject, DictionaryObject, NameObject


def make_pdf(pages: list[str], password: str | None = None, title: str | None = None) -> bytes:
    """A PDF with one line of Helvetica text per page, built with pypdf's writer."""
    writer = PdfWriter()
    font = DictionaryObject({
        NameObject("/Type"): NameObject("/Font"),
        NameObject("/Subtype"): NameObject("/Type1"),
        NameObject("/BaseFont"): NameObject("/Helvetica"),
    })
    font_ref = writer._add_object(font)
    for text in pages:
        page = writer.add_blank_page(width=300, height=200)
        stream = DecodedStreamObject()
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream.set_data(f"BT /F1 12 Tf 20 100 Td ({escaped}) Tj ET".encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({
            NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref}),
        })
    if title is not None:
        writer.add_metadata({"/Title": title})
    if password is not None:
        writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


PAGE_WIDTH, PAGE_HEIGHT = 400, 600
FONTS = {"regular": "Helvetica", "bold": "Helvetica-Bold", "mono": "Courier", "monobold": "Courier-Bold"}


def text(x: float, top: float, content: str, size: float = 10, font: str = "regular") -> str:
    """PDF operators drawing one line of text whose top is ``top`` points below the page's top edge."""
    escaped = content.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").replace("•", "\\267")
    baseline = PAGE_HEIGHT - top - size * 0.8
    return f"BT /{font} {size} Tf {x} {baseline:.2f} Td ({escaped}) Tj ET"


def rule(x0: float, top0: float, x1: float, top1: float) -> str:
    """A stroked line (table rulings)."""
    return f"0.5 w {x0} {PAGE_HEIGHT - top0} m {x1} {PAGE_HEIGHT - top1} l S"


def dot(x: float, top: float, size: float = 3) -> str:
    """A small filled square: a list bullet drawn as a shape, as browsers print them."""
    return f"{x} {PAGE_HEIGHT - top - size} {size} {size} re f"


def make_layout_pdf(pages: list[list[str]], outline: list[tuple[str, int, int]] | None = None) -> bytes:
    """A PDF whose pages are drawn from ``text``/``rule``/``dot`` operators (Helvetica, Helvetica-Bold, Courier);
    ``outline`` entries are (title, 1-based page, level)."""
    writer = PdfWriter()
    fonts = {}
    for key, base in FONTS.items():
        fonts[NameObject("/" + key)] = writer._add_object(DictionaryObject({
            NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/" + base),
        }))
    for operators in pages:
        page = writer.add_blank_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
        stream = DecodedStreamObject()
        stream.set_data("\n".join(operators).encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
        page[NameObject("/Resources")] = DictionaryObject({NameObject("/Font"): DictionaryObject(fonts)})
    parents: dict[int, object] = {}
    for title, page_number, level in outline or []:
        parents[level] = writer.add_outline_item(title, page_number - 1, parent=parents.get(level - 1))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx(build) -> bytes:
    """A DOCX made by python-docx; ``build(document)`` adds the content."""
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


@pytest.fixture(name="make_pdf")
def _make_pdf_fixture():
    return make_pdf


@pytest.fixture(name="make_layout_pdf")
def _make_layout_pdf_fixture():
    return make_layout_pdf


@pytest.fixture(name="make_docx")
def _make_docx_fixture():
    return make_docx
