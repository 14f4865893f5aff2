"""``RecordStore``: named JSON text records in one namespace, kept in a folder or on a Chroma server.

Saved configurations, evaluation runs and baselines, the active configuration with its index pointer and, in server
mode, the MCP servers' call log (``rag_core.mcp_server.calllog``) are such records. In a folder each is
``<key>.json``, written atomically; in server mode (``backends.server_mode``: Chroma with ``RAG_CHROMA_HOST``) each
is the record ``<kind>/<key>`` in the server's ``studio-meta`` collection (``rag_core.stores.chroma.meta``), so every
instance reads the same. ``open_records`` picks the backend once; the stores built on it (``ConfigStore``,
``ResultsStore``, ``ActiveStore``) never ask which one they have.

An index's manifests, write lease, pending writes and sources stay on ``MetaRecords`` and ``ServerCatalog``: they
exist only on a server (a folder has the side store and file locks instead), and they need what a plain record
does not: committing a generation is put-if-absent (``MetaRecords.claim``), and a lease is metadata that is
written, read back and renewed against a clock. Behind this protocol they would gain a file backend nobody uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rag_core.config import Settings
from rag_core.files import atomic_write_text
from rag_core.stores.backends import meta_records, server_mode
from rag_core.stores.chroma.meta import MetaRecords

# ``summarize(key, text)``: the short text listed for a record without reading the records themselves.
Summarize = Callable[[str, str], str]


class RecordStore(Protocol):
    """JSON text records by key in one namespace."""

    def get(self, key: str) -> str | None:
        """The text of ``key``; None when there is no such record."""
        ...

    def put(self, key: str, text: str) -> None:
        """Save ``text`` under ``key`` (replacing the record there)."""
        ...

    def delete(self, key: str) -> bool:
        """Remove ``key``; False when there was no such record."""
        ...

    def get_many(self, keys: list[str]) -> dict[str, str]:
        """The texts of those of ``keys`` that exist (one read on a server)."""
        ...

    def delete_many(self, keys: list[str]) -> None:
        """Remove those of ``keys`` that exist (one request on a server)."""
        ...

    def keys(self) -> list[str]:
        """Every key, sorted."""
        ...

    def summaries(self) -> list[tuple[str, str]]:
        """``(key, summary)`` of every record, sorted by key (records whose summary cannot be made are left out)."""
        ...

    def version(self) -> tuple:
        """A value that changes whenever a record is saved or deleted (for caches of what was read)."""
        ...


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not key or key in (".", "..") or "/" in key or "\\" in key:
        raise ValueError(f"{key!r} is not a valid record name (no '/', '\\', '.' or '..')")
    return key


class FileRecords:
    """One ``<key>.json`` file per record in ``root`` (created on the first write)."""

    def __init__(self, root: Path | str, summarize: Summarize | None = None) -> None:
        self.root = Path(root)
        self._summarize = summarize

    def path(self, key: str) -> Path:
        return self.root / f"{_check_key(key)}.json"

    def _paths(self) -> list[Path]:
        return list(self.root.glob("*.json")) if self.root.is_dir() else []

    def get(self, key: str) -> str | None:
        path = self.path(key)
        if not path.is_file():
            return None
        try:
            return path.read_text(encoding="utf-8")
        except FileNotFoundError:  # deleted since the check
            return None

    def put(self, key: str, text: str) -> None:
        path = self.path(key)
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)

    def delete(self, key: str) -> bool:
        path = self.path(key)
        if not path.is_file():
            return False
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        return True

    def get_many(self, keys: list[str]) -> dict[str, str]:
        found = {key: self.get(key) for key in keys}
        return {key: text for key, text in found.items() if text is not None}

    def delete_many(self, keys: list[str]) -> None:
        for key in keys:
            self.delete(key)

    def keys(self) -> list[str]:
        return sorted(p.stem for p in self._paths())

    def summaries(self) -> list[tuple[str, str]]:
        """A folder keeps no summaries: each is made from its record's text, and an unreadable record is left out
        (so one damaged file never breaks a list)."""
        found = []
        for path in sorted(self._paths()):
            try:
                text = path.read_text(encoding="utf-8")
                found.append((path.stem, self._summarize(path.stem, text) if self._summarize else ""))
            except (OSError, ValueError, RecursionError):
                continue
        return found

    def version(self) -> tuple:
        stats = []
        for path in self._paths():
            try:
                stat = path.stat()
            except FileNotFoundError:  # deleted while listing
                continue
            stats.append((path.name, stat.st_size, stat.st_mtime_ns))
        return tuple(sorted(stats))


class ServerRecords:
    """The records of one ``kind`` in ``studio-meta``, each with its summary (made on ``put``) and save time."""

    def __init__(self, records: MetaRecords, kind: str, summarize: Summarize | None = None) -> None:
        self.records = records
        self.kind = kind
        self._summarize = summarize

    def _id(self, key: str) -> str:
        return f"{self.kind}/{key}"

    def get(self, key: str) -> str | None:
        found = self.records.get([self._id(key)])
        return (found[0][1] or "") if found else None

    def put(self, key: str, text: str) -> None:
        summary = self._summarize(key, text) if self._summarize else ""
        self.records.put(self._id(key), text, {"kind": self.kind, "key": key, "summary": summary,
                                               "saved": time.time()})

    def delete(self, key: str) -> bool:
        if not self.records.get([self._id(key)], documents=False):
            return False
        self.records.delete([self._id(key)])
        return True

    def get_many(self, keys: list[str]) -> dict[str, str]:
        prefix = len(self.kind) + 1
        return {record_id[prefix:]: text or "" for record_id, text, _ in
                self.records.get([self._id(_check_key(key)) for key in keys])}

    def delete_many(self, keys: list[str]) -> None:
        if keys:
            self.records.delete([self._id(_check_key(key)) for key in keys])

    def _listed(self) -> list[tuple[str, str, float]]:
        """``(key, summary, saved time)`` of every record, read from the metadata only (not the texts)."""
        return sorted((str(meta.get("key", "")), str(meta.get("summary", "")), float(meta.get("saved", 0.0)))
                      for _, _, meta in self.records.find(kind=self.kind))

    def keys(self) -> list[str]:
        return [key for key, _, _ in self._listed()]

    def summaries(self) -> list[tuple[str, str]]:
        return [(key, summary) for key, summary, _ in self._listed()]

    def version(self) -> tuple:
        return tuple(self._listed())


def open_records(settings: Settings, folder: str, kind: str, summarize: Summarize | None = None) -> RecordStore:
    """The records of one namespace where the deployment keeps them: ``kind`` records on the backend's server in
    server mode, else files in ``<data_dir>/<folder>``."""
    if server_mode(settings):
        return ServerRecords(meta_records(settings), kind, summarize)
    return FileRecords(Path(settings.data_dir) / folder, summarize)
