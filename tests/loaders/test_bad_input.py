"""Hostile and broken input: every case gives a LoadError naming the file, and nothing crashes or hangs."""

from __future__ import annotations

import io
import time
import zipfile

import pytest

from rag_core.errors import LoadError
from rag_core.loaders import iter_paths, load_bytes, load_many, load_path, safe_name, sample_paths


def _error(name: str, data: bytes, **kwargs) -> str:
    with pytest.raises(LoadError) as info:
        load_bytes(name, data, **kwargs)
    message = str(info.value)
    assert message.startswith(safe_name(name) + ":")
    return message


def test_empty_and_blank_files():
    assert _error("empty.md", b"") == "empty.md: the file is empty."
    assert _error("blank.txt", b"  \n\t\n") == "blank.txt: the file is empty."
    assert _error("blank16.md", "  \n".encode("utf-16")) == "blank16.md: the file is empty."
    assert _error("scripts.html", b"<html><script>x()</script></html>") == (
        "scripts.html: has no text content after conversion from html.")


def test_markdown_mentioning_the_pdf_header_is_not_a_pdf():
    doc = load_bytes("pdf-notes.md", b"# PDF notes\n\nEvery PDF starts with %PDF-1.7 in its header.\n")
    assert doc.doc_type == "markdown"


def test_random_bytes_are_binary():
    data = bytes((i * 7919 + 13) % 255 + 1 for i in range(3000))  # no NUL byte, no valid encoding
    assert "looks binary" in _error("noise.md", data)


def test_binary_named_md():
    assert "binary" in _error("notes.md", b"\x00\x01\x02\x03garbage\x00\xff" * 20)


def test_png_named_md_names_the_format():
    assert "is a PNG image" in _error("notes.md", b"\x89PNG\r\n\x1a\n" + b"\x00" * 50)


def test_control_characters_are_binary():
    assert "control characters" in _error("odd.txt", bytes(range(1, 9)) * 30 + b"text")


def test_unsupported_extension_lists_supported_types():
    message = _error("data.xyz", b"some text")
    assert "unsupported file type '.xyz'" in message
    assert ".md" in message and ".pdf" in message


def test_zip_that_is_not_docx():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xl/workbook.xml", "<x/>")
    assert "not a Word document" in _error("book.docx", buffer.getvalue())


def test_legacy_doc_is_named():
    ole = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 100
    assert "legacy or password-protected Office file" in _error("old.doc", ole)


def test_corrupt_pdf(make_pdf):
    truncated = make_pdf(["Hello there."])[:180]
    assert "corrupt or truncated" in _error("broken.pdf", truncated)
    assert "corrupt or truncated" in _error("junk.pdf", b"%PDF-1.7\nthis is not a pdf body at all\n")


def test_encrypted_pdf(make_pdf):
    message = _error("secret.pdf", make_pdf(["Top secret."], password="pw"))
    assert "password-protected (encrypted)" in message


def test_pdf_without_text(make_pdf):
    assert "no extractable text" in _error("scan.pdf", make_pdf([""]))


def test_docx_zip_bomb_refused_before_parsing():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"\0" * (30 * 1024 * 1024))
    data = buffer.getvalue()
    assert len(data) < 100_000
    message = _error("bomb.docx", data)
    assert "zip bomb" in message
    assert "would expand to 30 MB" in message


def test_corrupt_docx():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", "<not-xml")
    assert "the DOCX is corrupt" in _error("bad.docx", buffer.getvalue())


def test_size_limit_per_file(tmp_path, monkeypatch):
    assert load_bytes("fits.md", b"x" * 2048, max_bytes=2048).size == 2048
    message = _error("big.md", b"x" * (3 * 1024 * 1024), max_bytes=2 * 1024 * 1024)
    assert message == ("big.md: is 3.0 MB, over the 2 MB limit per file (RAG_MAX_UPLOAD_MB); "
                       "split it or raise the limit.")
    monkeypatch.setenv("RAG_MAX_UPLOAD_MB", "1")
    assert "over the 1 MB limit" in _error("big.md", b"x" * (1024 * 1024 + 1))
    path = tmp_path / "big.md"
    path.write_bytes(b"y" * (1024 * 1024 + 1))
    with pytest.raises(LoadError, match="over the 1 MB limit"):
        load_path(path)


