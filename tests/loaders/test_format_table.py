"""The format table is the one list of input formats: a row added to it is detected, loaded, kept from folders and
ZIPs and stored, with no other file touched; and the table accepts exactly what the loaders accepted before it."""

from __future__ import annotations

import io
import zipfile

import pytest

from rag_core.errors import LoadError
from rag_core.loaders import format_table, iter_named_paths, listed_kinds, load_bytes, supported_types
from rag_core.loaders.archives import expand_zip, is_folder_archive, skip_reason
from rag_core.loaders.detect import accepted_name, decode_text, sniffed_format
from rag_core.loaders.document_store import DocumentStore, add_files, parse_document
from rag_core.loaders.format_table import Format
from rag_core.loaders.formats import Converted

# What the loaders accepted before the table (the extension sets and maps of detect.py), written out by hand.
OLD_EXTENSIONS = {
    "markdown": ".markdown .md .mdown .mdx .mkd",
    "text": ".adoc .log .rst .text .txt",
    "html": ".htm .html .xhtml",
    "csv": ".csv .tsv",
    "pdf": ".pdf",
    "docx": ".docx",
}
OLD_CODE_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".pyw": "python", ".js": "javascript", ".mjs": "javascript",
    ".cjs": "javascript", ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".c": "c",
    ".h": "c", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".swift": "swift", ".rb": "ruby", ".php": "php", ".pl": "perl", ".lua": "lua", ".r": "r",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ps1": "powershell", ".sql": "sql", ".css": "css",
    ".scss": "scss", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".ini": "ini",
    ".cfg": "ini", ".xml": "xml", ".proto": "protobuf", ".graphql": "graphql", ".tf": "hcl",
}
OLD_CODE_FILENAMES = {"Makefile": "make", "Dockerfile": "dockerfile", "justfile": "make"}
OLD_TEXT_CONTENT = {"markdown": b"# Title\n\nBody.\n", "text": b"plain words\n", "html": b"<p>Hello</p>\n",
                    "csv": b"a,b\n1,2\n"}


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(("doc_type", "ext"), [(t, e) for t, exts in OLD_EXTENSIONS.items() for e in exts.split()
                                                 if t in OLD_TEXT_CONTENT])
def test_every_text_extension_accepted_before_loads_as_the_same_type(doc_type, ext):
    assert load_bytes(f"file{ext}", OLD_TEXT_CONTENT[doc_type]).doc_type == doc_type
    assert accepted_name(f"docs/file{ext}") and skip_reason(f"docs/file{ext}") is None


@pytest.mark.parametrize(("ext", "language"), sorted(OLD_CODE_LANGUAGES.items()))
def test_every_code_extension_accepted_before_keeps_its_language(ext, language):
    doc = load_bytes(f"file{ext}", b"x = 1\n")
    assert (doc.doc_type, doc.language) == ("code", language)


@pytest.mark.parametrize(("name", "language"), sorted(OLD_CODE_FILENAMES.items()))
def test_code_file_names_and_shebangs_as_before(name, language):
    doc = load_bytes(name, b"all:\n\techo hi\n")
    assert (doc.doc_type, doc.language) == ("code", language)
    assert accepted_name(f"tools/{name}")
    script = load_bytes("deploy.txt", b"#!/usr/bin/env python3\nprint(1)\n")  # a shebang beats .txt
    assert (script.doc_type, script.language) == ("code", "python")
    assert load_bytes("README", b"words\n").doc_type == "text"  # no extension, no name, no shebang: text
    assert not accepted_name("docs/README")  # ... but a folder does not pick it up


def test_binary_formats_by_content_as_before(make_pdf, make_docx):
    assert load_bytes("report.pdf", make_pdf(["Hello PDF"])).doc_type == "pdf"
    assert load_bytes("notes.md", make_pdf(["Hello PDF"])).doc_type == "pdf"  # content decides
    word = make_docx(lambda d: d.add_paragraph("Hello Word"))
    assert load_bytes("memo.docx", word).doc_type == "docx"
    assert not is_folder_archive(word) and is_folder_archive(_zip({"a.md": b"# A\n"}))


