"""Documents page: same-name uploads wait for a decision, folder uploads keep paths, indexing runs as a job that
survives leaving the page, shows per-file status in the sidebar of every page, and can be cancelled."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.jobs import runner_for
from tests.app.apptest_helpers import finish_jobs, page_app, studio_app

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "documents.py")
HASH_CONFIG = RAGConfig(name="hash-test", embedding=EmbeddingConfig(embedder="hash"))


def _names(data_dir) -> list[str]:
    return [d.name for d in DocumentStore(data_dir).list()]


def _upload(at, *files):
    at.file_uploader(key="documents_uploader").set_value([(n, d, "text/markdown") for n, d in files]).run()
    assert not at.exception
    return at


def test_same_name_upload_asks_and_replaces_nothing_until_decided(data_dir):
    at = studio_app(HASH_CONFIG)
    at.run()
    at.switch_page(PAGE).run()
    finish_jobs(_upload(at, ("troubleshooting.md", b"# Ours\n\nOur fixes.\n")))
    _upload(at, ("troubleshooting.md", b"# Theirs\n\nTheir fixes.\n"), ("extra.md", b"# Extra\n"))
    assert "1 file(s) have the name of a stored document but other content" in at.warning[0].value
    assert sorted(_names(data_dir)) == ["extra.md", "troubleshooting.md"]
    assert DocumentStore(data_dir).list()[0].text.startswith("# Ours")
    [radio] = at.radio
    assert radio.value is None and radio.options == ["Replace the stored one", "Keep both (rename the new one)",
                                                     "Skip the new one"]
    at.button(key="conflicts_apply").click().run()  # no choice made: nothing happens
    assert at.error[0].value == "Choose replace, keep both or skip for every file first."
    assert DocumentStore(data_dir).list()[0].text.startswith("# Ours")
    # the question survives a visit to another page
    at.switch_page("views/home.py").run()
    assert not at.radio
    at.switch_page(PAGE).run()
    assert len(at.radio) == 1
    at.radio[0].set_value("keep_both")
    at.button(key="conflicts_apply").click().run()
    assert not at.exception
    finish_jobs(at)
    assert sorted(_names(data_dir)) == ["extra.md", "troubleshooting (2).md", "troubleshooting.md"]
    assert not at.radio
    indexed = {row["name"] for row in open_index(HASH_CONFIG, get_settings()).documents()}
    assert indexed == {"extra.md", "troubleshooting (2).md", "troubleshooting.md"}


def test_replace_swaps_the_document_in_store_and_index(data_dir):
    at = page_app(PAGE, HASH_CONFIG)
    at.run()
    finish_jobs(_upload(at, ("notes.md", b"# Old notes\n")))
    _upload(at, ("notes.md", b"# New notes\n"))
    at.radio[0].set_value("replace")
    at.button(key="conflicts_apply").click().run()
    finish_jobs(at)
    assert [d.text for d in DocumentStore(data_dir).list()] == ["# New notes\n"]
    index = open_index(HASH_CONFIG, get_settings())
    assert [row["doc_id"] for row in index.documents()] == [DocumentStore(data_dir).list()[0].id]
    assert at.info[0].value.startswith("Replaced (you chose so): notes\\.md")


def test_skip_all_keeps_the_stored_documents(data_dir):
    at = page_app(PAGE, HASH_CONFIG)
    at.run()
    finish_jobs(_upload(at, ("a.md", b"# A1\n"), ("b.md", b"# B1\n")))
    _upload(at, ("a.md", b"# A2\n"), ("b.md", b"# B2\n"))
    assert len(at.radio) == 2
    at.button(key="conflicts_skip_all").click().run()
    assert [d.text for d in DocumentStore(data_dir).list()] == ["# A1\n", "# B1\n"]
    assert at.info[0].value == "Skipped (you chose so): a\\.md, b\\.md."


def test_folder_upload_keeps_same_named_files_apart(data_dir):
    at = page_app(PAGE, HASH_CONFIG)
    at.run()
    at.file_uploader(key="documents_folder_uploader").set_value([
        ("docs/guide/index.md", b"# Guide\n", "text/markdown"),
        ("docs/config/index.md", b"# Config\n", "text/markdown")]).run()
    assert not at.exception and not at.radio
    finish_jobs(at)
    assert sorted(_names(data_dir)) == ["docs/config/index.md", "docs/guide/index.md"]


@pytest.fixture
def gate(monkeypatch):
    """Index.ingest waits until the test opens the gate (so a job stays running while the test looks)."""
    opened, entered = threading.Event(), threading.Event()
    original = Index.ingest

    def gated(self, docs, progress=None, **kwargs):
        entered.set()
        assert opened.wait(60)
        return original(self, docs, progress, **kwargs)

    monkeypatch.setattr(Index, "ingest", gated)
    yield opened, entered
    opened.set()


def _sidebar_progress(at) -> list[str]:
    return [p.proto.text for p in at.sidebar.get("progress")]


def test_indexing_goes_on_across_pages(data_dir, gate):
    opened, entered = gate
    at = studio_app(HASH_CONFIG)
    at.run()
    at.switch_page(PAGE).run()
    _upload(at, ("one.md", b"# One\n\nFirst.\n"), ("two.md", b"# Two\n\nSecond.\n"))
    assert entered.wait(30)
    for page in ("views/retrieval_lab.py", "views/home.py", PAGE):
        at.switch_page(page).run()
        assert not at.exception
    job = runner_for(get_settings().data_dir).active()[0]
    # Both files are one commit batch (files are indexed in batches): the first is being chunked, the other waits.
    assert [f.state for f in job.files] == ["chunking", "queued"]
    assert list(at.dataframe[-1].value["index"]) == ["chunking", "queued"]
    assert at.get("progress")[0].proto.text.startswith("Indexing 2 document\\(s\\): 0/2 files · chunking one\\.md")
    assert not [b for b in at.button if b.label.startswith("Index all")]
    opened.set()
    finish_jobs(at)
    assert list(at.dataframe[-1].value["index"]) == ["indexed", "indexed"]


def test_the_sidebar_shows_a_running_job_to_every_session_and_cancels_it(data_dir, gate):
    opened, entered = gate
    index = open_index(HASH_CONFIG, get_settings())
    store = DocumentStore(data_dir)
    docs = [store.add(load_bytes(n, f"# {n}\n\nText.\n".encode()))[0] for n in ("one.md", "two.md")]
    runner = runner_for(get_settings().data_dir)
    job = runner.submit_ingest(index, docs, title="Indexing 2 document(s)")
    assert entered.wait(30)
    at = studio_app(HASH_CONFIG)  # another browser session, on Home
    at.run()
    assert not at.exception
    assert _sidebar_progress(at)[0].startswith("Indexing 2 document\\(s\\): 0/2 files · chunking one\\.md · ")
    assert [b.label for b in at.sidebar.button] == ["Cancel"]
    at.sidebar.button[0].click().run()
    assert not at.exception
    opened.set()
    final = runner.wait(job.id)
    assert final.state == "cancelled"
    assert [f.state for f in final.files] in (["indexed", "cancelled"], ["cancelled", "cancelled"])
    at = studio_app(HASH_CONFIG)  # (AppTest keeps the sidebar of a session's first run only: a fresh session)
    at.run()
    assert not _sidebar_progress(at)
    assert at.sidebar.caption[-1].value.startswith("**Last job:** Indexing 2 document\\(s\\) — cancelled")
