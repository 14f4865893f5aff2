"""``Index``: opening an index (embedded or on a Chroma server) and the class that joins its parts.

One index per configuration (chunking + embedder), named like its Chroma collection. ``Index.open`` creates or
checks the index's manifest and connects its vector store; the behaviour lives in mixins, one concern each:
``reads`` (documents, chunks, counts, navigation), ``search`` (vector and keyword search), ``writes`` (ingest,
the atomic commit, recovery, the hot tier) and ``sync`` (the committed snapshot and keeping it current).
"""

from __future__ import annotations

import logging
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_core.config import ChunkingConfig, Settings
from rag_core.embeddings.base import Embedder, assume_dim
from rag_core.errors import IndexError_
from rag_core.index.model import Chunker, Snapshot, built_with, timestamp
from rag_core.index.reads import IndexReads
from rag_core.index.search import IndexSearch
from rag_core.index.sync import IndexSync
from rag_core.index.writes import IndexWrites
from rag_core.stores.backends import check_index_name, describe, meta_records, open_vector_store, server_mode
from rag_core.stores.collections import lock_for
from rag_core.stores.exact import ExactVectors
from rag_core.stores.hot import HotTier
from rag_core.stores.keyword import KeywordIndex
from rag_core.stores.shared import ServerCatalog, new_owner
from rag_core.stores.sidestore import SideStore
from rag_core.stores.vector import VectorStore

log = logging.getLogger(__name__)


def _discard_new(side: SideStore, existed: bool) -> None:
    """Remove the files ``Index.open`` just created for an index it could not open (nothing was ingested)."""
    with side.write_lock():
        side.remove_all()
    if not existed:
        shutil.rmtree(side.root, ignore_errors=True)


def _check_vectors(store: VectorStore | _PendingStore, name: str, settings: Settings, embedder_id: str) -> None:
    """Refuse a collection whose vectors another embedder made (its Chroma metadata names that embedder)."""
    stored_meta = store.metadata()
    if stored_meta.get("embedder_id", embedder_id) != embedder_id:
        raise IndexError_(
            f"collection {name!r} on {describe(settings)} holds {stored_meta['embedder_id']} vectors, "
            f"not {embedder_id}; use another collection name"
        )


def _cached_manifest(side: SideStore) -> dict[str, Any] | None:
    """The local cache's manifest of an index whose record is on a Chroma server; a damaged one counts as none
    (the server's replaces it)."""
    try:
        return side.read_manifest()
    except IndexError_ as e:
        log.warning("%s", e)
        return None


def _dim_of(embedder: Embedder, manifest: dict[str, Any] | None) -> int:
    """The embedder's vector size; for an index built with it, the manifest's, so that opening an index never
    asks an embedding endpoint (an outage then costs vector search only, not the index)."""
    if manifest is not None and manifest.get("embedder_id") == str(embedder.id):
        assume_dim(embedder, manifest.get("dim"))
    return int(embedder.dim)


class _PendingStore:
    """The vector store of an index opened while its Chroma server was unreachable: every use tries to connect
    again and, until that works, raises the connection's ``IndexError_`` (keyword search does not need it)."""

    def __init__(self, connect: Callable[[], VectorStore]):
        self._connect = connect
        self._store: VectorStore | None = None

    def _live(self) -> VectorStore:
        if self._store is None:
            self._store = self._connect()
        return self._store

    def metadata(self) -> dict[str, Any]:
        return self._store.metadata() if self._store is not None else {}

    def __getattr__(self, name: str):  # upsert, delete, query, vectors, documents, all_ids
        return getattr(self._live(), name)


