"""A re-index estimated long on this machine waits for the user's choice, like an upload (issue 35.8): "Use these
settings" in the Chunk Explorer changes nothing until Re-index anyway; Keep the current index leaves all as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.activestate import active_config
from rag_core.serving.jobs import runner_for
from rag_core.serving.throughput import record
from tests.app.apptest_helpers import finish_jobs, page_app

EXPLORER = str(Path(__file__).resolve().parents[2] / "views" / "chunk_explorer.py")
HASH_DEFAULT = RAGConfig(name="default", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def indexed_on_a_slow_machine(data_dir):
    """Two stored documents in the serving index; earlier ingests measured 200 bytes a second here."""
    docs = []
    for topic in ("retry", "cache"):
        text = f"# {topic}\n\n" + "\n\n".join(f"## Part {i}\n\nThe {topic} setting number {i} changes how the "
                                              f"{topic} behaves in some detail." for i in range(250))
        docs.append(DocumentStore(data_dir).add(load_bytes(f"{topic}.md", text.encode()))[0])
    index = open_index(HASH_DEFAULT, get_settings())
    index.ingest(docs)
    record(data_dir, index.embedder.id, 1_000_000, 5_000.0, 1_000)
    return docs


def _use_smaller_chunks(at):
    at.slider(key="a_max_tokens").set_value(256).run()
    at.button(key="explorer_apply").click().run()
    assert not at.exception, at.exception
    return at


def _long_warnings(at) -> list[str]:
    return [w.value for w in at.warning if w.value.startswith("**Re-indexing")]


def test_a_long_reindex_says_its_estimate_and_changes_nothing_before_a_click(indexed_on_a_slow_machine, data_dir):
    at = _use_smaller_chunks(page_app(EXPLORER, HASH_DEFAULT).run())
    [warning] = _long_warnings(at)
    assert "Re-indexing 2 document(s) with structure 256 tok" in warning and "on this machine" in warning
    assert "Nothing changes until you choose" in warning
    assert runner_for(data_dir).jobs() == []  # nothing queued
    assert active_config(get_settings()).chunking.max_tokens == 512  # the active configuration is as it was
    at.button(key="long_reindex_confirm").click().run()
    assert not at.exception, at.exception
    [job] = runner_for(data_dir).jobs()
    assert job.kind == "reindex"
    assert active_config(get_settings()).chunking.max_tokens == 256
    finish_jobs(at)
    assert not _long_warnings(at)


def test_keep_the_current_index_queues_nothing_and_keeps_the_active_configuration(indexed_on_a_slow_machine,
                                                                                 data_dir):
    at = _use_smaller_chunks(page_app(EXPLORER, HASH_DEFAULT).run())
    at.button(key="long_reindex_cancel").click().run()
    assert not at.exception, at.exception
    assert runner_for(data_dir).jobs() == []
    assert active_config(get_settings()).chunking.max_tokens == 512
    assert any(i.value.startswith("Not re-indexed") for i in at.info), [i.value for i in at.info]
    at.run()
    assert not _long_warnings(at)
