"""The index: chunks of every granularity in a vector store (Chroma) and a BM25 index, plus navigation.

One index per configuration (chunking + embedder), named like its Chroma collection. Writes are atomic:
new vectors are upserted first under a ``pending`` marker, then the side store's manifest is replaced in one
``os.replace`` (the commit), then stale vectors are deleted. Searches only return chunks of the committed
manifest, so an ingest that fails or is killed midway leaves the previous index answering, and the next
open deletes the orphaned vectors. Readers take no lock: they use an immutable snapshot swapped on commit.

Several processes may share one data directory (the app and ``python -m rag_core ingest``): writers exclude
each other with a file lock and readers reload the side store when another process committed. Embedded
Chroma keeps its vector index in process memory, so such a reload also reconnects this process to the
collection (see ``Index._sync_store``).

With a Chroma server (``RAG_CHROMA_HOST``) the server is the system of record and the side store a cache
(``rag_core.stores.shared``): each chunk row carries its full JSON, a commit claims the next generation's
manifest in the server, writers take a lease there, and every instance rebuilds its cache (chunk map, BM25)
when the server's generation changed, checked on open, before each write and at most every ``RAG_SYNC_S``
seconds while searching. The same rows-first, manifest-second order keeps a crashed writer's rows invisible.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from rag_core.config import ChunkingConfig, Settings
from rag_core.embeddings.base import Embedder
from rag_core.errors import IndexError_, RagError
from rag_core.stores.collections import client, delete_collection, fresh_client, list_collections, lock_for
from rag_core.stores.contextual import embed_chunks
from rag_core.stores.exact import EXACT_MAX_CHUNKS, ExactVectors
from rag_core.stores.hot import HotTier, chunk_allowed
from rag_core.stores.keyword import KeywordIndex
from rag_core.stores.navigation import Navigation
from rag_core.stores.shared import ServerCatalog, meta_records, new_owner
from rag_core.stores.sidestore import SideStore
from rag_core.stores.vector import (
    ChromaVectorStore,
    VectorStore,
    build_where,
    check_collection_name,
    chunk_metadata,
    describe,
)
from rag_core.types import CHUNK_TYPES, GRANULARITIES, Chunk, Document

log = logging.getLogger(__name__)

__all__ = ["Filters", "Index", "IngestReport", "delete_collection", "list_collections"]

Progress = Callable[[int, int], None]
Chunker = Callable[[Document, ChunkingConfig, str], list[Chunk]]
# Chunks embedded and written per step, so memory stays bounded and progress moves on large corpora.
WRITE_BATCH = 512

# Per index directory: the manifest stamp this process's Chroma view matches (its own commits, or the last
# reconnect); a different stamp means another process wrote since.
_synced_stamps: dict[Path, tuple[int, int] | None] = {}


class _CommitConflict(IndexError_):
    """Another writer claimed the generation this write was about to commit."""


class _IndexGone(IndexError_):
    """The index was deleted on the Chroma server (through another instance)."""


# Attempts of a write whose commit another writer pre-empted (only when a lease expired under a slow writer).
COMMIT_ATTEMPTS = 3


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _as_list(value, allowed: tuple[str, ...], what: str) -> list[str] | None:
    if value is None or value == "any" or value == []:
        return None
    values = [value] if isinstance(value, str) else list(value)
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {what} {bad}; allowed: {', '.join(allowed)}")
    return values


@dataclass(slots=True)
class Filters:
    """What a search may return; None (or ``"any"`` for granularity) means no restriction."""

    granularity: list[str] | None = None
    chunk_types: list[str] | None = None
    doc_ids: list[str] | None = None

    def __post_init__(self) -> None:
        self.granularity = _as_list(self.granularity, GRANULARITIES, "granularity")
        self.chunk_types = _as_list(self.chunk_types, CHUNK_TYPES, "chunk type")
        if self.doc_ids is not None:
            self.doc_ids = [self.doc_ids] if isinstance(self.doc_ids, str) else list(self.doc_ids) or None


@dataclass(slots=True)
class IngestReport:
    collection: str
    documents: int = 0
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    chunks: dict[str, int] = field(default_factory=dict)
    embedded: int = 0
    removed_chunks: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def chunks_per_s(self) -> float:
        return sum(self.chunks.values()) / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "chunks_per_s": round(self.chunks_per_s, 1)}


@dataclass(slots=True, frozen=True)
class _Snapshot:
    """The committed state readers use; replaced (never mutated) on each commit."""

    manifest: dict[str, Any]
    chunks: dict[str, Chunk]
    by_doc: dict[str, list[Chunk]]
    keyword: KeywordIndex
    stamp: tuple[int, int] | None

    @property
    def generation(self) -> int:
        return int(self.manifest.get("generation", 0))


def _check_search(query: str, k: int) -> bool:
    """Validate search arguments; False when there is nothing to search for (blank query or k = 0)."""
    if not isinstance(query, str):
        raise ValueError(f"the query must be a string, got {type(query).__name__}")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 0:
        raise ValueError(f"k must be a whole number ≥ 0, got {k!r}")
    return bool(query.strip()) and k > 0


def _first_by_id(chunks: list[Chunk]) -> list[Chunk]:
    """``chunks`` without later repeats of an id (ids are the store keys, so a repeat cannot be stored twice)."""
    seen: set[str] = set()
    unique = []
    for chunk in chunks:
        if chunk.id not in seen:
            seen.add(chunk.id)
            unique.append(chunk)
    return unique


def _names(documents: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Document id → the name keyword search reads with its chunks (none for pre-chunked documents)."""
    return {doc_id: str(entry.get("name", "")) for doc_id, entry in documents.items() if entry.get("contextual", True)}