class Index(IndexReads, IndexSearch, IndexWrites, IndexSync):
    """Vector + keyword search over one collection's chunks, with navigation and a hot tier."""

    def __init__(self, name: str, settings: Settings, embedder: Embedder, chunking: ChunkingConfig,
                 store: VectorStore | _PendingStore, side: SideStore,
                 chunker: Chunker | None, clock: Callable[[], float], catalog: ServerCatalog | None = None):
        self.name = name
        self._catalog = catalog  # with a Chroma server: the index's records there (the side store is a cache)
        self._checked_at = time.monotonic()
        self._gone = False  # deleted on the server through another instance
        self.settings = settings
        self.embedder = embedder
        self.chunking = chunking
        self._store = store
        self._side = side
        self._chunker = chunker
        self._lock = lock_for(side.root)
        self.hot = HotTier(clock)
        self._store_metadata = store.metadata()
        self._exact: tuple[Snapshot, ExactVectors | None] | None = None  # exact vectors of one snapshot
        try:
            self._snapshot = self._load()
        except IndexError_:
            if catalog is None:
                raise
            # A damaged cache: start empty; the caller rebuilds it from the server.
            self._snapshot = Snapshot({"documents": {}, "generation": -1}, {}, {}, KeywordIndex({}), None)
        self._sync_store()

    @classmethod
    def open(cls, name: str, settings: Settings, embedder, chunking: ChunkingConfig | None = None, *,
             chunker: Chunker | None = None, clock: Callable[[], float] = time.monotonic) -> Index:
        """Open (creating when missing) index ``name``; refuses an embedder or chunking it was not built with."""
        check_index_name(name, settings)
        if server_mode(settings):
            return cls._open_shared(name, settings, embedder, chunking, chunker, clock)
        side = SideStore(Path(settings.data_dir) / "indexes" / name)
        existed = side.root.exists()
        side.ensure()
        embedder_id = str(embedder.id)
        created = False
        with lock_for(side.root):
            manifest = side.read_manifest()
            dim = _dim_of(embedder, manifest)
            if manifest is None:
                with side.write_lock():
                    manifest = side.read_manifest()  # another process may have created it meanwhile
                    if manifest is None:
                        chunking = chunking or ChunkingConfig()
                        manifest = {"name": name, "embedder_id": embedder_id, "dim": dim,
                                    "chunking": chunking.model_dump(), "generation": 0, "created": timestamp(),
                                    "documents": {}}
                        side.commit(manifest)
                        created = True
            chunking = built_with(name, manifest, embedder_id, dim, chunking)
            metadata = {"embedder_id": embedder_id, "dim": dim, "chunking": chunking.model_dump_json(),
                        "created": manifest.get("created", timestamp())}
            def connect() -> VectorStore:
                return open_vector_store(settings, name, metadata)

            try:
                store = connect()
            except IndexError_:
                if created:  # an unreachable Chroma server must not leave an empty index behind
                    _discard_new(side, existed)
                if created or not server_mode(settings) or not manifest.get("documents"):
                    raise
                # A built index whose Chroma server is down: keyword search and navigation still answer from
                # the local chunk store; vector search reports the server and reconnects once it is back.
                store = _PendingStore(connect)
            _check_vectors(store, name, settings, embedder_id)
            index = cls(name, settings, embedder, chunking, store, side, chunker, clock)
            with side.write_lock(blocking=False) as locked:
                if locked and not isinstance(store, _PendingStore):  # nobody is writing: safe to clean up
                    index._current()
                    index._recover()
        return index

    @classmethod
    def _open_shared(cls, name: str, settings: Settings, embedder, chunking: ChunkingConfig | None,
                     chunker: Chunker | None, clock: Callable[[], float]) -> Index:
        """Open index ``name`` whose record is the Chroma server; the local side store becomes its cache."""
        side = SideStore(Path(settings.data_dir) / "indexes" / name)
        existed = side.root.exists()
        side.ensure()
        embedder_id = str(embedder.id)
        catalog = ServerCatalog(meta_records(settings), name)
        with lock_for(side.root):
            cached = _cached_manifest(side)
            try:
                manifest = catalog.read_manifest()
                if manifest is None:
                    manifest = cls._create_shared(catalog, settings, name, embedder_id, _dim_of(embedder, None),
                                                  chunking, cached)
            except IndexError_:
                if not cached or not cached.get("documents"):
                    if not existed:
                        shutil.rmtree(side.root, ignore_errors=True)
                    raise
                # The server is down: keyword search and navigation answer from the cache; vector search reports
                # the server; the cache catches up on the first check after the server is back.
                log.warning("Chroma server unreachable: index %r answers from its local cache", name)
                manifest = None
            dim = _dim_of(embedder, manifest or cached)
            chunking = built_with(name, manifest or cached, embedder_id, dim, chunking)
            metadata = {"embedder_id": embedder_id, "dim": dim, "chunking": chunking.model_dump_json(),
                        "created": (manifest or cached).get("created", timestamp())}

            def connect() -> VectorStore:
                return open_vector_store(settings, name, metadata)

            store = connect() if manifest is not None else _PendingStore(connect)
            _check_vectors(store, name, settings, embedder_id)
            index = cls(name, settings, embedder, chunking, store, side, chunker, clock, catalog=catalog)
            if manifest is not None:
                index._pull(manifest, wait=True)
                index._recover_shared()
        return index

    @staticmethod
    def _create_shared(catalog: ServerCatalog, settings: Settings, name: str, embedder_id: str, dim: int,
                       chunking: ChunkingConfig | None, cached: dict[str, Any] | None) -> dict[str, Any]:
        """Publish generation 0 of a new index on the server (or take the one another instance just made)."""
        with catalog.lease(new_owner(), settings.lease_ttl_s, settings.lease_wait_s):
            manifest = catalog.read_manifest()
            if manifest is None:
                if cached and cached.get("documents"):
                    log.warning("index %r has a local side store but no record on %s; the server's (empty) index "
                                "replaces it: re-ingest its documents", name, describe(settings))
                manifest = {"name": name, "embedder_id": embedder_id, "dim": dim,
                            "chunking": (chunking or ChunkingConfig()).model_dump(), "generation": 0,
                            "created": timestamp(), "documents": {}, "uid": uuid.uuid4().hex}
                if not catalog.publish(manifest):
                    manifest = catalog.read_manifest()
        if manifest is None:
            raise IndexError_(f"could not create index {name!r} on {describe(settings)}; try again")
        return manifest

