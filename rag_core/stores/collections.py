"""Per-index locks, an index's committed manifest, and listing/deleting indexes (vectors + side store), over the
configured vector store backend (``rag_core.stores.backends``).

In server mode the indexes are those with a manifest on the server (see ``rag_core.stores.shared``); local side
stores are caches and list nothing by themselves.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

from rag_core.config import Settings
from rag_core.errors import IndexError_
from rag_core.stores.backends import backend, check_index_name, meta_records, server_mode
from rag_core.stores.shared import ServerCatalog
from rag_core.stores.sidestore import SideStore

_registry_lock = threading.Lock()
_index_locks: dict[str, threading.RLock] = {}


def lock_for(root: Path) -> threading.RLock:
    """The thread lock of one index directory, shared by every ``Index`` object on it in this process."""
    with _registry_lock:
        return _index_locks.setdefault(str(root.resolve()), threading.RLock())


def read_manifest(name: str, settings: Settings) -> dict[str, Any] | None:
    """The committed manifest of index ``name`` (the server's in server mode), None when there is none."""
    check_index_name(name, settings)
    if server_mode(settings):
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
    row = backend(settings)
    if server_mode(settings):
        records = meta_records(settings)
        for index_name in sorted({str(m.get("index")) for _, _, m in records.find(kind="manifest")}):
            manifest = ServerCatalog(records, index_name).read_manifest()
            if manifest is not None:
                rows[index_name] = _manifest_row(index_name, manifest)
        for name, _metadata, count in row.collections(settings):
            if name in rows:
                rows[name]["vectors"] = count
        for name in row.reserved:
            rows.pop(name, None)
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
    for name, metadata, count in row.collections(settings):
        listed = rows.setdefault(name, {"name": name, "embedder_id": metadata.get("embedder_id"),
                                        "dim": metadata.get("dim"), "documents": 0, "chunks": 0})
        listed["vectors"] = count
    return sorted(rows.values(), key=lambda r: r["name"])


def delete_collection(name: str, settings: Settings) -> bool:
    """Delete an index (vectors and side store); False when there was nothing to delete."""
    check_index_name(name, settings)
    side = SideStore(Path(settings.data_dir) / "indexes" / name)
    with lock_for(side.root), side.write_lock():
        existed = False
        if server_mode(settings):
            catalog = ServerCatalog(meta_records(settings), name)
            existed = catalog.head() is not None
            catalog.delete_all()  # the manifests first: other instances stop serving the index at their next check
        deleted = backend(settings).drop(settings, name)
        existed = existed or side.manifest_path.exists()
        side.remove_all()
    shutil.rmtree(side.root, ignore_errors=True)
    return deleted or existed