def _doc_order(chunks: Iterable[Chunk]) -> list[Chunk]:
    rank = {g: i for i, g in enumerate(GRANULARITIES)}
    return sorted(chunks, key=lambda c: (rank.get(c.granularity, 9), c.start, c.position, c.id))


def _built_with(name: str, manifest: dict[str, Any], embedder_id: str, dim: int,
                chunking: ChunkingConfig | None) -> ChunkingConfig:
    """The index's chunking, after checking that ``embedder_id``/``dim`` and ``chunking`` (if given) are its own."""
    if manifest["embedder_id"] != embedder_id or int(manifest["dim"]) != dim:
        raise IndexError_(
            f"index {name!r} was built with embedder {manifest['embedder_id']} ({manifest['dim']} dims), "
            f"not {embedder_id} ({dim} dims); open it with that embedder or use another collection"
        )
    stored = ChunkingConfig.model_validate(manifest["chunking"])
    if chunking is not None and chunking != stored:
        raise IndexError_(
            f"index {name!r} was built with chunking {stored.model_dump()}, not {chunking.model_dump()}; "
            "each chunking configuration has its own collection"
        )
    return stored


def _same_version(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two manifests are the same server version (same index incarnation and generation)."""
    return a.get("uid") is not None and a.get("uid") == b.get("uid") and a.get("generation") == b.get("generation")


def _plan(old: _Snapshot, documents: dict[str, Any], entries: list[tuple[Document, list[Chunk]]],
          remove_doc_ids: list[str], report: IngestReport, replace_same_name: bool,
          ) -> tuple[set[str], list[Chunk], list[str], list[str]]:
    """What a write changes on top of ``old``: the documents it replaces or removes, its chunks, the chunk ids that
    become stale and those that are new (both modes; ``report`` gets added/replaced)."""
    replaced = set(remove_doc_ids)
    for doc, _ in entries:
        if doc.id in documents:
            replaced.add(doc.id)
            report.replaced.append(doc.id)
        else:
            report.added.append(doc.id)
        if replace_same_name:
            replaced.update(i for i, e in documents.items() if e["name"] == doc.name and i != doc.id)
    new_chunks = [chunk for _, doc_chunks in entries for chunk in doc_chunks]
    new_ids = [c.id for c in new_chunks]
    if len(set(new_ids)) != len(new_ids):
        raise ValueError("duplicate chunk ids in the input; chunk ids must be unique")
    new_id_set = set(new_ids)
    stale = [c.id for d in replaced for c in old.by_doc.get(d, []) if c.id not in new_id_set]
    fresh = [i for i in new_ids if i not in old.chunks]
    return replaced, new_chunks, stale, fresh


def _entry(doc: Document, doc_chunks: list[Chunk], now: str, contextual: bool) -> dict[str, Any]:
    """A document's manifest entry (both modes; embedded adds its segment ``file``, the server its chunk ``ids``)."""
    counts: dict[str, int] = {}
    for chunk in doc_chunks:
        counts[chunk.granularity] = counts.get(chunk.granularity, 0) + 1
    entry = {"name": doc.name, "updated": now, "chunks": counts, "doc_type": doc.doc_type, "size": doc.size}
    if not contextual:
        entry["contextual"] = False
    return entry


def _discard_new(side: SideStore, existed: bool) -> None:
    """Remove the files ``Index.open`` just created for an index it could not open (nothing was ingested)."""
    with side.write_lock():
        side.remove_all()
    if not existed:
        shutil.rmtree(side.root, ignore_errors=True)


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

    def __getattr__(self, name: str):  # upsert, delete, query, vectors, all_ids, count
        return getattr(self._live(), name)


class Index(Navigation):
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
        self._exact: tuple[_Snapshot, ExactVectors | None] | None = None  # exact vectors of one snapshot
        try:
            self._snapshot = self._load()
        except IndexError_:
            if catalog is None:
                raise
            # A damaged cache: start empty; the caller rebuilds it from the server.
            self._snapshot = _Snapshot({"documents": {}, "generation": -1}, {}, {}, KeywordIndex({}), None)
        self._sync_store()

    # --- opening ------------------------------------------------------------------------------------
    @classmethod
    def open(cls, name: str, settings: Settings, embedder, chunking: ChunkingConfig | None = None, *,
             chunker: Chunker | None = None, clock: Callable[[], float] = time.monotonic) -> Index:
        """Open (creating when missing) index ``name``; refuses an embedder or chunking it was not built with."""
        check_collection_name(name)
        if settings.chroma_host:
            return cls._open_shared(name, settings, embedder, chunking, chunker, clock)
        side = SideStore(Path(settings.data_dir) / "indexes" / name)
        existed = side.root.exists()
        side.ensure()
        embedder_id, dim = str(embedder.id), int(embedder.dim)
        created = False
        with lock_for(side.root):
            manifest = side.read_manifest()
            if manifest is None:
                with side.write_lock():
                    manifest = side.read_manifest()  # another process may have created it meanwhile
                    if manifest is None:
                        chunking = chunking or ChunkingConfig()
                        manifest = {"name": name, "embedder_id": embedder_id, "dim": dim,
                                    "chunking": chunking.model_dump(), "generation": 0, "created": _now(),
                                    "documents": {}}
                        side.commit(manifest)
                        created = True
            chunking = _built_with(name, manifest, embedder_id, dim, chunking)
            metadata = {"embedder_id": embedder_id, "dim": dim, "chunking": chunking.model_dump_json(),
                        "created": manifest.get("created", _now())}
            def connect() -> VectorStore:
                return ChromaVectorStore(client(settings), name, metadata, describe(settings))

            try:
                store = connect()
            except IndexError_:
                if created:  # an unreachable Chroma server must not leave an empty index behind
                    _discard_new(side, existed)
                if created or not settings.chroma_host or not manifest.get("documents"):
                    raise
                # A built index whose Chroma server is down: keyword search and navigation still answer from
                # the local chunk store; vector search reports the server and reconnects once it is back.
                store = _PendingStore(connect)
            stored_meta = store.metadata()
            if stored_meta.get("embedder_id", embedder_id) != embedder_id:
                raise IndexError_(
                    f"collection {name!r} on {describe(settings)} holds {stored_meta['embedder_id']} vectors, "
                    f"not {embedder_id}; use another collection name"
                )
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
        embedder_id, dim = str(embedder.id), int(embedder.dim)
        catalog = ServerCatalog(meta_records(settings), name)
        with lock_for(side.root):
            cached = side.read_manifest()
            try:
                manifest = catalog.read_manifest()
                if manifest is None:
                    manifest = cls._create_shared(catalog, settings, name, embedder_id, dim, chunking, cached)
            except IndexError_:
                if not cached or not cached.get("documents"):
                    if not existed:
                        shutil.rmtree(side.root, ignore_errors=True)
                    raise
                # The server is down: keyword search and navigation answer from the cache; vector search reports
                # the server; the cache catches up on the first check after the server is back.
                log.warning("Chroma server unreachable: index %r answers from its local cache", name)
                manifest = None
            chunking = _built_with(name, manifest or cached, embedder_id, dim, chunking)
            metadata = {"embedder_id": embedder_id, "dim": dim, "chunking": chunking.model_dump_json(),
                        "created": (manifest or cached).get("created", _now())}

            def connect() -> ChromaVectorStore:
                return ChromaVectorStore(client(settings), name, metadata, describe(settings))

            store = connect() if manifest is not None else _PendingStore(connect)
            stored_meta = store.metadata()
            if stored_meta.get("embedder_id", embedder_id) != embedder_id:
                raise IndexError_(
                    f"collection {name!r} on {describe(settings)} holds {stored_meta['embedder_id']} vectors, "
                    f"not {embedder_id}; use another collection name"
                )
            index = cls(name, settings, embedder, chunking, store, side, chunker, clock, catalog=catalog)
            if manifest is not None:
                index._pull(manifest, wait=True)
                index._recover_shared()
        return index

    def _recover_shared(self) -> None:
        """After a crashed ingest (a pending record on the server): delete its rows if nobody is writing now."""
        if not self._catalog.pendings():
            return
        owner = new_owner()
        lease = self._catalog.lease(owner, self.settings.lease_ttl_s, wait_s=0)
        try:
            lease.acquire()
        except IndexError_:  # someone is writing: that writer sweeps
            return
        try:
            with self._side.write_lock():
                self._sweep(self._pull(locked=True), owner)
                self._side.clear_pending()
        finally:
            lease.release()

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
                            "created": _now(), "documents": {}, "uid": uuid.uuid4().hex}
                if not catalog.publish(manifest):
                    manifest = catalog.read_manifest()
        if manifest is None:
            raise IndexError_(f"could not create index {name!r} on {describe(settings)}; try again")
        return manifest

    def _pull(self, manifest: dict[str, Any] | None = None, locked: bool = False, wait: bool = False) -> _Snapshot:
        """Bring the cache to the server's current version (``manifest`` when the caller just read it) and return
        the snapshot. ``locked``: the caller holds the side store's write lock; else, when another process of this
        data directory holds it, ``wait`` for it, or (searching) keep the cache as it is until the next check."""
        catalog = self._catalog
        snapshot = self._snapshot
        if manifest is None:
            head = catalog.head()
            if head is None:
                raise _IndexGone(f"index {self.name!r} no longer exists on {describe(self.settings)} (deleted "
                                 "through another instance); open or create it again")
            if snapshot.manifest.get("uid") == head[1] and snapshot.generation == head[0]:
                return snapshot
            if snapshot.manifest.get("uid") not in (None, head[1]):
                self._reborn(catalog.read_manifest(head[0]) or {})
            manifest = catalog.read_manifest(head[0])
            if manifest is None:  # pruned between the two reads: a newer one exists
                return self._pull(None, locked, wait)
        if _same_version(snapshot.manifest, manifest):
            return snapshot
        file_lock = contextlib.nullcontext(True) if locked else self._side.write_lock(blocking=wait)
        with self._lock, file_lock as free:
            if not free or _same_version(self._snapshot.manifest, manifest):
                return self._snapshot
            cached = self._side.read_manifest() or {}
            if _same_version(cached, manifest):  # another process of this data directory pulled it already
                self._snapshot = self._load()
                return self._snapshot
            documents = manifest.get("documents", {})
            ids = [chunk_id for entry in documents.values() for chunk_id in entry.get("ids", [])]
            # Chunk ids name their content (document id = hash of name and text; chunking is fixed per index), so
            # chunks this instance already holds are reused and only the changed documents' rows are read.
            have = self._snapshot.chunks if self._snapshot.manifest.get("uid") == manifest.get("uid") else {}
            texts = self._store.documents([i for i in ids if i not in have])
            missing = [i for i in ids if i not in have and i not in texts]
            if missing:
                if catalog.head() != (int(manifest["generation"]), str(manifest.get("uid"))):
                    return self._pull(None, True)  # a writer committed and swept meanwhile: take the newer one
                raise IndexError_(f"index {self.name!r} on {describe(self.settings)} misses {len(missing)} chunk rows "
                                  "its manifest names; delete the collection and re-ingest")
            try:
                chunks = [have[i] if i in have else Chunk.from_dict(json.loads(texts[i])) for i in ids]
            except (ValueError, TypeError) as e:
                raise IndexError_(f"index {self.name!r} has a damaged chunk row on {describe(self.settings)} ({e}); "
                                  "delete the collection and re-ingest") from e
            snapshot = self._cache(manifest, chunks)
            self._mirror_sources([d for d, entry in documents.items() if entry.get("contextual", True)])
            return snapshot

    def _mirror_sources(self, doc_ids: list[str]) -> None:
        """Copy documents another instance indexed into this instance's document store (so its Documents page,
        Chunk Explorer and evaluations see them); a failure here never stops searching."""
        from rag_core.documents import DocumentStore

        try:
            store = DocumentStore(self.settings.data_dir)
            missing = [doc_id for doc_id in doc_ids if doc_id not in store]
            if missing:
                store.add_many(Document.from_dict(data) for data in self._catalog.sources(missing).values())
        except (RagError, OSError, ValueError, TypeError) as e:
            log.warning("index %r: could not copy documents into the local document store: %s", self.name, e)

    def _cache(self, manifest: dict[str, Any], chunks: list[Chunk], keyword: KeywordIndex | None = None,
               ) -> _Snapshot:
        """Write the local cache of a server version (one chunk segment, its BM25, the manifest) and use it."""
        generation = int(manifest["generation"])
        file_name = self._side.write_segment(generation, chunks)
        local = {key: value for key, value in manifest.items() if key != "documents"}
        local["documents"] = {doc_id: {**{k: v for k, v in entry.items() if k != "ids"}, "file": file_name}
                              for doc_id, entry in manifest.get("documents", {}).items()}
        by_id = {c.id: c for c in chunks}
        keyword = keyword or KeywordIndex.build(by_id, _names(local["documents"]))
        keyword.save(self._side.bm25_dir(generation))
        self._side.commit(local)
        by_doc: dict[str, list[Chunk]] = {doc_id: [] for doc_id in local["documents"]}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self._snapshot = _Snapshot(local, by_id, {d: _doc_order(cs) for d, cs in by_doc.items()}, keyword,
                                   self._side.stamp())
        _synced_stamps[self._side.root] = self._snapshot.stamp
        self._side.remove_unreferenced(local)
        return self._snapshot

    def _reborn(self, manifest: dict[str, Any]) -> None:
        """The index was deleted and created again (a new uid): reconnect to its new collection if it is built
        like this one, else refuse like ``Index.open`` would."""
        if manifest:
            _built_with(self.name, manifest, str(self.embedder.id), int(self.embedder.dim), self.chunking)
        self._store = ChromaVectorStore(client(self.settings), self.name, self._store_metadata, describe(self.settings))
        self._exact = None

    def _check_server(self) -> None:
        """At most every ``RAG_SYNC_S`` seconds: pull what another instance committed (a server that does not
        answer leaves the cache answering; vector search reports the server itself). An index deleted on the
        server raises until it is created again."""
        now = time.monotonic()
        if now - self._checked_at < self.settings.sync_s and not self._gone:
            return
        self._checked_at = now
        try:
            self._pull()
            self._gone = False
        except _IndexGone:
            self._gone = True
            raise
        except IndexError_ as e:
            log.warning("index %r answers from its local cache: %s", self.name, e)

    def source(self, doc_id: str) -> Document | None:
        """The indexed document ``doc_id`` as stored on the Chroma server (None embedded, or when unknown)."""
        if self._catalog is None:
            return None
        data = self._catalog.sources([doc_id]).get(doc_id)
        return Document.from_dict(data) if data else None

    def _recover(self) -> None:
        """After a crashed ingest: delete vectors and files the committed manifest does not name."""
        if self._side.read_pending() is not None:
            committed = self._snapshot.chunks
            orphans = [i for i in self._store.all_ids() if i not in committed]
            self._store.delete(orphans)
            self._side.clear_pending()
        self._side.remove_unreferenced(self._snapshot.manifest)

    def _load(self, attempts: int = 3) -> _Snapshot:
        stamp = self._side.stamp()
        manifest = self._side.read_manifest() or {"documents": {}, "generation": 0}
        chunks: dict[str, Chunk] = {}
        by_doc: dict[str, list[Chunk]] = {}
        documents = manifest.get("documents", {})
        try:
            for file_name in sorted({entry["file"] for entry in documents.values()}):
                for chunk in self._side.read_chunks(file_name):
                    # A segment may still hold chunks of documents replaced or removed since: skip those.
                    if documents.get(chunk.doc_id, {}).get("file") == file_name:
                        chunks[chunk.id] = chunk
                        by_doc.setdefault(chunk.doc_id, []).append(chunk)
            by_doc = {doc_id: _doc_order(by_doc.get(doc_id, [])) for doc_id in documents}
        except FileNotFoundError as e:
            if attempts > 1 and self._side.stamp() != stamp:  # another process committed while we read: retry
                return self._load(attempts - 1)
            raise IndexError_(f"index {self.name!r} is damaged ({e}); delete the collection and re-ingest") from e
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise IndexError_(f"index {self.name!r} is damaged ({e}); delete the collection and re-ingest") from e
        keyword = KeywordIndex.load(self._side.bm25_dir(int(manifest.get("generation", 0))), chunks,
                                    _names(documents))
        return _Snapshot(manifest, chunks, by_doc, keyword, stamp)

    def _current(self) -> _Snapshot:
        """The committed snapshot, reloaded when another process committed since."""
        snapshot = self._snapshot
        if self._side.stamp() != snapshot.stamp:
            with self._lock:
                if self._side.stamp() != self._snapshot.stamp:
                    self._snapshot = self._load()
                    self._sync_store()
                snapshot = self._snapshot
        if self._catalog is not None:
            self._check_server()
            snapshot = self._snapshot
        return snapshot

    def _sync_store(self) -> None:
        """Reconnect to embedded Chroma when another process wrote to this collection (see ``fresh_client``)."""
        root, stamp = self._side.root, self._snapshot.stamp
        if root in _synced_stamps and _synced_stamps[root] != stamp and not self.settings.chroma_host:
            fresh = fresh_client(self.settings)
            if fresh is not None:
                self._store = ChromaVectorStore(fresh, self.name, self._store_metadata, describe(self.settings))
        _synced_stamps[root] = stamp

    # --- writing ------------------------------------------------------------------------------------
    def _chunk(self, doc: Document) -> list[Chunk]:
        chunker = self._chunker
        if chunker is None:
            try:
                from rag_core.chunking import chunk_document as chunker
            except ImportError as e:
                raise IndexError_("the chunker (rag_core.chunking) is not available in this installation") from e
        return chunker(doc, self.chunking, "all")

    def ingest(self, docs: Sequence[Document], progress: Progress | None = None, *, force: bool = False,
               replace_same_name: bool = True) -> IngestReport:
        """Chunk at all granularities, embed and write ``docs`` atomically.

        A document already indexed (same id) is skipped unless ``force``; with ``replace_same_name`` a new
        version of a document (same name, new content) replaces the old one. A document the chunker
        rejects is reported in ``errors`` and the others are still indexed.
        """
        started = time.perf_counter()
        report = IngestReport(self.name, documents=len(docs))
        indexed = self._current().manifest.get("documents", {})
        entries: list[tuple[Document, list[Chunk]]] = []
        per_doc, per_ingest, total = self.settings.max_chunks_per_document, self.settings.max_chunks_per_ingest, 0
        for doc in docs:
            if not isinstance(doc, Document):
                raise ValueError(f"ingest takes Document objects, got {type(doc).__name__}")
            if doc.id in indexed and not force:
                report.unchanged.append(doc.id)
                continue
            try:
                chunks = self._chunk(doc)
            except (RagError, ValueError) as e:
                report.errors[doc.name] = str(e)
                continue
            if len(chunks) > per_doc:  # the limits bound what one upload can make the machine embed
                report.errors[doc.name] = (f"{len(chunks):,} chunks, over the limit of {per_doc:,} per document "
                                           "(RAG_MAX_CHUNKS_PER_DOCUMENT); split the file or raise max tokens")
                continue
            if total + len(chunks) > per_ingest:
                report.errors[doc.name] = (f"not indexed: this batch already holds {total:,} chunks and the limit "
                                           f"per ingest is {per_ingest:,} (RAG_MAX_CHUNKS_PER_INGEST); index it "
                                           "in another batch")
                continue
            total += len(chunks)
            unique = _first_by_id(chunks)
            if len(unique) != len(chunks):
                repeats = len(chunks) - len(unique)
                message = f"{doc.name}: {repeats} duplicate chunk id(s) from the chunker; kept the first"
                log.warning(message)
                report.warnings.append(message)
            entries.append((doc, unique))
        self._write(entries, [], progress, report, replace_same_name)
        report.seconds = time.perf_counter() - started
        return report

    def add_chunks(self, docs: Sequence[Document], chunks: Sequence[Chunk], progress: Progress | None = None,
                   ) -> IngestReport:
        """Index pre-chunked input (e.g. a BEIR corpus with one chunk per document), replacing those documents."""
        if len(chunks) > self.settings.max_chunks_per_ingest:
            raise ValueError(f"{len(chunks):,} chunks in one batch; the limit per ingest is "
                             f"{self.settings.max_chunks_per_ingest:,} (RAG_MAX_CHUNKS_PER_INGEST)")
        started = time.perf_counter()
        report = IngestReport(self.name, documents=len(docs))
        by_doc: dict[str, list[Chunk]] = {doc.id: [] for doc in docs}
        for chunk in chunks:
            if chunk.doc_id not in by_doc:
                raise ValueError(f"chunk {chunk.id} belongs to document {chunk.doc_id}, which is not among the docs")
            by_doc[chunk.doc_id].append(chunk)
        self._write([(doc, by_doc[doc.id]) for doc in docs], [], progress, report, False, contextual=False)
        report.seconds = time.perf_counter() - started
        return report

    def remove_document(self, doc_id: str) -> bool:
        """Remove a document from both tiers; False when it was not indexed."""
        in_hot = self.hot.remove(doc_id)
        if doc_id not in self._current().manifest.get("documents", {}):
            return in_hot
        self._write([], [doc_id], None, IngestReport(self.name), False)
        return True

    def _write(self, entries: list[tuple[Document, list[Chunk]]], remove_doc_ids: list[str],
               progress: Progress | None, report: IngestReport, replace_same_name: bool, contextual: bool = True,
               ) -> None:
        """Commit ``entries`` and removals atomically; ``contextual=False`` embeds pre-chunked text as it is
        (see ``rag_core.stores.contextual``)."""
        if not entries and not remove_doc_ids:
            return
        if self._catalog is not None:
            for attempt in range(1, COMMIT_ATTEMPTS + 1):
                try:
                    self._write_shared(entries, remove_doc_ids, progress, report, replace_same_name, contextual)
                    return
                except _CommitConflict:
                    if attempt == COMMIT_ATTEMPTS:
                        raise
                    log.warning("index %r: another writer committed first; writing again on top of it", self.name)
                    report.added.clear()
                    report.replaced.clear()
                    report.chunks.clear()
                    report.embedded = 0
        with self._lock, self._side.write_lock():
            old = self._current()
            documents = dict(old.manifest.get("documents", {}))
            replaced, new_chunks, stale, fresh = _plan(old, documents, entries, remove_doc_ids, report,
                                                       replace_same_name)
            self._side.write_pending(fresh, stale)
            try:
                self._upsert(entries, new_chunks, progress, report, contextual)
                generation = old.generation + 1
                now = _now()
                for doc_id in replaced:
                    documents.pop(doc_id, None)
                file_name = self._side.write_segment(generation, new_chunks) if entries else ""
                for doc, doc_chunks in entries:
                    entry = _entry(doc, doc_chunks, now, contextual)
                    documents[doc.id] = {"name": entry.pop("name"), "file": file_name, **entry}  # the order as before
                chunks = {i: c for i, c in old.chunks.items() if c.doc_id not in replaced}
                chunks.update((c.id, c) for c in new_chunks)
                keyword = KeywordIndex.build(chunks, _names(documents))
                keyword.save(self._side.bm25_dir(generation))
                manifest = {**old.manifest, "generation": generation, "updated": now, "documents": documents}
                self._side.commit(manifest)  # the commit point
            except BaseException:
                # Roll back what we can now; whatever is left the next open cleans up (pending marker stays).
                try:
                    self._store.delete(fresh)
                    self._side.remove_unreferenced(old.manifest)
                    self._side.clear_pending()
                except Exception:  # noqa: S110 - best effort; recovery on next open finishes the job
                    pass
                raise
            by_doc = {d: cs for d, cs in old.by_doc.items() if d not in replaced}
            by_doc.update((doc.id, _doc_order(doc_chunks)) for doc, doc_chunks in entries)
            self._snapshot = _Snapshot(manifest, chunks, by_doc, keyword, self._side.stamp())
            _synced_stamps[self._side.root] = self._snapshot.stamp
            self._store.delete(stale)
            report.removed_chunks = len(stale)
            self._side.remove_unreferenced(manifest)
            self._side.clear_pending()

    def _write_shared(self, entries: list[tuple[Document, list[Chunk]]], remove_doc_ids: list[str],
                      progress: Progress | None, report: IngestReport, replace_same_name: bool, contextual: bool,
                      ) -> None:
        """``_write`` with a Chroma server: under the index's lease, on top of the server's current version,
        rows first, then the claim of the next generation's manifest (the commit), then the cache and cleanup."""
        catalog, owner = self._catalog, new_owner()
        lease = catalog.lease(owner, self.settings.lease_ttl_s, self.settings.lease_wait_s)
        with self._lock, self._side.write_lock(), lease:
            old = self._pull(locked=True)
            self._sweep(old, owner)
            documents = {d: dict(e) for d, e in old.manifest.get("documents", {}).items()}
            replaced, new_chunks, stale, fresh = _plan(old, documents, entries, remove_doc_ids, report,
                                                       replace_same_name)
            # Swept by the next writer if this one dies: rows of ``fresh`` not committed, rows of ``stale`` no
            # longer named once committed (a sweep keeps whatever the manifest of its time names).
            catalog.write_pending(owner, fresh + stale)
            self._side.write_pending(fresh, stale)
            generation = old.generation + 1
            try:
                self._upsert(entries, new_chunks, progress, report, contextual, lease)
                now = _now()
                for doc_id in replaced:
                    documents.pop(doc_id, None)
                ids: dict[str, list[str]] = {}
                for doc, doc_chunks in entries:
                    documents[doc.id] = _entry(doc, doc_chunks, now, contextual)
                    ids[doc.id] = [c.id for c in doc_chunks]
                for doc_id in documents:
                    documents[doc_id].pop("file", None)
                    ids.setdefault(doc_id, [c.id for c in old.by_doc.get(doc_id, [])])
                kept = [c for c in old.chunks.values() if c.doc_id not in replaced] + new_chunks
                keyword = KeywordIndex.build({c.id: c for c in kept}, _names(documents))  # before the commit
                catalog.put_sources([doc.to_dict() for doc, _ in entries])
                server = {key: value for key, value in old.manifest.items() if key not in ("documents", "version")}
                server.update(generation=generation, updated=now,
                              documents={d: {**e, "ids": ids[d]} for d, e in documents.items()})
                lease.renew(force=True)
                if not catalog.publish(server):  # the commit point
                    raise _CommitConflict(f"another instance committed generation {generation} of index "
                                          f"{self.name!r} first ({COMMIT_ATTEMPTS} times; leases expiring under "
                                          "slow writes?); nothing of this write was committed, try again")
            except BaseException:
                try:  # rows no committed manifest names are invisible; remove ours now if we can
                    head = catalog.read_manifest() or {}
                    named = {i for e in head.get("documents", {}).values() for i in e.get("ids", [])}
                    self._store.delete([i for i in fresh if i not in named])
                    catalog.clear_pending(owner)
                    self._side.clear_pending()
                except Exception:  # noqa: S110 - best effort; the next writer sweeps the pending rows
                    pass
                raise
            try:  # the cache of the new generation, from what was just written
                self._cache(server, kept, keyword)
            except OSError as e:  # committed on the server all the same: the next check rebuilds the cache
                log.warning("index %r: could not write the local cache of generation %d: %s", self.name, generation, e)
            report.removed_chunks = len(stale)
            try:
                self._store.delete(stale)
                catalog.delete_sources(d for d in replaced if d not in documents)
                catalog.clear_pending(owner)
                self._side.clear_pending()
                catalog.prune(generation - 2)
            except IndexError_ as e:  # committed all the same; the next writer sweeps what is left
                log.warning("index %r: cleanup after generation %d failed: %s", self.name, generation, e)

    def _sweep(self, current: _Snapshot, owner: str) -> None:
        """Delete rows of writes that died before committing (their pending records), keeping every row the
        current manifest names. Runs under the lease, so those writers no longer hold it."""
        for pending_owner, ids in self._catalog.pendings():
            if pending_owner != owner:
                log.info("removing %d uncommitted rows of %r left by %s", len(ids), self.name, pending_owner)
                self._store.delete([i for i in ids if i not in current.chunks])
                self._catalog.clear_pending(pending_owner)

    def _upsert(self, entries, new_chunks: list[Chunk], progress: Progress | None, report: IngestReport,
                contextual: bool = True, lease=None) -> None:
        names = {doc.id: doc.name for doc, _ in entries}
        updated = _now()
        last = [-1]

        def report_progress(done: int, total: int) -> None:
            if lease is not None:
                lease.renew()
            if progress is not None and done != last[0]:  # the embedder and we may both report the same count
                last[0] = done
                progress(done, total)

        try:
            vectors = embed_chunks(new_chunks, names, self.embedder.embed_documents, int(self.embedder.dim),
                                   report_progress, contextual, batch=WRITE_BATCH)
        except ValueError as e:
            raise IndexError_(f"embedder {self.embedder.id}: {e}") from e
        for start in range(0, len(new_chunks), WRITE_BATCH):
            batch = new_chunks[start : start + WRITE_BATCH]
            metadatas = [chunk_metadata(c, names[c.doc_id], updated) for c in batch]
            if lease is not None:  # with a Chroma server each row carries its whole chunk (the server is the record)
                lease.renew()
                self._store.upsert([c.id for c in batch], vectors[start : start + WRITE_BATCH], metadatas,
                                   [json.dumps(c.to_dict(), ensure_ascii=False) for c in batch])
            else:
                self._store.upsert([c.id for c in batch], vectors[start : start + WRITE_BATCH], metadatas)
            report.embedded += len(batch)
        for chunk in new_chunks:
            report.chunks[chunk.granularity] = report.chunks.get(chunk.granularity, 0) + 1

    def add_hot(self, doc: Document, ttl_s: float) -> list[Chunk]:
        """Keep ``doc`` in memory for ``ttl_s`` seconds, searched with the rest; returns its chunks."""
        if not ttl_s or ttl_s <= 0:
            raise ValueError(f"ttl_s must be a positive number of seconds, got {ttl_s!r}")
        chunks = self._chunk(doc)
        vectors = embed_chunks(chunks, {doc.id: doc.name}, self.embedder.embed_documents, int(self.embedder.dim))
        self.hot.add(doc.id, doc.name, chunks, vectors, ttl_s)
        return chunks

    # --- reading ------------------------------------------------------------------------------------
    def documents(self) -> list[dict[str, Any]]:
        """One dict per indexed document: doc_id, name, tier, chunks per granularity, updated."""
        rows = [{"doc_id": doc_id, "tier": "persistent", **entry}
                for doc_id, entry in self._current().manifest.get("documents", {}).items()]
        for entry in self.hot.entries():
            counts: dict[str, int] = {}
            for chunk in entry.chunks:
                counts[chunk.granularity] = counts.get(chunk.granularity, 0) + 1
            rows.append({"doc_id": entry.doc_id, "name": entry.name, "tier": "hot", "chunks": counts,
                         "expires_in_s": round(self.hot.seconds_left(entry), 1)})
        for row in rows:
            row.pop("file", None)
        return rows

    def doc_name(self, doc_id: str) -> str:
        """The source name of a document ("" when unknown)."""
        entry = self._current().manifest.get("documents", {}).get(doc_id)
        if entry:
            return entry["name"]
        return next((e.name for e in self.hot.entries() if e.doc_id == doc_id), "")

    def count(self) -> dict[str, int]:
        """Chunks per granularity in both tiers (from the manifest's per-document counts: no scan)."""
        counts = dict.fromkeys(GRANULARITIES, 0)
        for entry in self._current().manifest.get("documents", {}).values():
            for granularity, n in entry.get("chunks", {}).items():
                counts[granularity] = counts.get(granularity, 0) + n
        for chunk in self.hot.chunks():
            counts[chunk.granularity] = counts.get(chunk.granularity, 0) + 1
        return counts

    def get(self, chunk_id: str) -> Chunk | None:
        return self._current().chunks.get(chunk_id) or self.hot.get(chunk_id)

    def get_many(self, ids: Iterable[str]) -> list[Chunk]:
        """Chunks of ``ids`` that exist, in the given order."""
        found = (self.get(i) for i in ids)
        return [c for c in found if c is not None]

    def chunks(self, doc_id: str | None = None, granularity: str | None = None) -> list[Chunk]:
        """Chunks in document order, optionally of one document and/or granularity."""
        _as_list(granularity, GRANULARITIES, "granularity")
        snapshot = self._current()
        hot_by_doc: dict[str, list[Chunk]] = {}
        for entry in self.hot.entries():
            hot_by_doc[entry.doc_id] = _doc_order(entry.chunks)
        groups = {**snapshot.by_doc, **hot_by_doc}
        selected = [groups.get(doc_id, [])] if doc_id is not None else list(groups.values())
        return [c for group in selected for c in group if granularity is None or c.granularity == granularity]

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.embedder.embed_documents(list(texts)), dtype=np.float32)

    # --- search -------------------------------------------------------------------------------------
    def vector_search(self, query: str, k: int, filters: Filters | None = None, exclude_ids: Iterable[str] = (),
                      ) -> list[tuple[Chunk, float]]:
        """Chunks by cosine similarity to ``query`` (in [-1, 1]), best first, both tiers."""
        filters = filters or Filters()
        if not _check_search(query, k):
            return []
        snapshot = self._current()
        exclude = set(exclude_ids)
        query_vector = np.asarray(self.embedder.embed_query(query), dtype=np.float32)
        hits: list[tuple[Chunk, float]] = []
        exact = self._exact_vectors(snapshot)
        if exact is not None and k > 0:
            found = exact.search(query_vector, k, filters.granularity, filters.chunk_types, filters.doc_ids, exclude)
            hits = [(snapshot.chunks[i], s) for i, s in found]
        elif snapshot.chunks and k > 0:
            where = build_where(filters.granularity, filters.chunk_types, filters.doc_ids)
            # Over-fetch: the store may hold vectors of an uncommitted ingest, and excluded ids are dropped here.
            n = min(k + len(exclude) + 8, len(snapshot.chunks) + 64)
            while True:
                found = self._store.query(query_vector, n, where)
                hits = [(snapshot.chunks[i], s) for i, s in found if i in snapshot.chunks and i not in exclude]
                if len(hits) >= k or len(found) < n:
                    break
                n *= 2
        allowed = lambda c: chunk_allowed(c, filters.granularity, filters.chunk_types, filters.doc_ids)  # noqa: E731
        hits.extend(self.hot.vector_search(query_vector, k, allowed, exclude))
        best: dict[str, tuple[Chunk, float]] = {}
        for chunk, score in hits:  # a chunk in both tiers (re-added hot) counts once
            if chunk.id not in best or score > best[chunk.id][1]:
                best[chunk.id] = (chunk, score)
        return sorted(best.values(), key=lambda pair: -pair[1])[:k]

    def _exact_vectors(self, snapshot: _Snapshot) -> ExactVectors | None:
        """Exact search data for ``snapshot`` (read once per index version), or None to search Chroma's HNSW:
        a Chroma server (scale-out keeps the search there) or more than ``EXACT_MAX_CHUNKS`` chunks."""
        cached = self._exact
        if cached is not None and cached[0] is snapshot:
            return cached[1]
        exact = None
        if not self.settings.chroma_host and 0 < len(snapshot.chunks) <= EXACT_MAX_CHUNKS:
            exact = ExactVectors.from_store(snapshot.chunks, self._store)
        self._exact = (snapshot, exact)
        return exact

    def keyword_search(self, query: str, k: int, filters: Filters | None = None, exclude_ids: Iterable[str] = (),
                       ) -> list[tuple[Chunk, float]]:
        """Chunks by raw BM25 score (positive only), best first, both tiers."""
        filters = filters or Filters()
        if not _check_search(query, k):
            return []
        snapshot = self._current()
        args = (filters.granularity, filters.chunk_types, filters.doc_ids, exclude_ids)
        hits = [(snapshot.chunks[i], s) for i, s in snapshot.keyword.search(query, k, *args)]
        hits.extend(self.hot.keyword_search(query, k, *args))
        hits.sort(key=lambda pair: -pair[1])
        return hits[:k]
