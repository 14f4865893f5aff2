"""The committed snapshot of an index and keeping it current before every read, search and write.

Readers take no lock: they use an immutable ``Snapshot`` swapped on commit. Several processes may share one data
directory (the app and ``python -m rag_core ingest``): readers reload the side store when another process
committed. Embedded Chroma keeps its vector index in process memory, so such a reload also reconnects this process
to the collection (``_sync_store``).

With a Chroma server (``RAG_CHROMA_HOST``) the server is the system of record and the side store a cache
(``rag_core.stores.shared``): every instance rebuilds its cache (chunk map, BM25) when the server's generation
changed, checked on open, before each write and at most every ``RAG_SYNC_S`` seconds while searching.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any

from rag_core.errors import IndexError_, RagError
from rag_core.index.model import Snapshot, built_with, doc_order, keyword_names
from rag_core.loaders.document_store import DocumentStore
from rag_core.stores.backends import describe, open_vector_store, server_mode
from rag_core.stores.keyword import KeywordIndex
from rag_core.types import Chunk, Document

log = logging.getLogger(__name__)

# Per index directory: the manifest stamp this process's Chroma view matches (its own commits, or the last
# reconnect); a different stamp means another process wrote since.
synced_stamps: dict[Path, tuple[int, int] | None] = {}


class _IndexGone(IndexError_):
    """The index was deleted on the Chroma server (through another instance)."""


def _same_version(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two manifests are the same server version (same index incarnation and generation)."""
    return a.get("uid") is not None and a.get("uid") == b.get("uid") and a.get("generation") == b.get("generation")


class IndexSync:
    """Mixin for ``Index``: the snapshot (``_snapshot``) and its refresh; needs ``name``, ``settings``, ``embedder``,
    ``chunking``, ``_side``, ``_store``, ``_lock`` and, with a Chroma server, ``_catalog``."""

    def _current(self) -> Snapshot:
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
        if root in synced_stamps and synced_stamps[root] != stamp and not server_mode(self.settings):
            self._store = open_vector_store(self.settings, self.name, self._store_metadata, fresh=True)
        synced_stamps[root] = stamp

    def _load(self, attempts: int = 3) -> Snapshot:
        """The committed snapshot the side store holds (read again when another process commits meanwhile)."""
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
            by_doc = {doc_id: doc_order(by_doc.get(doc_id, [])) for doc_id in documents}
        except FileNotFoundError as e:
            if attempts > 1 and self._side.stamp() != stamp:  # another process committed while we read: retry
                return self._load(attempts - 1)
            raise IndexError_(f"index {self.name!r} is damaged ({e}); delete the collection and re-ingest") from e
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise IndexError_(f"index {self.name!r} is damaged ({e}); delete the collection and re-ingest") from e
        keyword = KeywordIndex.load(self._side.bm25_dir(int(manifest.get("generation", 0))), chunks,
                                    keyword_names(documents))
        return Snapshot(manifest, chunks, by_doc, keyword, stamp)

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

    def _pull(self, manifest: dict[str, Any] | None = None, locked: bool = False, wait: bool = False) -> Snapshot:
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
            try:
                cached = self._side.read_manifest() or {}
            except IndexError_:  # a damaged cache: the server's manifest replaces it below
                cached = {}
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
        try:
            store = DocumentStore(self.settings.data_dir)
            missing = [doc_id for doc_id in doc_ids if doc_id not in store]
            if missing:
                store.add_many(Document.from_dict(data) for data in self._catalog.sources(missing).values())
        except (RagError, OSError, ValueError, TypeError) as e:
            log.warning("index %r: could not copy documents into the local document store: %s", self.name, e)

    def _cache(self, manifest: dict[str, Any], chunks: list[Chunk], keyword: KeywordIndex | None = None,
               ) -> Snapshot:
        """Write the local cache of a server version (one chunk segment, its BM25, the manifest) and use it."""
        generation = int(manifest["generation"])
        file_name = self._side.write_segment(generation, chunks)
        local = {key: value for key, value in manifest.items() if key != "documents"}
        local["documents"] = {doc_id: {**{k: v for k, v in entry.items() if k != "ids"}, "file": file_name}
                              for doc_id, entry in manifest.get("documents", {}).items()}
        by_id = {c.id: c for c in chunks}
        keyword = keyword or KeywordIndex.build(by_id, keyword_names(local["documents"]))
        keyword.save(self._side.bm25_dir(generation))
        self._side.commit(local)
        by_doc: dict[str, list[Chunk]] = {doc_id: [] for doc_id in local["documents"]}
        for chunk in chunks:
            by_doc.setdefault(chunk.doc_id, []).append(chunk)
        self._snapshot = Snapshot(local, by_id, {d: doc_order(cs) for d, cs in by_doc.items()}, keyword,
                                   self._side.stamp())
        synced_stamps[self._side.root] = self._snapshot.stamp
        self._side.remove_unreferenced(local)
        return self._snapshot

    def _reborn(self, manifest: dict[str, Any]) -> None:
        """The index was deleted and created again (a new uid): reconnect to its new collection if it is built
        like this one, else refuse like ``Index.open`` would."""
        if manifest:
            built_with(self.name, manifest, str(self.embedder.id), int(self.embedder.dim), self.chunking)
        self._store = open_vector_store(self.settings, self.name, self._store_metadata)
        self._exact = None

