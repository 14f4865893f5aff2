"""AppTest of the Documents page: empty state, load samples (button and guided-demo prefill), list and delete."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import load_bytes, sample_paths
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from tests.app.apptest_helpers import finish_jobs, page_app

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "documents.py")
HASH_CONFIG = RAGConfig(name="hash-test", embedding=EmbeddingConfig(embedder="hash"))


def _app(**session) -> AppTest:
    return page_app(PAGE, HASH_CONFIG, **session)


def _table(at: AppTest):
    """The documents table (the last one: a job's per-file table may come before it)."""
    assert at.dataframe
    return at.dataframe[-1].value


def _job_table(at: AppTest):
    assert len(at.dataframe) == 2
    return at.dataframe[0].value


def test_empty_store_says_how_to_start(data_dir):
    at = _app()
    at.run()
    assert not at.exception
    assert "No documents yet" in at.info[0].value
    assert [b.label for b in at.button] == ["Load sample documents"]


def test_load_samples_button_stores_and_indexes_everything(data_dir):
    at = _app()
    at.run()
    at.button[0].click().run()
    assert not at.exception
    n_samples = len(sample_paths())
    finish_jobs(at)
    table = _table(at)
    assert len(table) == n_samples
    assert set(table["index"]) == {"indexed"}
    assert (table["paragraph"] > 0).all() and (table["document"] >= 1).all()
    assert [s.value for s in at.success] == [f"Added {n_samples} document(s).", at.success[1].value]
    assert at.success[1].value.startswith(f"Indexing {n_samples} document\\(s\\) — done: {n_samples} indexed, "
                                          "0 already indexed, 0 failed (")
    assert set(_job_table(at)["status"]) == {"indexed"}
    assert len(DocumentStore(data_dir).list()) == n_samples
    index = open_index(HASH_CONFIG, get_settings())
    assert len(index.documents()) == n_samples

    from rag_core.serving.jobs import runner_for

    ingests = [j.id for j in runner_for(data_dir).jobs() if j.kind == "ingest"]
    at.button[0].click().run()  # the same files again are recognised, not duplicated, and not indexed again
    assert not at.exception
    assert [j.id for j in runner_for(data_dir).jobs() if j.kind == "ingest"] == ingests
    assert any(i.value.startswith(f"Samples already indexed: {n_samples} document(s)") for i in at.info)
    assert len(_table(at)) == n_samples
    assert at.info[0].value.startswith("Already stored (recognised, not duplicated): ")
    assert not at.error


def test_guided_demo_prefill_loads_samples_without_a_click(data_dir):
    at = _app(prefill={"page": "documents", "load_samples": True})
    at.run()
    assert not at.exception
    finish_jobs(at)
    assert len(_table(at)) == len(sample_paths())
    assert "prefill" not in at.session_state


def test_list_shows_unindexed_documents_with_chunk_counts_and_index_all(data_dir):
    store = DocumentStore(data_dir)
    store.add(load_bytes("guide.md", b"# Guide\n\nIntro.\n\n## Setup\n\nRun it.\n"))
    store.add(load_bytes("plans.csv", b"plan,price\nfree,0\npro,20\n"))
    at = _app()
    at.run()
    assert not at.exception
    table = _table(at)
    assert list(table["name"]) == ["guide.md", "plans.csv"]
    assert list(table["index"]) == ["not indexed", "not indexed"]
    assert list(table["type"]) == ["markdown", "csv"]
    assert list(table["size"]) == ["35 B", "25 B"]
    assert list(table["document"]) == [1, 1]
    assert list(table["row"]) == [0, 2]
    index_all = [b for b in at.button if b.label.startswith("Index all")]
    assert index_all[0].label == "Index all (2 not yet in this collection)"
    index_all[0].click().run()
    assert not at.exception
    finish_jobs(at)
    assert list(_table(at)["index"]) == ["indexed", "indexed"]
    assert not [b for b in at.button if b.label.startswith("Index all")]


def test_delete_removes_from_store_and_active_index(data_dir):
    store = DocumentStore(data_dir)
    keep, _ = store.add(load_bytes("keep.md", b"# Keep\n\nThis stays.\n"))
    gone, _ = store.add(load_bytes("gone.md", b"# Gone\n\nThis goes.\n"))
    index = open_index(HASH_CONFIG, get_settings())
    index.ingest([keep, gone])
    at = _app()
    at.run()
    assert list(_table(at)["index"]) == ["indexed", "indexed"]
    at.multiselect[0].select(gone.id)
    at.button(key="FormSubmitter:delete_documents-Delete selected…").click().run()
    at.button(key="delete_confirm").click().run()
    assert not at.exception
    assert [d.id for d in DocumentStore(data_dir).list()] == [keep.id]
    assert [row["doc_id"] for row in open_index(HASH_CONFIG, get_settings()).documents()] == [keep.id]
    assert list(_table(at)["name"]) == ["keep.md"]
    assert at.success[0].value == "Deleted 1 document(s)."


def test_delete_asks_for_confirmation_naming_what_goes_and_cancel_keeps_everything(data_dir):
    store = DocumentStore(data_dir)
    docs = [store.add(load_bytes(name, f"# {name}\n\nText.\n".encode()))[0] for name in ("a.md", "b.md", "c.md")]
    open_index(HASH_CONFIG, get_settings()).ingest(docs)
    at = _app()
    at.run()
    at.multiselect[0].select(docs[0].id).select(docs[2].id)
    at.button(key="FormSubmitter:delete_documents-Delete selected…").click().run()
    assert not at.exception
    assert len(DocumentStore(data_dir).list()) == 3  # nothing deleted before the confirmation
    question = at.warning[0].value
    assert question.startswith("Delete **2 document(s)**?")
    assert "a\\.md" in question and "c\\.md" in question and "b\\.md" not in question
    assert at.button(key="delete_confirm").label == "Delete 2 document(s)"
    at.button(key="delete_cancel").click().run()
    assert not at.exception
    assert len(DocumentStore(data_dir).list()) == 3
    assert len(open_index(HASH_CONFIG, get_settings()).documents()) == 3
    assert at.info[0].value == "Nothing was deleted."
    assert not [b for b in at.button if b.key == "delete_confirm"]
    # Confirming deletes exactly the named documents.
    at.button(key="FormSubmitter:delete_documents-Delete selected…").click().run()
    at.button(key="delete_confirm").click().run()
    assert [d.name for d in DocumentStore(data_dir).list()] == ["b.md"]
    assert at.success[0].value == "Deleted 2 document(s)."


def test_unavailable_index_gives_a_message_and_documents_still_load(data_dir):
    at = _app(active_config=RAGConfig(name="remote", embedding=EmbeddingConfig(embedder="openai")))
    at.run()
    assert not at.exception
    assert len(at.error) == 1
    assert at.error[0].value.startswith("Opening the index failed: the 'openai' embedder is not configured")
    at.button[0].click().run()
    assert not at.exception
    table = _table(at)
    assert len(table) == len(sample_paths())
    assert set(table["index"]) == {"index unavailable"}
    assert (table["paragraph"] > 0).all()
    assert at.warning[0].value == "The documents are stored but not indexed: the index is unavailable (see above)."
    assert not [b for b in at.button if b.label.startswith("Index all")]


def test_delete_failure_is_a_message_not_a_traceback(data_dir, monkeypatch):
    store = DocumentStore(data_dir)
    doc, _ = store.add(load_bytes("stuck.md", b"# Stuck\n"))

    def refuse(self, doc_id):
        raise OSError("read-only file system")

    monkeypatch.setattr(DocumentStore, "delete", refuse)
    at = _app()
    at.run()
    at.multiselect[0].select(doc.id)
    at.button(key="FormSubmitter:delete_documents-Delete selected…").click().run()
    at.button(key="delete_confirm").click().run()
    assert not at.exception
    assert at.success[0].value == "Deleted 0 document(s)."
    assert at.error[0].value.startswith("stuck\\.md · ")
    assert at.error[0].value.endswith(": not deleted (read\\-only file system).")
    assert list(_table(at)["name"]) == ["stuck.md"]


def test_open_in_chunk_explorer_through_the_router(data_dir):
    doc, _ = DocumentStore(data_dir).add(load_bytes("guide.md", b"# Guide\n\nHello.\n"))
    at = AppTest.from_file(str(Path(PAGE).parents[1] / "app.py"), default_timeout=120)
    at.session_state["active_config"] = HASH_CONFIG
    at.run()
    at.switch_page("views/documents.py").run()
    assert not at.exception
    assert [t.value for t in at.title] == [":material/description: Documents"]
    [open_button] = [b for b in at.button if b.label == "Open in Chunk Explorer"]
    open_button.click().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Chunk Explorer"]
    assert at.session_state["explorer_doc"] == doc.id


def test_guided_demo_from_home_loads_the_samples(data_dir):
    at = AppTest.from_file(str(Path(PAGE).parents[1] / "app.py"), default_timeout=120)
    at.session_state["active_config"] = HASH_CONFIG
    at.run()
    at.button(key="demo_docs").click().run()
    assert not at.exception
    finish_jobs(at)
    assert [t.value for t in at.title] == [":material/description: Documents"]
    assert len(_table(at)) == len(sample_paths())
    assert set(_table(at)["index"]) == {"indexed"}


def test_upload_loads_good_files_and_reports_each_bad_one(data_dir):
    at = _app()
    at.run()
    at.file_uploader[0].set_value([
        ("guide.md", b"# Guide\n\nHello.\n", "text/markdown"),
        ("fake.md", bytes(range(256)) * 8, "text/markdown"),
        ("../../etc/empty.md", b"", "text/markdown"),
        ("plans.csv", b"plan,price\nfree,0\n", "text/csv"),
    ]).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "fake\\.md: looks like a binary file \\(it contains NUL bytes\\), not text; upload Markdown, text, code, "
        "HTML, CSV, PDF or DOCX\\.",
        "empty\\.md: the file is empty\\.",
    ]
    assert at.success[0].value == "Added 2 document(s)."
    finish_jobs(at)
    assert at.success[1].value.startswith("Indexing 2 document\\(s\\) — done: 2 indexed")
    table = _table(at)
    assert list(table["name"]) == ["guide.md", "plans.csv"]
    assert list(table["index"]) == ["indexed", "indexed"]

    at.run()  # a rerun with the same files in the widget does not load them again
    assert not at.exception
    assert len(_table(at)) == 2
    assert len(DocumentStore(data_dir).list()) == 2


