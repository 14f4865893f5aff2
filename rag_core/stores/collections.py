"""Chroma clients shared per process, opening an index's vector store, per-index locks, and listing/deleting
indexes (vectors + side store).

With a Chroma server the indexes are those with a manifest on the server (see ``rag_core.stores.shared``);
local side stores are caches and list nothing by themselves.
"""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import Any

from rag_core.config import Settings
from rag_core.errors import IndexError_
from rag_core.stores.shared import META_COLLECTION, MetaRecords, ServerCatalog
from rag_core.stores.sidestore import SideStore
from rag_core.stores.vector import (
    ChromaVectorStore,
    check_collection_name,
    delete_chroma_collection,
    describe,
    list_chroma_collections,
    make_client,
)

log = logging.getLogger(__name__)

_registry_lock = threading.Lock()
_index_locks: dict[str, threading.RLock] = {}
_clients: dict[str, Any] = {}


def lock_for(root: Path) -> threading.RLock:
    """The thread lock of one index directory, shared by every ``Index`` object on it in this process."""
    with _registry_lock:
        return _index_locks.setdefault(str(root.resolve()), threading.RLock())


def client(settings: Settings):
    """One Chroma client per store location per process (clients are thread-safe and costly to build)."""
    key = describe(settings)
    with _registry_lock:
        if key not in _clients:
            _clients[key] = make_client(settings)
        return _clients[key]


def fresh_client(settings: Settings):
    """A new embedded client that loads the store's current state from disk (None when that is impossible).

    Embedded Chroma keeps its vector index in process memory: after another process adds vectors, this
    process's queries miss them or fail ("Error finding id"). Chroma shares one system per path and process
    and offers no public way to reload it, hence the use of ``SharedSystemClient``'s cache below.
    """
    try:
        # lazy: ChromaDB is heavy, imported only where it is used
        from chromadb.api.shared_system_client import SharedSystemClient

        path = str(Path(settings.data_dir) / "chroma")
        with _registry_lock:
            SharedSystemClient._identifier_to_system.pop(path, None)
            _clients[describe(settings)] = make_client(settings)
            return _clients[describe(settings)]
    except (ImportError, AttributeError) as e:  # a Chroma version without that cache: keep the old view
        log.warning("cannot reload embedded Chroma (%s); restart to see other processes' writes", e)
        return None


def open_vector_store(settings: Settings, name: str, metadata: dict[str, Any], chroma=None) -> ChromaVectorStore:
    """The vector store of index ``name``: its Chroma collection (created with ``metadata`` when missing), through
    the process's shared client, or through ``chroma`` (a ``fresh_client`` that sees other processes' writes)."""
    return ChromaVectorStore(client(settings) if chroma is None else chroma, name, metadata, describe(settings))


def meta_records(settings: Settings) -> MetaRecords:
    """The ``studio-meta`` records of the configured Chroma server (the per-process shared client)."""
    return MetaRecords(lambda: client(settings), describe(settings))


def read_manifest(name: str, settings: Settings) -> dict[str, Any] | None:
    """The committed manifest of index ``name`` (the server's with a Chroma server), None when there is none."""
    check_collection_name(name)
    if settings.chroma_host:
        try:
            return ServerCatalog(meta_records(settings), name).read_manifest()
        except IndexError_:  # the server is down: an index cached here still answers keyword search
            cached = SideStore(Path(settings.data_dir) / "indexes" / name).read_manifest()
            if cached is None:
                raise
            return cached
    return SideStore(Path(settings.data_dir) / "indexes" / name).read_manifest()


def _manifest_row(name: str, manifest: dict[str, Any]) -> dict[str, Any]:
    documents = manifest.get("documents", {})
    return {
        "name": name, "embedder_id": manifest.get("embedder_id"), "dim": manifest.get("dim"),
        "chunking": manifest.get("chunking"), "documents": len(documents),
        "chunks": sum(sum(e.get("chunks", {}).values()) for e in documents.values()),
        "updated": manifest.get("updated", manifest.get("created")), "vectors": 0,
    }


def list_collections(settings: Settings) -> list[dict[str, Any]]:
    """Every index: name, embedder, chunking, documents and chunk counts, and vectors in the store."""
    rows: dict[str, dict[str, Any]] = {}
    root = Path(settings.data_dir) / "indexes"
    if settings.chroma_host:
        records = meta_records(settings)
        for index_name in sorted({str(m.get("index")) for _, _, m in records.find(kind="manifest")}):
            manifest = ServerCatalog(records, index_name).read_manifest()
            if manifest is not None:
                rows[index_name] = _manifest_row(index_name, manifest)
        for name, _metadata, count in list_chroma_collections(client(settings), describe(settings)):
            if name in rows:
                rows[name]["vectors"] = count
        rows.pop(META_COLLECTION, None)
        return sorted(rows.values(), key=lambda r: r["name"])
    if root.is_dir():
        for directory in sorted(root.iterdir()):
            try:
                manifest = SideStore(directory).read_manifest()
            except IndexError_ as e:  # listed, with what is wrong, so that it can be found and deleted
                rows[directory.name] = {"name": directory.name, "embedder_id": None, "dim": None, "documents": 0,
                                        "chunks": 0, "damaged": str(e)}
                continue
            if manifest is None:
                continue
            rows[directory.name] = _manifest_row(directory.name, manifest)
    for name, metadata, count in list_chroma_collections(client(settings), describe(settings)):
        row = rows.setdefault(name, {"name": name, "embedder_id": metadata.get("embedder_id"),
                                     "dim": metadata.get("dim"), "documents": 0, "chunks": 0})
        row["vectors"] = count
    return sorted(rows.values(), key=lambda r: r["name"])


def delete_collection(name: str, settings: Settings) -> bool:
    """Delete an index (vectors and side store); False when there was nothing to delete."""
    check_collection_name(name)
    side = SideStore(Path(settings.data_dir) / "indexes" / name)
    with lock_for(side.root), side.write_lock():
        existed = False
        if settings.chroma_host:
            catalog = ServerCatalog(meta_records(settings), name)
            existed = catalog.head() is not None
            catalog.delete_all()  # the manifests first: other instances stop serving the index at their next check
        deleted = delete_chroma_collection(client(settings), name, describe(settings))
        existed = existed or side.manifest_path.exists()
        side.remove_all()
    shutil.rmtree(side.root, ignore_errors=True)
    return deleted or existed