def test_twenty_megabyte_markdown_loads_quickly(monkeypatch):
    monkeypatch.setenv("RAG_MAX_DOCUMENT_MB", "25")  # over the default document limit: the reader itself is timed
    data = b"# Big\n\n" + b"Some words in a paragraph.\n\n" * 740_000
    assert len(data) > 20_000_000
    started = time.perf_counter()
    doc = load_bytes("big.md", data)
    assert time.perf_counter() - started < 15  # generous: the test machine is shared
    assert len(doc.text) == len(data)


def test_one_five_megabyte_line(monkeypatch):
    monkeypatch.setenv("RAG_MAX_DOCUMENT_MB", "6")  # 5.2 million characters: over the default document limit
    doc = load_bytes("line.md", b"a" * (5 * 1024 * 1024))
    assert doc.text == "a" * (5 * 1024 * 1024)


def test_ten_thousand_deep_markdown_lists_and_quotes_load_verbatim():
    nested_list = "- " * 10_000 + "item\n" + "".join("1. " * 10_000 + f"item {i}\n" for i in range(3))
    assert load_bytes("deep.md", nested_list.encode()).text == nested_list
    quotes = ">" * 10_000 + " deep quote\n"
    assert load_bytes("quotes.md", quotes.encode()).text == quotes


@pytest.mark.parametrize(
    ("opening", "closing"),
    [
        ("<ul><li>level", "</li></ul>"), ("<blockquote>level", "</blockquote>"),
        pytest.param("<div>level", "</div>", marks=pytest.mark.slow),
        pytest.param("<b>level", "</b>", marks=pytest.mark.slow),
        pytest.param("<table><tr><td>level", "</td></tr></table>", marks=pytest.mark.slow),
        pytest.param("<ol><li>level", "</li></ol>", marks=pytest.mark.slow),
    ],
)
def test_ten_thousand_deep_html_does_not_crash(opening, closing):
    html = "<html><body>" + opening * 10_000 + "bottom" + closing * 10_000 + "</body></html>"
    started = time.perf_counter()
    doc = load_bytes("deep.html", html.encode())
    assert time.perf_counter() - started < 30  # generous: the test machine is shared
    assert "bottom" in doc.text
    assert doc.text.count("level") == 10_000


def test_csv_field_over_parser_limit_is_a_clear_error():
    assert "the CSV cannot be parsed" in _error("wide.csv", b"a,b\n\"" + b"x" * 200_000 + b"\",1\n")


def test_csv_without_rows():
    assert _error("blank.csv", b",,\n,,\n") == "blank.csv: the CSV has no rows."


def test_cp1252_text():
    text = "Café au lait, crème brûlée and “smart quotes” – naïve résumé.\nSecond line: façade, déjà vu.\n"
    doc = load_bytes("menu.txt", text.encode("cp1252"))
    assert doc.text == text
    assert doc.metadata["encoding"] == "cp1252"


def test_utf16_with_bom_and_crlf():
    doc = load_bytes("u16.md", "# Titre\r\nÉté à Paris\r\n".encode("utf-16"))
    assert doc.text == "# Titre\nÉté à Paris\n"
    assert doc.metadata["encoding"] == "utf-16-le"


def test_utf8_with_a_stray_nul_is_not_read_as_utf16():
    assert "binary" in _error("nul.md", "0\x00\x80".encode())
    assert "binary" in _error("nul2.md", b"abc\x00defgh")


def test_utf16_without_bom():
    assert load_bytes("u16.md", "# Hello\nworld\n".encode("utf-16-be")).text == "# Hello\nworld\n"


