"""Faults and concurrency: an interrupted or killed ingest keeps the previous index; threads corrupt nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rag_core.errors import IndexError_
from rag_core.index import Filters

REPO = Path(__file__).resolve().parents[2]


def snapshot(index):
    """What a user would see: counts, documents, and the answers to two searches."""
    return (
        index.count(),
        [d["doc_id"] for d in index.documents()],
        [c.id for c, _ in index.keyword_search("tokens signed", 3)],
        [c.id for c, _ in index.vector_search("RS256 algorithm", 3, Filters(granularity="paragraph"))],
    )


def test_exception_from_progress_midway_keeps_previous_index(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc])
    before = snapshot(index)

    def progress(done, total):
        if done > 0:
            raise KeyboardInterrupt("user cancelled")

    with pytest.raises(KeyboardInterrupt):
        index.ingest([billing_doc], progress=progress)
    assert snapshot(index) == before
    assert index.keyword_search("invoices", 3) == []
    assert index._store.count() == 7
    assert not index._side.pending_path.exists()
    assert snapshot(open_index()) == before


def test_failure_after_vectors_were_written_rolls_back(open_index, auth_doc, billing_doc, monkeypatch):
    import rag_core.index as index_module

    index = open_index()
    index.ingest([auth_doc])
    before = snapshot(index)

    def broken_build(chunks, names=None):
        raise OSError("disk full")

    monkeypatch.setattr(index_module.KeywordIndex, "build", broken_build)
    with pytest.raises(OSError, match="disk full"):
        index.ingest([billing_doc])
    monkeypatch.undo()
    assert snapshot(index) == before
    assert index._store.count() == 7
    referenced = {e["file"] for e in index._side.read_manifest()["documents"].values()}
    assert {p.name for p in index._side.chunk_dir.iterdir()} == referenced == {"seg-g1.json"}


def _run_ingest_script(settings, name: str, doc_var: str, marker: Path | None, tmp_path: Path):
    """Start a subprocess that ingests one sample document; with ``marker`` it stalls after its second vector
    write, once it has touched the marker."""
    script = textwrap.dedent(f"""
        import time
        import rag_core.index as index_module
        from rag_core.config import Settings
        import rag_core.index.writes
        from tests.fakes import chunker
        from tests.fakes.embedder import WordHashEmbedder
        rag_core.index.writes.WRITE_BATCH = 2  # small batches: some vectors land before the stall

        upsert, writes = index_module.ChromaVectorStore.upsert, []

        def stalling_upsert(self, *args, **kwargs):
            upsert(self, *args, **kwargs)
            writes.append(1)
            if {str(marker) if marker else ""!r} and len(writes) == 2:
                open({str(marker)!r}, "w").write("midway")
                time.sleep(60)

        index_module.ChromaVectorStore.upsert = stalling_upsert

        settings = Settings(data_dir={str(settings.data_dir)!r}, chroma_host={settings.chroma_host!r},
                            chroma_port={settings.chroma_port})
        index = index_module.Index.open({name!r}, settings, WordHashEmbedder(), None, chunker=chunker.fake_chunker)
        index.ingest([chunker.make_doc({doc_var.lower() + ".md"!r}, chunker.{doc_var})], force=True)
        print("done")
    """)
    path = tmp_path / f"ingest_{doc_var}.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, str(path)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _across_processes(settings) -> None:
    """Skip on the in-memory backend of tests/fakes: its rows live in this process, another cannot share them."""
    if settings.vector_store == "memory":
        pytest.skip("the in-memory vector store is not shared between processes")


def test_sigkill_midway_then_reopen_recovers(settings, collection_name, open_index, tmp_path):
    _across_processes(settings)
    first = _run_ingest_script(settings, collection_name, "AUTH", None, tmp_path)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    marker = tmp_path / "midway"
    second = _run_ingest_script(settings, collection_name, "BILLING", marker, tmp_path)
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert second.poll() is None, second.stderr.read()
        assert time.monotonic() < deadline, "the ingest never reached its midpoint"
        time.sleep(0.1)
    second.send_signal(signal.SIGKILL)
    second.wait(timeout=30)
    side_root = Path(settings.data_dir) / "indexes" / collection_name
    assert (side_root / "pending.json").exists()  # it really died between the first vectors and the commit

    index = open_index()  # recovery happens here
    assert index.count() == {"document": 1, "section": 2, "paragraph": 4, "row": 0}
    assert [d["name"] for d in index.documents()] == ["auth.md"]
    assert index.keyword_search("invoices", 3) == []
    assert index.vector_search("RS256 algorithm", 1, Filters(granularity="paragraph"))[0][0].text.startswith("Tokens")
    assert index._store.count() == 7  # the two orphaned vectors were deleted
    assert not (side_root / "pending.json").exists()


def test_threads_ingesting_and_searching_corrupt_nothing(open_index, make_doc):
    index = open_index()
    docs = [make_doc(f"doc{i}.md", f"# Topic {i}\n\nParagraph about widget{i} and gadgets.\n\nSecond part {i}.\n")
            for i in range(8)]
    errors: list[BaseException] = []
    writing = threading.Event()
    writing.set()

    def writer(batch):
        try:
            for doc in batch:
                index.ingest([doc])
        except BaseException as e:  # collected and asserted below
            errors.append(e)

    def reader():
        try:
            while writing.is_set():
                for chunk, _ in index.vector_search("widget gadgets", 5, Filters(granularity="paragraph")):
                    assert index.get(chunk.id) is not None
                index.keyword_search("gadgets", 5)
                index.count()
        except BaseException as e:
            errors.append(e)

    writers = [threading.Thread(target=writer, args=(docs[i::2],)) for i in range(2)]
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for thread in writers + readers:
        thread.start()
    for thread in writers:
        thread.join(timeout=120)
    writing.clear()
    for thread in readers:
        thread.join(timeout=60)
    assert errors == []
    assert index.count() == {"document": 8, "section": 8, "paragraph": 16, "row": 0}
    assert index._store.count() == 32
    assert len(index.keyword_search("gadgets", 50, Filters(granularity="paragraph"))) == 8
    assert open_index().count() == index.count()


def test_a_second_instance_sees_commits_of_the_first(open_index, auth_doc, billing_doc):
    reader, writer = open_index(), open_index()
    writer.ingest([auth_doc])
    assert reader.count()["document"] == 1
    writer.ingest([billing_doc])
    assert [c.text for c, _ in reader.keyword_search("invoices", 1)][0].startswith("Invoices")


@pytest.mark.chroma_server
def test_server_going_away_gives_a_clear_error(tmp_path, data_dir, embedder, auth_doc, fake_chunker):
    from rag_core.config import Settings
    from rag_core.index import Index
    from rag_core.stores.chroma.server import ChromaServer

    server = ChromaServer(tmp_path / "db").start()
    try:
        settings = Settings(data_dir=data_dir, chroma_host=server.host, chroma_port=server.port)
        index = Index.open("going-away", settings, embedder, None, chunker=fake_chunker)
        index.ingest([auth_doc])
        assert len(index.vector_search("RS256", 2)) == 2
    finally:
        server.stop()
    with pytest.raises(IndexError_, match=f"vector search failed on Chroma server at 127.0.0.1:{server.port}"):
        index.vector_search("RS256", 2)
    assert len(index.keyword_search("RS256", 2)) == 2  # keyword search keeps working from the side store
    with ChromaServer(tmp_path / "db", port=server.port):  # the server comes back: the same index answers again
        assert len(index.vector_search("RS256", 2)) == 2


def test_a_running_process_finds_what_another_process_ingested(settings, collection_name, open_index, auth_doc,
                                                               tmp_path):
    _across_processes(settings)
    index = open_index()
    index.ingest([auth_doc])
    assert index.vector_search("invoices emailed monthly", 3)  # the ANN index is loaded in this process
    other = _run_ingest_script(settings, collection_name, "BILLING", None, tmp_path)
    _, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    hits = index.vector_search("invoices emailed monthly owner", 1, Filters(granularity="paragraph"))
    assert hits[0][0].text == "Invoices are emailed monthly to the account owner."
    assert [c.text for c, _ in index.keyword_search("invoices", 1)][0].startswith("Invoices")
    assert index.count()["document"] == 2
    assert len({c.id for c, _ in index.vector_search("pay", 20)}) == len(index.vector_search("pay", 20))
    again = _run_ingest_script(settings, collection_name, "AUTH", None, tmp_path)  # forced: a new generation
    assert again.wait(timeout=120) == 0
    reopened = open_index()  # a new Index object in this process also sees the other process's writes
    assert [c.doc_id for c, _ in reopened.vector_search("invoices emailed", 1)] == [hits[0][0].doc_id]
