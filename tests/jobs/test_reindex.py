"""Re-indexing beside the serving index: searches during it read the complete old index; the pointer moves only
when the new one is complete; a failed or cancelled re-index leaves the serving index as it was."""

from __future__ import annotations

import pytest

from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig, Settings
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index, open_serving_index
from rag_core.serving import ingest_job
from rag_core.serving.activestate import ActiveStore, activate, pointer
from rag_core.serving.configstore import ConfigStore
from rag_core.serving.jobs import JobRunner
from rag_core.serving.reindex import needs_reindex, start_reindex

OLD = RAGConfig(embedding=EmbeddingConfig(embedder="hash"))
NEW = OLD.model_copy(update={"chunking": ChunkingConfig(max_tokens=64, overlap=8)})
TOPICS = ("retry", "cache", "quota", "token")


def _doc(topic: str):
    body = "\n\n".join(f"## {topic.title()} part {i}\n\nThe {topic} rule {i} says what the {topic} limit does when "
                       f"it is reached, in some detail, with a second sentence about {topic} tuning." for i in range(8))
    return load_bytes(f"{topic}.md", f"# {topic.title()}\n\n{body}\n".encode())


@pytest.fixture
def world(data_dir):
    """Four stored documents indexed with the old settings, which serve; a runner; the settings."""
    settings = Settings(data_dir=data_dir)
    store = DocumentStore(data_dir)
    docs = [store.add(_doc(topic))[0] for topic in TOPICS]
    open_index(OLD, settings).ingest(docs)
    activate(settings, OLD)
    return settings, docs, JobRunner(data_dir)


def _found(settings: Settings) -> set[str]:
    """Documents a keyword and a vector search of each topic find in the serving index."""
    index = open_serving_index(settings)
    found = set()
    for topic in TOPICS:
        for chunk, _ in index.keyword_search(f"{topic} rule limit", 20) + index.vector_search(f"{topic} limit", 20):
            found.add(index.doc_name(chunk.doc_id))
    return found


def test_searches_during_a_reindex_read_the_complete_old_index(world, one_by_one):
    settings, docs, runner = world
    go, first_done = one_by_one
    job = start_reindex(settings, NEW, open_index(NEW, settings), docs, runner=runner)
    assert first_done.wait(60)
    half_built = open_index(NEW, settings)
    assert len(half_built.documents()) == 1  # the new index holds one document of four so far
    assert _found(settings) == {f"{t}.md" for t in TOPICS}  # ... but searches see all four
    assert pointer(settings).serving.collection == OLD.collection_name()
    assert pointer(settings).reindex.job == job.id
    go.set()
    final = runner.wait(job.id)
    assert final.state == "done", final.message
    serving = pointer(settings)
    assert serving.serving.collection == NEW.collection_name() and serving.reindex is None
    assert serving.serving.chunking == NEW.chunking
    index = open_serving_index(settings)
    assert index.chunking == NEW.chunking and max(c.tokens for c in index.chunks(granularity="paragraph")) <= 64
    assert _found(settings) == {f"{t}.md" for t in TOPICS}
    assert not (settings.data_dir / "indexes" / OLD.collection_name()).exists()  # the replaced index is removed
    assert ActiveStore.for_settings(settings).config() == NEW
    assert ConfigStore(settings.data_dir).list() == []  # the active configuration changed; nothing saved was rewritten


def test_a_failing_reindex_keeps_the_serving_index(world, monkeypatch):
    settings, docs, runner = world
    original = Index.ingest

    def refuses_quota(self, batch, progress=None, **kw):
        if self.name == NEW.collection_name() and any(d.name == "quota.md" for d in batch):
            raise ValueError("the chunker refused it")
        return original(self, batch, progress, **kw)

    monkeypatch.setattr(Index, "ingest", refuses_quota)
    job = start_reindex(settings, NEW, open_index(NEW, settings), docs, runner=runner)
    final = runner.wait(job.id)
    assert final.state == "failed" and "quota.md" in final.message and OLD.collection_name() in final.message
    kept = pointer(settings)
    assert kept.serving.collection == OLD.collection_name() and kept.reindex is None
    assert "quota.md" in kept.note
    assert _found(settings) == {f"{t}.md" for t in TOPICS}
    assert not (settings.data_dir / "indexes" / NEW.collection_name()).exists()  # the partial index is removed
    assert needs_reindex(settings) is not None  # the configuration asks for settings the index is not built with


def test_a_job_that_breaks_keeps_the_serving_index(world, monkeypatch):
    settings, docs, runner = world

    def broken(runner_, work, index, docs_):
        raise RuntimeError("disk full")

    monkeypatch.setattr(ingest_job, "run_ingest", broken)
    final = runner.wait(start_reindex(settings, NEW, open_index(NEW, settings), docs, runner=runner).id)
    assert final.state == "failed"
    assert pointer(settings).serving.collection == OLD.collection_name()
    assert "disk full" in pointer(settings).note


