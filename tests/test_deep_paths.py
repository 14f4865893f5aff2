"""Very deep folder paths: one name rule when files are loaded and when stored documents are read back, and
removing an unreadable document removes its chunks from the index.

Before: a file under 1,100 nested folders was stored and indexed, then listed as unreadable after a restart
("name: String should have at most 2000 characters") while its chunks stayed searchable; removing the
unreadable files left the chunks behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import load_bytes, load_many
from rag_core.loaders.document_store import DocumentStore, parse_document
from rag_core.loaders.load import MAX_DOCUMENT_NAME_CHARS, document_name
from rag_core.services import open_index
from tests.app.apptest_helpers import page_app

PAGE = str(Path(__file__).resolve().parent.parent / "views" / "documents.py")
HASH_CONFIG = RAGConfig(name="deep-paths-test", embedding=EmbeddingConfig(embedder="hash"))
DEEP = "a/" * 1100 + "deep.md"  # 2,207 characters
TEXT = b"# Deep\n\nThe deep file mentions zebrafish.\n"


def test_a_path_too_long_is_shortened_deterministically_at_load():
    docs, errors = load_many([(DEEP, TEXT)], keep_folders=True)
    assert not errors
    name = docs[0].name
    assert len(name) <= MAX_DOCUMENT_NAME_CHARS
    assert name.endswith("/a/a/deep.md") and name.startswith("(")  # the innermost folders and the file are kept
    assert "outer folders" in name.split("/")[0]
    assert load_bytes(DEEP, TEXT, keep_folders=True).name == name == document_name(name, keep_folders=True)
    other = load_bytes("b/" + DEEP, TEXT, keep_folders=True)  # differs only in a folder that is left out
    assert other.name != name and other.id != docs[0].id


def test_names_that_fit_are_unchanged():
    fitting = "a/" * ((MAX_DOCUMENT_NAME_CHARS - 7) // 2) + "deep.md"
    assert len(fitting) <= MAX_DOCUMENT_NAME_CHARS
    assert document_name(fitting, keep_folders=True) == fitting
    assert document_name(DEEP) == "deep.md"  # without folders only the base name is kept, as before
    long_base = "x" * 5000 + ".md"
    assert len(document_name(long_base)) <= 120 and document_name(long_base).endswith(".md")


def test_a_deep_document_stored_is_read_back_after_a_restart(data_dir):
    doc = load_bytes(DEEP, TEXT, keep_folders=True)
    DocumentStore(data_dir).add(doc)
    again = DocumentStore(data_dir)  # a restart: read from disk
    assert [d.name for d in again.list()] == [doc.name] and not again.unreadable


def test_load_refuses_a_stored_name_past_the_same_limit():
    doc = load_bytes("ok.md", TEXT).to_dict()
    assert parse_document({**doc, "name": "n" * MAX_DOCUMENT_NAME_CHARS}).name == "n" * MAX_DOCUMENT_NAME_CHARS
    with pytest.raises(ValueError, match=f"at most {MAX_DOCUMENT_NAME_CHARS} characters"):
        parse_document({**doc, "name": "n" * (MAX_DOCUMENT_NAME_CHARS + 1)})


def _unreadable_indexed_document(data_dir):
    """A stored and indexed document whose file then became unreadable (a name written by an older version)."""
    store = DocumentStore(data_dir)
    keep, _ = store.add(load_bytes("keep.md", b"# Keep\n\nThe kept file mentions otters.\n"))
    gone, _ = store.add(load_bytes("gone.md", TEXT))
    open_index(HASH_CONFIG, get_settings()).ingest([keep, gone])
    path = store.root / f"{gone.id}.json"
    path.write_text(json.dumps({**gone.to_dict(), "name": DEEP}))
    return keep, gone, path


def test_removing_an_unreadable_document_removes_its_chunks(data_dir):
    keep, gone, path = _unreadable_indexed_document(data_dir)
    store = DocumentStore(data_dir)
    assert [d.id for d in store.list()] == [keep.id] and list(store.unreadable) == [gone.id]
    index = open_index(HASH_CONFIG, get_settings())
    assert {row["doc_id"] for row in index.documents()} == {keep.id, gone.id}
    assert store.remove_unreadable(index) == [gone.id]
    assert not path.exists() and not store.unreadable
    assert [row["doc_id"] for row in index.documents()] == [keep.id]
    found = index.keyword_search("zebrafish otters", 10)
    assert found and all(chunk.doc_id == keep.id for chunk, _ in found)


def test_the_documents_page_removes_unreadable_files_with_their_chunks(data_dir):
    keep, gone, path = _unreadable_indexed_document(data_dir)
    at = page_app(PAGE, HASH_CONFIG)
    at.run()
    assert not at.exception
    assert any("could not be read" in w.value and "at most 2000 characters" in w.value for w in at.warning)
    at.button(key="documents_remove_unreadable").click().run()
    assert not at.exception and not path.exists()
    assert [row["doc_id"] for row in open_index(HASH_CONFIG, get_settings()).documents()] == [keep.id]



def test_a_folder_nested_a_thousand_levels_is_walked(tmp_path):
    folder = tmp_path
    for _ in range(1_100):  # one level at a time: os.makedirs itself recurses once per level
        folder = folder / "a"
        folder.mkdir()
    try:
        _walk_the_deep_folder(tmp_path, folder)
    finally:  # shutil.rmtree (and so pytest's clean-up of old temporary folders) recurses once per level too
        (folder / "deep.md").unlink(missing_ok=True)
        while folder != tmp_path:
            folder.rmdir()
            folder = folder.parent


def _walk_the_deep_folder(tmp_path, folder):
    from rag_core.loaders.load import iter_named_paths

    (folder / "deep.md").write_text("# Deep\n\nText.\n")
    (tmp_path / "top.md").write_text("# Top\n")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.md").write_text("# Hidden\n")
    named = iter_named_paths([tmp_path])
    assert [p.name for p, _ in named] == ["top.md", "deep.md"]