def test_the_accepted_extensions_and_messages_are_the_old_ones():
    old = {e for exts in OLD_EXTENSIONS.values() for e in exts.split()} | set(OLD_CODE_LANGUAGES)
    assert list(supported_types()) == sorted(old)
    with pytest.raises(LoadError) as refused:
        load_bytes("data.xyz", b"words\n")
    assert str(refused.value) == f"data.xyz: unsupported file type '.xyz'. Supported: {', '.join(sorted(old))}."
    with pytest.raises(LoadError) as binary:
        decode_text("fake.md", b"\x00\x01\x02" * 10)
    assert str(binary.value).endswith("upload Markdown, text, code, HTML, CSV, PDF or DOCX.")
    with pytest.raises(LoadError) as empty_zip:
        expand_zip("site.zip", _zip({"talk.mp3": b"ID3"}))
    assert str(empty_zip.value) == ("site.zip: the ZIP archive holds no supported document "
                                    "(Markdown, text, code, HTML, PDF, CSV, DOCX).")
    with pytest.raises(ValueError, match=r"doc_type: Input should be 'markdown', 'text', 'code', 'html', 'pdf', "
                                         r"'csv' or 'docx'$"):
        parse_document({"id": "0123456789abcdef", "name": "a", "doc_type": "epub", "size": 1, "text": "x"})


def test_rows_claim_disjoint_extensions_and_names():
    names = format_table.format_names()
    assert len(set(names)) == len(names)
    claimed = [e for fmt in format_table.FORMATS for e in fmt.extensions]
    assert len(set(claimed)) == len(claimed)


def _note(name: str, text: str) -> Converted:
    return Converted(text.upper(), {"title": "scratch note"})


def _pack(name: str, data: bytes) -> Converted:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return Converted(archive.read("pack/content.txt").decode())


NOTE = Format("note", "note", frozenset({".note"}), binary=False, convert=_note, converted=True)
PACK = Format("pack", "pack", frozenset({".pack"}), binary=True, convert=_pack, converted=True,
              zip_member="pack/content.txt")


def test_a_new_row_is_refused_before_it_is_registered():
    with pytest.raises(LoadError, match="unsupported file type '.note'"):
        load_bytes("a.note", b"hello\n")
    assert not accepted_name("a.note") and ".note" not in supported_types()
    assert is_folder_archive(_zip({"pack/content.txt": b"inside"}))  # an unknown ZIP is a folder


def test_a_row_added_to_the_table_is_detected_loaded_and_stored(monkeypatch, tmp_path):
    monkeypatch.setattr(format_table, "FORMATS", (*format_table.FORMATS, NOTE, PACK))
    assert {".note", ".pack"} <= set(supported_types())
    assert listed_kinds().endswith("DOCX, note, pack")
    assert format_table.document_kinds() == "Markdown, text, code, HTML, CSV, note, PDF, DOCX or pack"
    doc = load_bytes("a.note", b"hello\n")
    assert (doc.doc_type, doc.text, doc.metadata["title"], doc.metadata["converted"]) == (
        "note", "HELLO\n", "scratch note", True)
    pack = _zip({"pack/content.txt": b"packed words", "pack/other.bin": b"\x00"})
    assert sniffed_format(pack) is PACK and not is_folder_archive(pack)
    assert load_bytes("book.pack", pack).doc_type == "pack"

    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "b.note").write_text("from disk")
    (folder / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert [name for _, name in iter_named_paths([folder])] == ["sub/b.note"]

    store = DocumentStore(tmp_path / "store")
    site = _zip({"guide/c.note": b"zipped note", "guide/photo.png": b"\x89PNG\r\n\x1a\n"})
    report = add_files(store, [("up/d.note", b"uploaded"), ("site.zip", site), ("book.pack", pack)])
    assert not report.errors and not report.folder_skipped
    assert sorted((d.name, d.doc_type) for d in report.added) == [
        ("book.pack", "pack"), ("guide/c.note", "note"), ("up/d.note", "note")]
    assert report.skipped_files == [("guide/photo.png", "skipped: unsupported type (.png)")]
    reopened = DocumentStore(tmp_path / "store")  # read back from disk: the store checks doc_type by the table
    assert sorted((d.name, d.doc_type, d.text) for d in reopened.list()) == [
        ("book.pack", "pack", "packed words"), ("guide/c.note", "note", "ZIPPED NOTE"),
        ("up/d.note", "note", "UPLOADED")]
