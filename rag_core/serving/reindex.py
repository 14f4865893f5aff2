"""Re-indexing beside the serving index, then one swap: searches never read a half-built index.

``start_reindex`` stores the configuration as the active one (for every session) and queues an ingest job into the
new settings' own index (its own Chroma collection and BM25 index, named by chunking + embedder); searches keep
using the serving index meanwhile (``rag_core.serving.activestate``). When the job completed, ``_finish`` indexes what
changed in the document store while it ran, moves the pointer in one write, and removes the replaced index. A
failed or cancelled re-index leaves the pointer where it was and removes the partial index it built.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_core.config import RAGConfig, Settings
from rag_core.errors import IndexError_
from rag_core.loaders.document_store import DocumentStore
from rag_core.serving.activestate import (
    ActiveStore,
    IndexPointer,
    IndexSpec,
    Reindex,
    active_config,
    drop_target,
    now,
    pointer,
)
from rag_core.serving.jobs import FileStatus, JobRunner, JobStatus, runner_for
from rag_core.stores.collections import delete_collection, read_manifest

if TYPE_CHECKING:
    from rag_core.types import Document

log = logging.getLogger(__name__)


class ReindexIncomplete(IndexError_):
    """The new index misses documents the serving one holds: it does not replace it."""


def needs_reindex(settings: Settings, config: RAGConfig | None = None) -> IndexPointer | None:
    """The pointer when the serving index was built with other settings than the active configuration's and no
    re-index is building them (the user has to re-index); None otherwise."""
    config = config or active_config(settings)
    current = pointer(settings, config)
    if current.reindex is None and current.serving.collection != config.collection_name():
        return current
    return None


def start_reindex(settings: Settings, config: RAGConfig, target_index, docs: Sequence[Document], *,
                  runner: JobRunner | None = None, title: str | None = None,
                  previous: RAGConfig | None = None) -> JobStatus | None:
    """Make ``config`` the active configuration (a saved one of its name is a snapshot: left as it is) and queue
    re-indexing ``docs`` into ``target_index`` (``config``'s index) as a job; None when the
    serving index is already built that way.

    ``previous`` is the active configuration the caller saw, whose index serves until a pointer is stored. A
    re-index still building other settings is cancelled: the last choice wins.
    """
    target = IndexSpec.of(config)
    if target_index.name != target.collection:
        raise ValueError(f"the re-index of {target.collection!r} cannot write into {target_index.name!r}")
    runner = runner or runner_for(settings.data_dir)
    store = ActiveStore.for_settings(settings)
    with store.locked():  # held until the pointer names the job: its finish waits for this lock
        current = pointer(settings, previous or active_config(settings, store), store)
        store.save_config(config)
        if current.reindex is not None:
            runner.cancel(current.reindex.job)
        if target.collection == current.serving.collection:
            if current.reindex is not None:
                store.save_pointer(current.model_copy(update={"reindex": None, "changed": now()}))
            return None
        existed = bool(target_index.documents())
        chunking = config.chunking
        job = runner.submit_ingest(
            target_index, docs, kind="reindex", settings=chunking.model_dump(),
            title=title or (f"Re-indexing {len(docs)} document(s): {chunking.strategy} {chunking.max_tokens} tok, "
                            f"overlap {chunking.overlap}"),
            finish=lambda state, status: _finish(settings, target_index, target, existed, state, status))
        reindex = Reindex(job=job.id, target=target.model_dump(), started=now(), target_existed=existed,
                          host=socket.gethostname(), pid=os.getpid())
        store.save_pointer(current.model_copy(update={"reindex": reindex, "note": ""}))
    return job


def _catch_up(settings: Settings, index, status: JobStatus) -> None:
    """Bring the new index level with the document store: documents added while the job ran are indexed, deleted
    ones removed (the serving index received those changes meanwhile)."""
    stored = {doc.id: doc for doc in DocumentStore(settings.data_dir).list()}
    indexed = {row["doc_id"] for row in index.documents()}
    for doc_id in sorted(indexed - stored.keys()):
        index.remove_document(doc_id)
    tried = {f.doc_id for f in status.files}
    missing = [doc for doc_id, doc in stored.items() if doc_id not in indexed and doc_id not in tried]
    if not missing:
        return
    report = index.ingest(missing)
    status.files = [*status.files, *(
        FileStatus(doc.id, doc.name, doc.size, state="failed" if doc.name in report.errors else "indexed",
                   error=report.errors.get(doc.name, "")) for doc in missing)]


def _lost(settings: Settings, serving: IndexSpec, status: JobStatus) -> list[str]:
    """Names of documents the serving index holds that failed to index with the new settings."""
    try:
        held = (read_manifest(serving.collection, settings) or {}).get("documents", {})
    except IndexError_:
        held = {}
    return [f.name for f in status.files if f.state == "failed" and f.doc_id in held]


def _retire(settings: Settings, runner: JobRunner, name: str) -> str:
    """Remove the replaced index now, or after the jobs already queued to write into it."""
    if any(job.collection == name for job in runner.active()):
        runner.submit_task(lambda handle: (delete_collection(name, settings), f"Removed the replaced index {name}.")[1],
                           kind="cleanup", title=f"Removing the replaced index {name}", collection=name)
        return f"the old index {name} is removed after the jobs queued for it"
    try:
        delete_collection(name, settings)
    except Exception as e:  # noqa: BLE001 - the swap stands; the leftover index can be deleted by hand
        log.warning("could not remove the replaced index %s (%s)", name, e)
        return f"the old index {name} could not be removed ({e})"
    return f"the old index {name} was removed"


def _finish(settings: Settings, index, target: IndexSpec, existed: bool, state: str, status: JobStatus,
            ) -> str | None:
    """Swap to the new index when the job completed; otherwise keep the serving index and drop the new one."""
    runner = runner_for(settings.data_dir)
    message = status.message
    if state == "done":
        try:
            _catch_up(settings, index, status)
        except Exception as e:  # noqa: BLE001 - reported below: the serving index stays
            log.exception("bringing %s up to date failed", index.name)
            state, message = "failed", f"bringing it up to date failed ({type(e).__name__}: {e})"
    store = ActiveStore.for_settings(settings)
    with store.locked():
        current = store.pointer()
        pending = current.reindex if current is not None else None
        if current is None or pending is None or pending.job != status.id:  # a later choice replaced this one
            mine = Reindex(job=status.id, target=target.model_dump(), started="", target_existed=existed)
            if drop_target(settings, mine, current) and current is not None:
                store.save_pointer(current.model_copy(update={"generation": current.generation + 1}))
            return f"{message}. A later change of settings replaced this re-index; its index was not used."
        serving = current.serving
        lost = _lost(settings, serving, status) if state == "done" else []
        if state == "done" and not lost:
            store.save_pointer(IndexPointer(
                serving=target.model_dump(), generation=current.generation + 1, changed=now(),
                note=f"Re-indexed with {target.describe()}."))
            gone = _retire(settings, runner, serving.collection) if serving.collection != target.collection else ""
            return f"{message}. Searches now use {target.collection} ({target.describe()}); {gone}."
        why = {"cancelled": "it was cancelled", "failed": f"it failed: {message}"}.get(state) or (
            f"{len(lost)} document(s) the serving index holds could not be indexed: {', '.join(lost[:5])}")
        note = (f"The re-index with {target.describe()} did not replace the index ({why}); searches still use "
                f"{serving.collection} ({serving.describe()}).")
        dropped = drop_target(settings, pending, current)
        store.save_pointer(current.model_copy(update={
            "reindex": None, "generation": current.generation + int(dropped), "changed": now(), "note": note}))
    if state == "done":
        raise ReindexIncomplete(note)
    return note