def test_utf8_bom_stripped():
    doc = load_bytes("bom.md", b"\xef\xbb\xbf# Hi\n")
    assert doc.text == "# Hi\n"
    assert doc.metadata["encoding"] == "utf-8-sig"


def test_shift_jis_text():
    text = "日本語のテキストです。これはシフトJISで書かれた文書です。\n検索拡張生成のテストを行います。\n"
    doc = load_bytes("jp.md", text.encode("shift_jis"))
    assert doc.text == text
    assert doc.metadata["encoding"] in ("shift_jis", "cp932")


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("../../etc/passwd.md", "passwd.md"),
        ("a/b\\c.md", "c.md"),
        ("..\\..\\win.ini.md", "win.ini.md"),
        ("bad\x00na\x1bme\n.md", "badname.md"),
        ("..", "document"),
        ("/", "document"),
        ("...hidden.md", "hidden.md"),
        ("spaced   out .md", "spaced out .md"),
        ("x" * 300 + ".md", "x" * 117 + ".md"),
    ],
)
def test_hostile_names_are_sanitised(raw, clean):
    assert safe_name(raw) == clean
    assert load_bytes(raw, b"# Title\n").name == clean


def test_load_many_keeps_going_past_failures(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("# Good\n")
    docs, errors = load_many([("empty.md", b""), good, ("x.bin.md", b"\x00\x00\x00"), ("ok.txt", b"fine"),
                              tmp_path / "missing.md"])
    assert [d.name for d in docs] == ["good.md", "ok.txt"]
    assert [name for name, _ in errors] == ["empty.md", "x.bin.md", "missing.md"]
    assert errors[0][1] == "empty.md: the file is empty."
    assert errors[2][1].endswith("missing.md: no such file.")


def test_load_many_reports_progress():
    calls = []
    load_many([("a.md", b"a"), ("b.md", b"")], progress=lambda done, total, name: calls.append((done, total, name)))
    assert calls == [(1, 2, "a.md"), (2, 2, "b.md")]


def test_load_path_errors(tmp_path):
    with pytest.raises(LoadError, match="is a folder"):
        load_path(tmp_path)
    with pytest.raises(LoadError, match="no such file"):
        load_path(tmp_path / "nope.md")
    with pytest.raises(LoadError, match="is not a regular file"):
        load_path("/dev/zero")


def test_iter_paths_recurses_skipping_hidden_and_unsupported(tmp_path):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / ".git").mkdir()
    (tmp_path / "docs" / "__pycache__").mkdir()
    for rel in ["docs/b.md", "docs/a.py", "docs/sub/c.csv", "docs/.git/config.md", "docs/__pycache__/x.py",
                "docs/.hidden.md", "docs/logo.png", "single.xyz"]:
        (tmp_path / rel).write_bytes(b"x")
    found = iter_paths([tmp_path / "docs", tmp_path / "single.xyz", tmp_path / "docs" / "b.md"])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "docs/a.py", "docs/b.md", "docs/sub/c.csv", "single.xyz",
    ]
    assert len(iter_paths([tmp_path / "docs"], supported_only=False)) == 4
    with pytest.raises(LoadError, match="no such file or folder"):
        iter_paths([tmp_path / "absent"])


def test_sample_documents_all_load():
    paths = sample_paths()
    assert len(paths) >= 8
    assert all(p.parent.name == "samples" for p in paths)  # not the hostile/ fixtures
    docs, errors = load_many(paths)
    assert errors == []
    assert {d.doc_type for d in docs} >= {"markdown", "csv", "code"}


def test_utf8_with_one_damaged_byte_stays_utf8():
    data = "Grüße aus Köln — naïve café.\n".encode() + b"\xff" + "Straße.\n".encode()
    doc = load_bytes("damaged.md", data)
    assert doc.text == "Grüße aus Köln — naïve café.\n\ufffdStraße.\n"
    assert doc.metadata["encoding"] == "utf-8"
    assert doc.metadata["warnings"] == ["1 invalid UTF-8 byte sequence(s) replaced with U+FFFD"]
