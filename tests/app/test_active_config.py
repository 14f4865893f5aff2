"""The active configuration and the index serving it are stored: "Use these settings" holds in every session,
after a restart, and searches use the complete index until the re-index is done (AppTest)."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.jobs import runner_for
from tests.app.apptest_helpers import APP, finish_jobs, page_app

ROOT = Path(__file__).resolve().parents[2]
EXPLORER, HOME, LAB = (str(ROOT / "views" / f"{name}.py") for name in ("chunk_explorer", "home", "retrieval_lab"))
HASH_DEFAULT = RAGConfig(name="default", embedding=EmbeddingConfig(embedder="hash"))
TUNED = ChunkingConfig(strategy="structure", max_tokens=256, overlap=32)


def _doc(name: str, topic: str):
    text = f"# {name}\n\n" + "\n\n".join(f"## Part {i}\n\nThe {topic} setting number {i} changes how the "
                                         f"{topic} behaves in detail." for i in range(12))
    return load_bytes(name, text.encode())


@pytest.fixture
def indexed(data_dir):
    """Three stored documents, indexed with the built-in 512-token chunking (the serving index)."""
    docs = [DocumentStore(data_dir).add(_doc(f"{topic}.md", topic))[0] for topic in ("retry", "cache", "quota")]
    open_index(HASH_DEFAULT, get_settings()).ingest(docs)
    return docs


def _new_session(page: str) -> AppTest:
    """A second browser session of the whole app (router and sidebar) on ``page``: nothing in its session state."""
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(page).run()
    assert not at.exception
    return at


def _apply(at: AppTest) -> None:
    at.slider(key="a_max_tokens").set_value(TUNED.max_tokens).run()
    at.button(key="explorer_apply").click().run()
    assert not at.exception and not at.error


def test_use_these_settings_holds_in_a_new_session_and_after_a_restart(indexed, data_dir):
    at = page_app(EXPLORER, HASH_DEFAULT)
    at.run()
    _apply(at)
    assert at.success[0].value.startswith("Saved into the active configuration `default`")
    finish_jobs(at)
    for round_ in ("second session", "restart"):
        if round_ == "restart":
            st.cache_resource.clear()  # a new process: nothing cached, only what was stored
            st.cache_data.clear()
        other = _new_session(EXPLORER)
        assert other.slider(key="a_max_tokens").value == TUNED.max_tokens, round_
        assert other.button(key="explorer_apply").disabled, round_  # these are the active settings
        sidebar = " ".join(c.value for c in other.sidebar.caption)
        assert "structure 256 tok" in sidebar and "built with structure 256 tok, overlap 32" in sidebar, sidebar
        assert "3 docs" in sidebar, sidebar
        home = _new_session(HOME)
        assert {m.label: m.value for m in home.metric}["Saved configurations"] == "0", round_  # a snapshot: none


def test_a_new_session_searches_the_complete_index_while_the_reindex_runs(indexed, data_dir, monkeypatch):
    import threading

    from rag_core.serving import ingest_job

    gate, reached = threading.Event(), threading.Event()
    original = ingest_job._ingest_batch

    def slow_batch(runner, work, index, batch, files):  # the re-index stops after its first document
        original(runner, work, index, batch, files)
        reached.set()
        assert gate.wait(60), "the test never let the re-index go on"

    monkeypatch.setattr(ingest_job, "ingest_batches", lambda docs: [[doc] for doc in docs])  # one commit per document
    monkeypatch.setattr(ingest_job, "_ingest_batch", slow_batch)
    at = page_app(EXPLORER, HASH_DEFAULT)
    at.run()
    try:
        _apply(at)
        assert reached.wait(60)
        other = _new_session(EXPLORER)
        infos = " ".join(i.value for i in other.info)
        assert "Re\\-indexing with structure 256 tok" in infos or "Re-indexing with structure 256 tok" in infos, infos
        sidebar = " ".join(c.value for c in other.sidebar.caption)
        assert "3 docs" in sidebar and "built with structure 512 tok" in sidebar, sidebar
        from rag_core.stores.collections import read_manifest

        tuned = HASH_DEFAULT.model_copy(update={"chunking": TUNED})
        built = {e["name"] for e in read_manifest(tuned.collection_name(), get_settings())["documents"].values()}
        assert len(built) == 1  # the new index is half-built: one document of three
        missing = next(d for d in indexed if d.name not in built)
        lab = _new_session(LAB)
        lab.text_input(key="lab_query").set_value(f"{missing.name.removesuffix('.md')} setting").run()
        assert not lab.exception
        found = {hit.chunk.doc_id for hit in lab.session_state["lab_result"].hits}
        assert missing.id in found, found  # found in the complete (serving) index, not in the half-built one
    finally:
        gate.set()
    finish_jobs(at)
    done = runner_for(data_dir).jobs(limit=1)[0]
    assert done.kind == "reindex" and done.state == "done", done.message
    assert "Searches now use " + tuned.collection_name() in done.message
    other = _new_session(EXPLORER)
    sidebar = " ".join(c.value for c in other.sidebar.caption)
    assert f"`{tuned.collection_name()}`: 3 docs" in sidebar and "built with structure 256 tok" in sidebar, sidebar
    assert not (data_dir / "indexes" / HASH_DEFAULT.collection_name()).exists()  # the replaced index is removed


def test_a_cancelled_reindex_keeps_the_index_and_offers_to_reindex(indexed, data_dir, monkeypatch):
    from rag_core.serving import ingest_job

    original = ingest_job._ingest_batch

    def cancelled_after_first(runner, work, index, batch, files):
        original(runner, work, index, batch, files)
        work.cancel.set()

    monkeypatch.setattr(ingest_job, "ingest_batches", lambda docs: [[doc] for doc in docs])  # one commit per document
    monkeypatch.setattr(ingest_job, "_ingest_batch", cancelled_after_first)
    at = page_app(EXPLORER, HASH_DEFAULT)
    at.run()
    _apply(at)
    finish_jobs(at)
    assert runner_for(data_dir).jobs(limit=1)[0].state == "cancelled"
    other = _new_session(EXPLORER)
    warning = " ".join(w.value for w in other.warning)
    assert "built with structure 512 tok" in warning and "asks for structure 256 tok" in warning, warning
    sidebar = " ".join(c.value for c in other.sidebar.caption)
    assert f"`{HASH_DEFAULT.collection_name()}`: 3 docs" in sidebar, sidebar
    tuned = HASH_DEFAULT.model_copy(update={"chunking": TUNED})
    assert not (data_dir / "indexes" / tuned.collection_name()).exists()  # the partial index is removed
    monkeypatch.setattr(ingest_job, "_ingest_batch", original)
    other.button(key="reindex_now").click().run()
    assert not other.exception
    finish_jobs(other)
    assert runner_for(data_dir).jobs(limit=1)[0].state == "done"
    assert not other.warning
    sidebar = " ".join(c.value for c in other.sidebar.caption)
    assert f"`{tuned.collection_name()}`: 3 docs" in sidebar, sidebar


def test_use_these_settings_on_a_loaded_saved_configuration_leaves_it_on_disk_and_says_modified(indexed, data_dir):
    """Issue 35.4: an active ``chunks-256`` + Use these settings (512) rewrote the saved ``chunks-256``."""
    from rag_core.serving.configstore import ConfigStore

    saved = HASH_DEFAULT.model_copy(update={"name": "chunks-256", "chunking": TUNED})
    path = ConfigStore(data_dir).save(saved)
    before = path.read_bytes()
    at = AppTest.from_file(APP, default_timeout=120)
    at.session_state["active_config"] = saved
    at.switch_page(EXPLORER).run()
    assert "modified from" not in " ".join(c.value for c in at.sidebar.caption)
    at.slider(key="a_max_tokens").set_value(512).run()
    at.button(key="explorer_apply").click().run()
    assert not at.exception and not at.error
    finish_jobs(at)
    assert path.read_bytes() == before
    assert ConfigStore(data_dir).list() == ["chunks-256"]
    sidebar = " ".join(c.value for c in _new_session(EXPLORER).sidebar.caption)
    assert "`chunks-256` — active: modified from `chunks-256` (unsaved)" in sidebar, sidebar
    assert "structure 512 tok" in sidebar, sidebar
