"""What several app instances share through one server: index manifests, leases, pending writes and sources.

When the vector store backend coordinates through a server (``rag_core.stores.backends.server_mode``: Chroma with
``RAG_CHROMA_HOST``) the server is the system of record. An index's chunk rows (vector, flat metadata for filters
and the full chunk JSON as the row's document) live in the index's own collection; everything else lives as small
records the backend keeps (its row's ``records``: for Chroma ``MetaRecords``, the ``studio-meta`` collection of
``rag_core.stores.chroma.meta``):

- ``manifest/<index>/<generation>``: one immutable manifest per committed generation: embedder, chunking and,
  per document, its name, type, size, counts and chunk ids. A writer *claims* generation n + 1 with Chroma's
  ``add``, which keeps the first row written under an id and ignores later ones, then reads it back: only one
  writer can own a generation, so two commits never overwrite each other. The highest generation is the truth;
  rows no current manifest names are invisible to readers.
- ``lease/<index>``: who may write the index now (owner id and expiry); stale leases expire.
- ``pending/<index>/<owner>``: the chunk rows an ingest is writing, so a later writer can delete them when
  that ingest died before it committed.
- ``source/<index>/<doc_id>``: each indexed document (text, name, type, size).
- ``config/<name>``, ``run/<id>``, ``baselines/all``, ``active/<key>`` and ``mcp_call/<key>``: saved
  configurations, evaluation results, the active configuration and the MCP servers' call log, the server backend
  of ``rag_core.stores.records``.

Records are found by the values of their metadata fields (``find(kind=..., index=...)``); the backend's own query
syntax stays in its records class. Every failure of the server is raised as ``IndexError_`` naming it.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from rag_core.errors import IndexError_

if TYPE_CHECKING:
    from rag_core.stores.chroma.meta import MetaRecords

log = logging.getLogger(__name__)

# Pause between writing a lease and reading it back: a competing writer that read the lease as free before
# our write lands has written its own by then, and the read-back shows who won.
LEASE_CONFIRM_S = 0.3


def new_owner() -> str:
    """A writer id unique across machines and processes (host, pid and a random part, for the logs)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_is_dead(owner: str) -> bool:
    """Whether ``owner`` was a process on this machine that no longer runs (its lease need not be waited out)."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, owned by someone else
        return False
    return False


class Lease:
    """The write lease of one index: at most one live owner; an owner that stops renewing loses it at expiry."""

    def __init__(self, records: MetaRecords, index: str, owner: str, ttl_s: float, wait_s: float,
                 clock: Callable[[], float] = time.time):
        self._records = records
        self.index = index
        self.owner = owner
        self.ttl_s = float(ttl_s)
        self.wait_s = float(wait_s)
        self._clock = clock
        self._id = f"lease/{index}"
        self._renewed = 0.0

    def holder(self) -> tuple[str, float] | None:
        """``(owner, expires)`` of a live lease, or None when it is free or expired."""
        found = self._records.get([self._id], documents=False)
        if not found:
            return None
        owner, expires = str(found[0][2].get("owner", "")), float(found[0][2].get("expires", 0.0))
        if not owner or expires <= self._clock() or owner_is_dead(owner):
            return None
        return owner, expires

    def _write(self) -> None:
        self._renewed = self._clock()
        self._records.put(self._id, "", {"kind": "lease", "index": self.index, "owner": self.owner,
                                         "expires": self._renewed + self.ttl_s})

    def acquire(self) -> None:
        """Wait (up to ``wait_s``) until the lease is free or expired, take it and confirm we won."""
        deadline = self._clock() + self.wait_s
        pause = 0.2
        while True:
            holder = self.holder()
            if holder is None or holder[0] == self.owner:
                self._write()
                time.sleep(LEASE_CONFIRM_S)
                holder = self.holder()
                if holder is not None and holder[0] == self.owner:
                    return
            if self._clock() >= deadline:
                who = holder[0] if holder else "another writer"
                raise IndexError_(f"index {self.index!r} is being written by {who} and its lease did not free within "
                                  f"{self.wait_s:.0f} s (RAG_LEASE_WAIT_S); try again later")
            time.sleep(pause)
            pause = min(pause * 1.5, 2.0)

    def renew(self, force: bool = False) -> None:
        """Extend the lease (at most every tenth of its time-to-live unless ``force``); ``IndexError_`` when it
        was lost (expired and taken by another writer), so this writer must not commit."""
        if not force and self._clock() - self._renewed < self.ttl_s / 10:
            return
        holder = self.holder()
        if holder is not None and holder[0] != self.owner:
            raise IndexError_(f"lost the write lease of index {self.index!r} to {holder[0]} (this write took longer "
                              "than RAG_LEASE_TTL_S without renewing); nothing was committed, try again")
        self._write()

    def release(self) -> None:
        holder = self.holder()
        if holder is not None and holder[0] == self.owner:
            self._records.delete([self._id])

    def __enter__(self) -> Lease:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.release()
        except IndexError_ as e:  # an unreleased lease expires by itself
            log.warning("could not release the lease of %r: %s", self.index, e)


class ServerCatalog:
    """Manifests, lease, pending writes and document sources of one index in ``studio-meta``."""

    def __init__(self, records: MetaRecords, index: str):
        self.records = records
        self.index = index

    def _manifest_id(self, generation: int) -> str:
        return f"manifest/{self.index}/{generation:012d}"

    def _manifests(self) -> list[tuple[str, str | None, dict[str, Any]]]:
        return self.records.find(kind="manifest", index=self.index)

    def head(self) -> tuple[int, str] | None:
        """``(generation, uid)`` of the current (highest committed) manifest; None when the index has none. The
        uid names the index's incarnation, so a cache of a deleted and re-created index is never taken as current."""
        heads = [(int(meta.get("generation", -1)), str(meta.get("uid", ""))) for _, _, meta in self._manifests()]
        return max(heads) if heads else None

    def read_manifest(self, generation: int | None = None) -> dict[str, Any] | None:
        """The manifest of ``generation`` (default: the current one), or None when there is none."""
        if generation is None:
            head = self.head()
            if head is None:
                return None
            generation = head[0]
        found = self.records.get([self._manifest_id(generation)])
        if not found:
            return None
        try:
            return json.loads(found[0][1] or "")
        except ValueError as e:
            raise IndexError_(f"the manifest of index {self.index!r} generation {generation} on the server is "
                              f"damaged ({e}); delete the collection and re-ingest") from e

    def publish(self, manifest: dict[str, Any]) -> bool:
        """Commit ``manifest`` as its generation; False when another writer committed that generation first."""
        generation = int(manifest["generation"])
        text = json.dumps(manifest, ensure_ascii=False)
        return self.records.claim(self._manifest_id(generation), text, {
            "kind": "manifest", "index": self.index, "generation": generation, "uid": str(manifest["uid"])})

    def prune(self, keep_from: int) -> None:
        """Delete manifests older than generation ``keep_from`` (readers only ever read the newest)."""
        old = [record_id for record_id, _, meta in self._manifests() if int(meta.get("generation", 0)) < keep_from]
        self.records.delete(old)

    def lease(self, owner: str, ttl_s: float, wait_s: float) -> Lease:
        return Lease(self.records, self.index, owner, ttl_s, wait_s)

    # --- pending writes (crash recovery) -------------------------------------------------------------
    def write_pending(self, owner: str, ids: list[str]) -> None:
        self.records.put(f"pending/{self.index}/{owner}", json.dumps(ids),
                         {"kind": "pending", "index": self.index, "owner": owner})

    def clear_pending(self, owner: str) -> None:
        self.records.delete([f"pending/{self.index}/{owner}"])

    def pendings(self) -> list[tuple[str, list[str]]]:
        """``(owner, chunk ids)`` of every write that started and has not finished (or died)."""
        rows = self.records.find(documents=True, kind="pending", index=self.index)
        result = []
        for _, document, meta in rows:
            try:
                ids = json.loads(document or "[]")
            except ValueError:
                ids = []
            result.append((str(meta.get("owner", "")), [str(i) for i in ids]))
        return result

    # --- document sources ----------------------------------------------------------------------------
    def _source_id(self, doc_id: str) -> str:
        return f"source/{self.index}/{doc_id}"

    def put_sources(self, docs: list[dict[str, Any]]) -> None:
        self.records.put_many([(self._source_id(d["id"]), json.dumps(d, ensure_ascii=False),
                                {"kind": "source", "index": self.index, "doc_id": d["id"]}) for d in docs])

    def sources(self, doc_ids: list[str]) -> dict[str, dict[str, Any]]:
        found = self.records.get([self._source_id(d) for d in doc_ids])
        return {meta["doc_id"]: json.loads(document or "{}") for _, document, meta in found}

    def delete_sources(self, doc_ids: Iterable[str]) -> None:
        self.records.delete([self._source_id(d) for d in doc_ids])

    def delete_all(self) -> None:
        """Every record of this index (dropping the collection)."""
        self.records.delete(record_id for record_id, _, _ in self.records.find(index=self.index))
