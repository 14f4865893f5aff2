"""Writing an index: ingest, pre-chunked input, removal, the atomic commit, recovery and the hot tier.

Writes are atomic: new vectors are upserted first under a ``pending`` marker, then the side store's manifest is
replaced in one ``os.replace`` (the commit), then stale vectors are deleted. An ingest that fails or is killed
midway leaves the previous index answering, and the next open deletes the orphaned vectors. Writers of one data
directory exclude each other with a file lock.

With a Chroma server each chunk row carries its full JSON, writers take a lease there and a commit claims the next
generation's manifest in the server; the same rows-first, manifest-second order keeps a crashed writer's rows
invisible, and the next writer sweeps them.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from rag_core.chunking import chunk_document
from rag_core.errors import IndexError_, RagError
from rag_core.index.model import IngestReport, Snapshot, doc_order, keyword_names, timestamp
from rag_core.index.progress import FileEvent, FileEvents, FileProgress
from rag_core.index.sync import synced_stamps
from rag_core.loaders.load import check_text_size
from rag_core.stores.contextual import embed_chunks
from rag_core.stores.keyword import KeywordIndex
from rag_core.stores.shared import new_owner
from rag_core.stores.vector import chunk_metadata
from rag_core.types import Chunk, Document, Progress

log = logging.getLogger(__name__)


# Chunks embedded and written per step, so memory stays bounded and progress moves on large corpora; read at each
# write, so setting ``rag_core.index.writes.WRITE_BATCH`` tunes it (tests make it small).
WRITE_BATCH = 512


class _CommitConflict(IndexError_):
    """Another writer claimed the generation this write was about to commit."""


# Attempts of a write whose commit another writer pre-empted (only when a lease expired under a slow writer).
COMMIT_ATTEMPTS = 3


def _first_by_id(chunks: list[Chunk]) -> list[Chunk]:
    """``chunks`` without later repeats of an id (ids are the store keys, so a repeat cannot be stored twice)."""
    seen: set[str] = set()
    unique = []
    for chunk in chunks:
        if chunk.id not in seen:
            seen.add(chunk.id)
            unique.append(chunk)
    return unique


def _plan(old: Snapshot, documents: dict[str, Any], entries: list[tuple[Document, list[Chunk]]],
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


class IndexWrites:
    """Mixin for ``Index``: every change to an index; needs ``name``, ``settings``, ``embedder``, ``chunking``,
    ``hot``, ``_store``, ``_side``, ``_lock``, ``_chunker``, ``_catalog`` and ``IndexSync``."""

    def _chunk(self, doc: Document) -> list[Chunk]:
        chunker = self._chunker or chunk_document
        return chunker(doc, self.chunking, "all")

    def ingest(self, docs: Sequence[Document], progress: Progress | None = None, *, force: bool = False,
               replace_same_name: bool = True, on_file: FileEvents | None = None) -> IngestReport:
        """Chunk at all granularities, embed and write ``docs`` atomically.

        A document already indexed (same id) is skipped unless ``force``; with ``replace_same_name`` a new
        version of a document (same name, new content) replaces the old one. A document the chunker
        rejects is reported in ``errors`` and the others are still indexed. ``on_file`` hears each document's
        states as they happen (``rag_core.index.progress``): chunking, chunked (with its chunk count), embedding
        (its own chunks embedded so far), embedded; or unchanged, failed. The commit follows the last one.
        """
        tell = on_file or (lambda event: None)
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
                tell(FileEvent(doc.id, "unchanged"))
                continue
            tell(FileEvent(doc.id, "chunking"))
            try:
                check_text_size(doc.name, len(doc.text), self.settings.max_document_mb)  # a bundle's, say
                chunks = self._chunk(doc)
            except (RagError, ValueError) as e:
                report.errors[doc.name] = str(e)
                tell(FileEvent(doc.id, "failed", error=str(e)))
                continue
            if len(chunks) > per_doc:  # the limits bound what one upload can make the machine embed
                report.errors[doc.name] = (f"{len(chunks):,} chunks, over the limit of {per_doc:,} per document "
                                           "(RAG_MAX_CHUNKS_PER_DOCUMENT); split the file or raise max tokens")
                tell(FileEvent(doc.id, "failed", total=len(chunks), error=report.errors[doc.name]))
                continue
            if total + len(chunks) > per_ingest:
                report.errors[doc.name] = (f"not indexed: this batch already holds {total:,} chunks and the limit "
                                           f"per ingest is {per_ingest:,} (RAG_MAX_CHUNKS_PER_INGEST); index it "
                                           "in another batch")
                tell(FileEvent(doc.id, "chunked", total=len(chunks)))  # not failed: it waits for a batch of its own
                continue
            total += len(chunks)
            unique = _first_by_id(chunks)
            if len(unique) != len(chunks):
                repeats = len(chunks) - len(unique)
                message = f"{doc.name}: {repeats} duplicate chunk id(s) from the chunker; kept the first"
                log.warning(message)
                report.warnings.append(message)
            entries.append((doc, unique))
            tell(FileEvent(doc.id, "chunked", 0, len(unique)))
        self._write(entries, [], progress, report, replace_same_name, on_file=on_file)
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
               on_file: FileEvents | None = None) -> None:
        """Commit ``entries`` and removals atomically; ``contextual=False`` embeds pre-chunked text as it is
        (see ``rag_core.stores.contextual``)."""
        if not entries and not remove_doc_ids:
            return
        if self._catalog is not None:
            for attempt in range(1, COMMIT_ATTEMPTS + 1):
                try:
                    self._write_shared(entries, remove_doc_ids, progress, report, replace_same_name, contextual,
                                       on_file)
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
                self._upsert(entries, new_chunks, progress, report, contextual, on_file=on_file)
                generation = old.generation + 1
                now = timestamp()
                for doc_id in replaced:
                    documents.pop(doc_id, None)
                file_name = self._side.write_segment(generation, new_chunks) if entries else ""
                for doc, doc_chunks in entries:
                    entry = _entry(doc, doc_chunks, now, contextual)
                    documents[doc.id] = {"name": entry.pop("name"), "file": file_name, **entry}  # the order as before
                chunks = {i: c for i, c in old.chunks.items() if c.doc_id not in replaced}
                chunks.update((c.id, c) for c in new_chunks)
                keyword = KeywordIndex.build(chunks, keyword_names(documents))
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
            by_doc.update((doc.id, doc_order(doc_chunks)) for doc, doc_chunks in entries)
            self._snapshot = Snapshot(manifest, chunks, by_doc, keyword, self._side.stamp())
            synced_stamps[self._side.root] = self._snapshot.stamp
            self._store.delete(stale)
            report.removed_chunks = len(stale)
            self._side.remove_unreferenced(manifest)
            self._side.clear_pending()

    def _write_shared(self, entries: list[tuple[Document, list[Chunk]]], remove_doc_ids: list[str],
                      progress: Progress | None, report: IngestReport, replace_same_name: bool, contextual: bool,
                      on_file: FileEvents | None = None) -> None:
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
                self._upsert(entries, new_chunks, progress, report, contextual, lease, on_file)
                now = timestamp()
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
                keyword = KeywordIndex.build({c.id: c for c in kept}, keyword_names(documents))  # before the commit
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

    def _sweep(self, current: Snapshot, owner: str) -> None:
        """Delete rows of writes that died before committing (their pending records), keeping every row the
        current manifest names. Runs under the lease, so those writers no longer hold it."""
        for pending_owner, ids in self._catalog.pendings():
            if pending_owner != owner:
                log.info("removing %d uncommitted rows of %r left by %s", len(ids), self.name, pending_owner)
                self._store.delete([i for i in ids if i not in current.chunks])
                self._catalog.clear_pending(pending_owner)

    def _upsert(self, entries, new_chunks: list[Chunk], progress: Progress | None, report: IngestReport,
                contextual: bool = True, lease=None, on_file: FileEvents | None = None) -> None:
        names = {doc.id: doc.name for doc, _ in entries}
        updated = timestamp()
        last = [-1]
        files: list[FileProgress] = []  # set from the plan: texts embedded → each file's own chunks

        def report_progress(done: int, total: int, label: str = "") -> None:
            if lease is not None:
                lease.renew()
            if on_file is not None and files:
                for event in files[0].update(done):
                    on_file(event)
            if progress is not None and done != last[0]:  # the embedder and we may both report the same count
                last[0] = done
                progress(done, total)

        def planned(plan) -> None:
            if on_file is not None:
                files.append(FileProgress.from_plan([doc.id for doc, _ in entries], new_chunks, plan))

        write_batch = WRITE_BATCH
        try:
            vectors = embed_chunks(new_chunks, names, self.embedder.embed_documents, int(self.embedder.dim),
                                   report_progress, contextual, batch=write_batch, on_plan=planned)
        except ValueError as e:
            raise IndexError_(f"embedder {self.embedder.id}: {e}") from e
        for start in range(0, len(new_chunks), write_batch):
            batch = new_chunks[start : start + write_batch]
            metadatas = [chunk_metadata(c, names[c.doc_id], updated) for c in batch]
            if lease is not None:  # with a Chroma server each row carries its whole chunk (the server is the record)
                lease.renew()
                self._store.upsert([c.id for c in batch], vectors[start : start + write_batch], metadatas,
                                   [json.dumps(c.to_dict(), ensure_ascii=False) for c in batch])
            else:
                self._store.upsert([c.id for c in batch], vectors[start : start + write_batch], metadatas)
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

    def _recover(self) -> None:
        """After a crashed ingest: delete vectors and files the committed manifest does not name."""
        if self._side.read_pending() is not None:
            committed = self._snapshot.chunks
            orphans = [i for i in self._store.all_ids() if i not in committed]
            self._store.delete(orphans)
            self._side.clear_pending()
        self._side.remove_unreferenced(self._snapshot.manifest)

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

