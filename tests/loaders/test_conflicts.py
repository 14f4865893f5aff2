"""Same-name uploads and folder uploads: nothing replaced without a decision, folder paths kept apart."""

from __future__ import annotations

import io
import zipfile

import pytest

from rag_core.loaders.archives import expand_archives
from rag_core.loaders.document_store import DocumentStore, add_files, free_name, resolve_conflicts


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_ask_stores_nothing_for_a_same_name_file_with_other_content(data_dir):
    store = DocumentStore(data_dir)
    old = add_files(store, [("troubleshooting.md", b"# Ours\n")]).added[0]
    report = add_files(store, [("troubleshooting.md", b"# Theirs\n"), ("new.md", b"# New\n")], on_conflict="ask")
    assert [d.name for d in report.added] == ["new.md"]
    assert [(c.new.text, c.stored.id) for c in report.conflicts] == [("# Theirs\n", old.id)]
    assert report.replaced == []
    assert [d.text for d in store.list()] == ["# Ours\n", "# New\n"]


def test_the_same_file_again_is_no_conflict(data_dir):
    store = DocumentStore(data_dir)
    add_files(store, [("a.md", b"# A\n")])
    report = add_files(store, [("a.md", b"# A\n")], on_conflict="ask")
    assert report.conflicts == [] and [d.name for d in report.existing] == ["a.md"]


@pytest.mark.parametrize(("action", "names", "texts"), [
    ("replace", ["troubleshooting.md"], ["# Theirs\n"]),
    ("keep_both", ["troubleshooting.md", "troubleshooting (2).md"], ["# Ours\n", "# Theirs\n"]),
    ("skip", ["troubleshooting.md"], ["# Ours\n"]),
])
def test_each_decision_does_what_it_says(data_dir, action, names, texts):
    store = DocumentStore(data_dir)
    add_files(store, [("troubleshooting.md", b"# Ours\n")])
    conflict = add_files(store, [("troubleshooting.md", b"# Theirs\n")], on_conflict="ask").conflicts[0]
    report = resolve_conflicts(store, [(conflict, action)])
    assert [d.name for d in store.list()] == names
    assert [d.text for d in store.list()] == texts
    assert len(report.replaced) == (action == "replace") and len(report.skipped) == (action == "skip")
    assert len(report.renamed) == (action == "keep_both")


def test_keep_both_twice_counts_up_and_ids_stay_distinct(data_dir):
    store = DocumentStore(data_dir)
    add_files(store, [("n.md", b"1")])
    add_files(store, [("n.md", b"2")], on_conflict="keep_both")
    add_files(store, [("n.md", b"3")], on_conflict="keep_both")
    docs = store.list()
    assert [d.name for d in docs] == ["n.md", "n (2).md", "n (3).md"]
    assert len({d.id for d in docs}) == 3
    assert docs[1].metadata["renamed_from"] == "n.md"


def test_unknown_decision_is_refused(data_dir):
    store = DocumentStore(data_dir)
    with pytest.raises(ValueError, match="on_conflict must be one of"):
        add_files(store, [("a.md", b"a")], on_conflict="overwrite")


def test_free_name_keeps_the_folder_and_extension():
    assert free_name("guide/index.md", {"guide/index.md"}) == "guide/index (2).md"
    assert free_name("Makefile", {"Makefile", "Makefile (2)"}) == "Makefile (3)"
    assert free_name("free.md", {"other.md"}) == "free.md"


def test_folder_upload_keeps_same_named_files_apart(data_dir):
    store = DocumentStore(data_dir)
    report = add_files(store, [("docs/guide/index.md", b"# Guide\n"), ("docs/config/index.md", b"# Config\n")],
                       on_conflict="ask", keep_folders=True)
    assert report.conflicts == []
    assert sorted(d.name for d in store.list()) == ["docs/config/index.md", "docs/guide/index.md"]


def test_a_zip_of_a_folder_is_expanded_with_its_paths(data_dir):
    store = DocumentStore(data_dir)
    archive = _zip({"guide/index.md": b"# Guide\n", "config/index.md": b"# Config\n", "__MACOSX/._x.md": b"junk",
                    ".hidden.md": b"# hidden", "logo.png": b"\x89PNG", "../escape.md": b"# Escape\n"})
    report = add_files(store, [("docs.zip", archive)], on_conflict="ask")
    assert report.errors == []
    assert sorted(d.name for d in store.list()) == ["config/index.md", "guide/index.md"]  # "../" members left out


def test_zip_without_documents_or_corrupt_says_so(data_dir):
    store = DocumentStore(data_dir)
    report = add_files(store, [("pics.zip", _zip({"a.png": b"x"})), ("broken.zip", b"PK\x03\x04garbage")])
    assert [name for name, _ in report.errors] == ["pics.zip", "broken.zip"]
    assert "no supported document" in report.errors[0][1]
    assert "corrupt" in report.errors[1][1]


def test_zip_bomb_and_oversized_members_are_refused():
    big = b"a" * (3 * 1024 * 1024)
    items, errors = expand_archives([("big.zip", _zip({"big.md": big, "ok.md": b"# ok"}))],
                                    max_member_bytes=1024 * 1024)
    assert items == [("ok.md", b"# ok")]
    assert errors[0][0] == "big.md" and "over the 1 MB limit" in errors[0][1]
    bomb = _zip({f"f{i}.md": b"0" * (6 * 1024 * 1024) for i in range(2)})
    _, errors = expand_archives([("bomb.zip", bomb)])
    assert "zip bomb" in errors[0][1]


def test_a_docx_is_not_expanded():
    docx = _zip({"word/document.xml": b"<w:document/>"})
    items, errors = expand_archives([("a.docx", docx)])
    assert items == [("a.docx", docx)] and errors == []
