"""DocumentStore: persistence, duplicate detection, delete, crash recovery and concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import threading

import pytest

from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore, add_files


def test_add_list_get_and_persist_across_instances(data_dir):
    store = DocumentStore(data_dir)
    doc = load_bytes("a.md", b"# A\n")
    stored, is_new = store.add(doc)
    assert is_new is True and stored is doc
    other = load_bytes("b.txt", b"bee")
    store.add(other)
    reopened = DocumentStore(data_dir)
    assert [d.name for d in reopened.list()] == ["a.md", "b.txt"]
    assert reopened.get(doc.id) == doc
    assert reopened.get("0123456789abcdef") is None
    assert (data_dir / "documents" / f"{doc.id}.json").exists()
    index = json.loads((data_dir / "documents" / "index.json").read_text())
    assert [s["id"] for s in index["documents"]] == [doc.id, other.id]
    assert "text" not in index["documents"][0]


def test_same_file_twice_is_recognised(data_dir):
    store = DocumentStore(data_dir)
    first, _ = store.add(load_bytes("a.md", b"# A\n"))
    again, is_new = store.add(load_bytes("a.md", b"# A\n"))
    assert is_new is False
    assert again.created == first.created
    assert len(store.list()) == 1


def test_same_content_under_another_name_is_a_new_document(data_dir):
    store = DocumentStore(data_dir)
    store.add(load_bytes("a.md", b"# A\n"))
    _, is_new = store.add(load_bytes("copy.md", b"# A\n"))
    assert is_new is True
    assert len(store) == 2


def test_delete(data_dir):
    store = DocumentStore(data_dir)
    doc, _ = store.add(load_bytes("a.md", b"# A\n"))
    keep, _ = store.add(load_bytes("b.md", b"# B\n"))
    assert store.delete(doc.id) is True
    assert store.delete(doc.id) is False
    assert [d.id for d in DocumentStore(data_dir).list()] == [keep.id]
    assert not (data_dir / "documents" / f"{doc.id}.json").exists()
    assert doc.id not in store and keep.id in store


def test_path_like_ids_touch_nothing(data_dir):
    store = DocumentStore(data_dir)
    assert store.delete("../../etc/passwd") is False
    assert store.get("../index") is None
    with pytest.raises(ValueError, match="16 lowercase hex digits"):
        store._doc_path("../../etc/passwd")


def test_list_does_not_reread_documents(data_dir, monkeypatch):
    store = DocumentStore(data_dir)
    store.add(load_bytes("a.md", b"# A\n"))
    reads = []
    original = DocumentStore._read_doc
    monkeypatch.setattr(DocumentStore, "_read_doc", lambda self, i: reads.append(i) or original(self, i))
    for _ in range(5):
        assert len(store.list()) == 1
    assert reads == []


def test_sees_changes_from_another_instance(data_dir):
    first, second = DocumentStore(data_dir), DocumentStore(data_dir)
    assert second.list() == []
    doc, _ = first.add(load_bytes("a.md", b"# A\n"))
    assert [d.id for d in second.list()] == [doc.id]
    second.delete(doc.id)
    assert first.list() == []


def test_recovers_from_corrupt_index_and_stale_temp_files(data_dir):
    store = DocumentStore(data_dir)
    a, _ = store.add(load_bytes("a.md", b"# A\n"))
    b, _ = store.add(load_bytes("b.md", b"# B\n"))
    folder = data_dir / "documents"
    (folder / "index.json").write_text("{ torn wri")
    (folder / ".index.json.abc.tmp").write_text("partial")
    (folder / f"{'f' * 16}.json").write_text("not json")
    reopened = DocumentStore(data_dir)
    assert sorted(d.id for d in reopened.list()) == sorted([a.id, b.id])
    assert not (folder / ".index.json.abc.tmp").exists()


def test_rebuilds_index_when_a_document_file_was_added_by_a_crash(data_dir):
    store = DocumentStore(data_dir)
    a, _ = store.add(load_bytes("a.md", b"# A\n"))
    orphan = load_bytes("orphan.md", b"# O\n")
    (data_dir / "documents" / f"{orphan.id}.json").write_text(json.dumps(orphan.to_dict()))
    assert sorted(d.id for d in DocumentStore(data_dir).list()) == sorted([a.id, orphan.id])


def test_threads_adding_at_once_lose_nothing(data_dir):
    store = DocumentStore(data_dir)
    other = DocumentStore(data_dir)

    def add_range(target, start):
        for i in range(start, start + 15):
            target.add(load_bytes(f"doc{i}.md", f"# Doc {i}\n".encode()))

    threads = [threading.Thread(target=add_range, args=(s, n)) for s, n in ((store, 0), (other, 15), (store, 30))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(DocumentStore(data_dir).list()) == 45


def _add_in_process(data_dir: str, start: int) -> None:
    store = DocumentStore(data_dir)
    for i in range(start, start + 10):
        store.add(load_bytes(f"p{i}.md", f"# P {i}\n".encode()))


def test_processes_adding_at_once_lose_nothing(data_dir):
    context = multiprocessing.get_context("spawn")
    processes = [context.Process(target=_add_in_process, args=(str(data_dir), s)) for s in (0, 10)]
    for p in processes:
        p.start()
    for p in processes:
        p.join(60)
    assert [p.exitcode for p in processes] == [0, 0]
    assert len(DocumentStore(data_dir).list()) == 20


def test_add_files_reports_added_existing_and_errors(data_dir, tmp_path):
    store = DocumentStore(data_dir)
    path = tmp_path / "a.md"
    path.write_text("# A\n")
    first = add_files(store, [path, ("bad.md", b""), ("c.csv", b"x,y\n1,2\n")])
    assert [d.name for d in first.added] == ["a.md", "c.csv"]
    assert first.errors == [("bad.md", "bad.md: the file is empty.")]
    second = add_files(store, [path, ("huge.md", b"z" * 100)], max_bytes=50)
    assert second.added == [] and [d.name for d in second.existing] == ["a.md"]
    assert second.errors[0][0] == "huge.md" and "limit" in second.errors[0][1]
    assert [d.name for d in second.documents] == ["a.md"]


def test_add_many_writes_the_index_once_and_dedupes_within_the_batch(data_dir, monkeypatch):
    store = DocumentStore(data_dir)
    writes = []
    original = DocumentStore._write_index
    monkeypatch.setattr(DocumentStore, "_write_index", lambda self, s: writes.append(len(s)) or original(self, s))
    docs = [load_bytes(f"d{i}.md", f"# {i}\n".encode()) for i in range(5)]
    results = store.add_many([*docs, docs[0]])
    assert [is_new for _, is_new in results] == [True] * 5 + [False]
    assert results[5][0] is docs[0]
    assert writes == [5]
    assert [d.name for d in DocumentStore(data_dir).list()] == ["d0.md", "d1.md", "d2.md", "d3.md", "d4.md"]


def test_add_files_new_version_of_a_name_replaces_the_old_one(data_dir):
    store = DocumentStore(data_dir)
    old = add_files(store, [("notes.md", b"# v1\n")]).added[0]
    report = add_files(store, [("notes.md", b"# v2\n"), ("other.md", b"# o\n")])
    assert [d.text for d in report.added] == ["# v2\n", "# o\n"]
    assert report.replaced == [old]
    assert [d.text for d in DocumentStore(data_dir).list()] == ["# v2\n", "# o\n"]


def test_add_files_same_name_twice_in_one_batch_keeps_the_last(data_dir):
    store = DocumentStore(data_dir)
    report = add_files(store, [("index.md", b"# one\n"), ("index.md", b"# two\n")])
    assert [d.text for d in report.added] == ["# two\n"]
    assert [d.text for d in report.replaced] == ["# one\n"]
    assert [d.text for d in store.list()] == ["# two\n"]


def test_add_files_can_keep_same_named_documents(data_dir):
    store = DocumentStore(data_dir)
    add_files(store, [("index.md", b"# one\n"), ("index.md", b"# two\n")], replace_same_name=False)
    assert [d.text for d in store.list()] == ["# one\n", "# two\n"]