def test_upload_same_file_again_is_recognised(data_dir):
    at = _app()
    at.run()
    at.file_uploader[0].set_value(("guide.md", b"# Guide\n", "text/markdown")).run()
    at.file_uploader[0].set_value(("guide.md", b"# Guide\n", "text/markdown")).run()
    assert not at.exception
    assert at.info[0].value == "Already stored (recognised, not duplicated): guide\\.md."
    assert len(_table(at)) == 1


def test_upload_over_the_size_limit_is_a_friendly_message(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_MAX_UPLOAD_MB", "1")
    at = _app()
    at.run()
    at.file_uploader[0].set_value([("big.md", b"x" * (1024 * 1024 + 1), "text/markdown"),
                                   ("small.md", b"# Small\n", "text/markdown")]).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        "big\\.md: is 1\\.0 MB, over the 1 MB limit per file \\(RAG\\_MAX\\_UPLOAD\\_MB\\); "
        "split it or raise the limit\\."
    ]
    assert list(_table(at)["name"]) == ["small.md"]


@pytest.mark.parametrize("limit_mb", [1, 120])
def test_uploader_limit_is_the_configured_one(data_dir, monkeypatch, limit_mb):
    # Streamlit's own limit (server.maxUploadSize, 50 MB) would refuse 50–120 MB files the label invites, and
    # show "50MB per file" under a label that says 1 MB.
    monkeypatch.setenv("RAG_MAX_UPLOAD_MB", str(limit_mb))
    at = _app()
    at.run()
    assert at.file_uploader[0].proto.max_upload_size_mb == limit_mb
    assert f"up to {limit_mb} MB each" in at.file_uploader[0].label
