"""The server records several instances share (``rag_core.stores.shared``), against a real `chroma run`."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from rag_core.config import Settings
from rag_core.errors import IndexError_

pytestmark = pytest.mark.chroma_server


@pytest.fixture
def server_settings(chroma_server, data_dir) -> Settings:
    return Settings(data_dir=data_dir, chroma_host=chroma_server.host, chroma_port=chroma_server.port,
                    sync_s=0.0, lease_ttl_s=2.0, lease_wait_s=0.0)


@pytest.fixture
def records(server_settings):
    from rag_core.stores.backends import meta_records

    return meta_records(server_settings)


def test_a_lease_has_one_owner_and_expires(records, collection_name):
    from rag_core.stores.shared import Lease

    first = Lease(records, collection_name, "host-x:1:first", ttl_s=1.5, wait_s=0)
    second = Lease(records, collection_name, "host-x:2:second", ttl_s=1.5, wait_s=0)
    first.acquire()
    assert first.holder()[0] == "host-x:1:first"
    with pytest.raises(IndexError_, match="being written by host-x:1:first"):
        second.acquire()
    time.sleep(1.6)  # first stopped renewing: its lease expired
    second.acquire()
    with pytest.raises(IndexError_, match="lost the write lease"):
        first.renew(force=True)
    second.release()
    assert second.holder() is None


def test_the_lease_of_a_dead_process_on_this_machine_is_free_at_once(records, collection_name):
    from rag_core.stores.shared import Lease, new_owner

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_owner = new_owner().split(":")[0] + f":{gone.stdout.strip()}:dead"
    records.put(f"lease/{collection_name}", "", {"kind": "lease", "index": collection_name, "owner": dead_owner,
                                                 "expires": time.time() + 600})  # as the dead process left it
    assert Lease(records, collection_name, "x", ttl_s=600, wait_s=0).holder() is None
    mine = Lease(records, collection_name, new_owner(), ttl_s=600, wait_s=0)
    mine.acquire()
    mine.release()


def test_a_generation_is_committed_once(records, collection_name):
    from rag_core.stores.shared import ServerCatalog

    catalog = ServerCatalog(records, collection_name)
    assert catalog.head() is None and catalog.read_manifest() is None
    assert catalog.publish({"generation": 0, "uid": "u1", "documents": {}, "by": "first"}) is True
    assert catalog.publish({"generation": 0, "uid": "u1", "documents": {}, "by": "second"}) is False
    assert catalog.read_manifest()["by"] == "first"
    assert catalog.publish({"generation": 1, "uid": "u1", "documents": {}, "by": "second"}) is True
    assert catalog.head() == (1, "u1")
    catalog.prune(1)
    assert catalog.read_manifest(0) is None and catalog.read_manifest()["by"] == "second"


def _open(settings, name, embedder, chunker, data_dir=None):
    from rag_core.index import Index

    if data_dir is not None:
        settings = settings.model_copy(update={"data_dir": data_dir})
    return Index.open(name, settings, embedder, None, chunker=chunker)


def test_a_commit_pre_empted_by_another_writer_is_written_again_on_top(server_settings, collection_name, embedder,
                                                                        fake_chunker, auth_doc, billing_doc,
                                                                        monkeypatch):
    from rag_core.stores.shared import ServerCatalog

    index = _open(server_settings, collection_name, embedder, fake_chunker)
    index.ingest([auth_doc])
    publish, calls = ServerCatalog.publish, []

    def pre_empted(self, manifest):
        calls.append(manifest["generation"])
        if len(calls) == 1:  # another writer commits this generation first (same documents, a no-op change)
            other = {**self.read_manifest(), "generation": manifest["generation"]}
            assert publish(self, other)
        return publish(self, manifest)

    monkeypatch.setattr(ServerCatalog, "publish", pre_empted)
    report = index.ingest([billing_doc])
    assert calls == [2, 3] and report.added == [billing_doc.id] and sum(report.chunks.values()) == 4
    assert index._current().generation == 3
    assert index.count()["document"] == 2 and index._store.count() == 11


def test_another_instance_sees_writes_and_deletion_of_the_index(server_settings, collection_name, embedder,
                                                               fake_chunker, auth_doc, billing_doc, tmp_path):
    from rag_core.index import list_collections

    a = _open(server_settings, collection_name, embedder, fake_chunker)
    b = _open(server_settings, collection_name, embedder, fake_chunker, data_dir=tmp_path / "b")
    a.ingest([auth_doc, billing_doc])
    assert [c.doc_id for c, _ in b.keyword_search("invoices", 1)] == [billing_doc.id]  # sync_s = 0: at once
    assert b.source(billing_doc.id).text == billing_doc.text
    assert b.remove_document(billing_doc.id)
    assert a.keyword_search("invoices", 1) == [] and a.source(billing_doc.id) is None
    listed = {row["name"]: row for row in list_collections(server_settings.model_copy(update={"data_dir": tmp_path}))}
    assert listed[collection_name]["chunks"] == 7 == listed[collection_name]["vectors"]
    assert "studio-meta" not in listed
    from rag_core.index import delete_collection

    assert delete_collection(collection_name, server_settings.model_copy(update={"data_dir": tmp_path / "b"}))
    with pytest.raises(IndexError_, match=r"no longer exists .*\(deleted through another instance\)"):
        a.keyword_search("tokens", 1)
    again = _open(server_settings, collection_name, embedder, fake_chunker, data_dir=tmp_path / "b")
    again.ingest([billing_doc])  # created again: A reconnects to the new collection and serves it
    assert [c.doc_id for c, _ in a.vector_search("invoices emailed", 1)] == [billing_doc.id]
    assert a.keyword_search("tokens signed", 1) == []


def test_configurations_and_runs_are_shared(server_settings, tmp_path):
    from rag_core.config import RAGConfig
    from rag_core.evaluation.results import ResultsStore
    from rag_core.serving.configstore import ConfigStore

    mine, theirs = ConfigStore.for_settings(server_settings), ConfigStore.for_settings(
        server_settings.model_copy(update={"data_dir": tmp_path / "other"}))
    mine.save(RAGConfig(name="shared-one"))
    assert "shared-one" in theirs.list() and theirs.load("shared-one").name == "shared-one"
    theirs.delete("shared-one")
    assert not mine.exists("shared-one")
    with pytest.raises(ValueError, match="no saved configuration"):
        mine.delete("shared-one")
    results = ResultsStore.for_settings(server_settings)
    assert isinstance(results.list(), list)
    with pytest.raises(ValueError, match="no stored evaluation run"):
        results.load("missing-run")