def test_a_cancelled_reindex_keeps_the_serving_index(world, one_by_one):
    settings, docs, runner = world
    go, first_done = one_by_one
    job = start_reindex(settings, NEW, open_index(NEW, settings), docs, runner=runner)
    assert first_done.wait(60)
    runner.cancel(job.id)
    go.set()
    final = runner.wait(job.id)
    assert final.state == "cancelled" and OLD.collection_name() in final.message
    assert pointer(settings).serving.collection == OLD.collection_name()
    assert _found(settings) == {f"{t}.md" for t in TOPICS}
    assert not (settings.data_dir / "indexes" / NEW.collection_name()).exists()


def test_documents_added_or_deleted_during_the_reindex_are_in_the_new_index(world, one_by_one):
    settings, docs, runner = world
    go, first_done = one_by_one
    job = start_reindex(settings, NEW, open_index(NEW, settings), docs, runner=runner)
    assert first_done.wait(60)
    store = DocumentStore(settings.data_dir)
    added, _ = store.add(load_bytes("late.md", b"# Late\n\nA late document about the late rule.\n"))
    store.delete(docs[0].id)
    go.set()
    assert runner.wait(job.id).state == "done"
    names = {row["name"] for row in open_serving_index(settings).documents()}
    assert names == {"late.md", *(d.name for d in docs[1:])}


def test_a_reindex_left_by_a_dead_process_is_dropped(world):
    settings, docs, runner = world
    store = ActiveStore.for_settings(settings)
    from rag_core.serving.activestate import IndexSpec, Reindex

    stale = Reindex(job="deadbeef0000", target=IndexSpec.of(NEW), started="then", host="", pid=0)
    current = pointer(settings)
    store.save_pointer(current.model_copy(update={"reindex": stale}))
    # another machine's job: it is not ours to drop
    assert pointer(settings).reindex is not None
    import socket

    store.save_pointer(current.model_copy(update={"reindex": stale.model_copy(
        update={"host": socket.gethostname(), "pid": 2**22 + 12345})}))
    assert pointer(settings).reindex is None and pointer(settings).serving.collection == OLD.collection_name()


def test_loading_another_configuration_serves_its_index_and_keeps_retrieval_changes_on_the_index(world):
    settings, docs, runner = world
    tuned = OLD.model_copy(update={"retrieval": OLD.retrieval.model_copy(update={"initial_k": 7})})
    activate(settings, tuned)
    assert pointer(settings).serving.collection == OLD.collection_name()
    assert ActiveStore.for_settings(settings).config().retrieval.initial_k == 7
    other = NEW.renamed("small")
    activate(settings, other)
    assert pointer(settings).serving.collection == NEW.collection_name()
    assert ConfigStore(settings.data_dir).list() == []  # applying settings saves nothing under a name


@pytest.mark.chroma_server
def test_two_instances_on_one_chroma_server_share_the_configuration_and_the_swap(chroma_server, tmp_path):
    """Each instance has its own data folder; the active configuration and the pointer live on the server."""
    first, second = (Settings(data_dir=tmp_path / name, chroma_host=chroma_server.host, chroma_port=chroma_server.port,
                              sync_s=0) for name in ("one", "two"))
    docs = [DocumentStore(first.data_dir).add(_doc(topic))[0] for topic in TOPICS[:2]]
    open_index(OLD, first).ingest(docs)
    activate(first, OLD)
    runner = JobRunner(first.data_dir)
    assert runner.wait(start_reindex(first, NEW, open_index(NEW, first), docs, runner=runner).id).state == "done"
    assert ActiveStore.for_settings(second).config() == NEW  # the second instance reads the same configuration
    assert pointer(second).serving.collection == NEW.collection_name()
    assert {row["name"] for row in open_serving_index(second).documents()} == {"retry.md", "cache.md"}


def test_a_reindex_from_a_loaded_saved_configuration_leaves_that_saved_configuration_byte_identical(world):
    """Issue 35.4: "Use these settings" on an active ``chunks-256`` rewrote the saved ``chunks-256`` to 512."""
    settings, docs, runner = world
    saved = OLD.model_copy(update={"name": "chunks-256", "chunking": ChunkingConfig(max_tokens=256, overlap=32)})
    path = ConfigStore(settings.data_dir).save(saved)
    before = path.read_bytes()
    activate(settings, saved)
    tuned = saved.model_copy(update={"chunking": ChunkingConfig(max_tokens=512, overlap=32)})
    job = start_reindex(settings, tuned, open_index(tuned, settings), docs, runner=runner)
    assert job is not None and runner.wait(job.id).state == "done"
    assert path.read_bytes() == before
    assert ConfigStore(settings.data_dir).load("chunks-256").chunking.max_tokens == 256
    assert ActiveStore.for_settings(settings).config().chunking.max_tokens == 512
