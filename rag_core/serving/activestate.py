"""The active configuration and the index serving it, stored once for every session, instance and restart.

Two records: ``config`` (the active ``RAGConfig``) and ``index`` (an ``IndexPointer``: the collection searches use,
what it was built with, and a re-index building beside it). They live in ``<data_dir>/active/`` as JSON written
atomically, or, with a Chroma server, as ``active/config`` and ``active/index`` records in ``studio-meta`` so every
instance reads the same (a ``rag_core.stores.records.RecordStore`` either way). Searches follow the pointer; it
moves only when a re-index completed (``rag_core.serving.reindex``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from filelock import FileLock
from pydantic import BaseModel, ValidationError

from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig, Settings
from rag_core.errors import field_problems
from rag_core.serving.configstore import ConfigStore, default_config
from rag_core.serving.jobs import runner_for
from rag_core.stores.collections import delete_collection
from rag_core.stores.records import FileRecords, RecordStore, open_records

log = logging.getLogger(__name__)

_locks: dict[str, tuple[threading.RLock, FileLock]] = {}
_locks_guard = threading.Lock()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class IndexSpec(BaseModel):
    """One index: its collection name and what it is (or is being) built with."""

    collection: str
    chunking: ChunkingConfig
    embedding: EmbeddingConfig

    @classmethod
    def of(cls, config: RAGConfig) -> IndexSpec:
        # from plain data: a module reloaded by Streamlit's file watcher has new classes, which pydantic refuses
        return cls(collection=config.collection_name(), chunking=config.chunking.model_dump(),
                   embedding=config.embedding.model_dump())

    def config(self) -> RAGConfig:
        """A configuration with this index's chunking and embedder (the rest at defaults)."""
        return RAGConfig(chunking=self.chunking.model_dump(), embedding=self.embedding.model_dump())

    def describe(self) -> str:
        c = self.chunking
        return f"{c.strategy} {c.max_tokens} tok, overlap {c.overlap} · {self.embedding.embedder}"


class Reindex(BaseModel):
    """A re-index building ``target`` beside the serving index, as the background job ``job``."""

    job: str
    target: IndexSpec
    started: str
    target_existed: bool = False  # the target held documents before: a failed re-index leaves it, else removes it
    host: str = ""
    pid: int = 0


class IndexPointer(BaseModel):
    """Which index serves the active configuration's searches, and the re-index replacing it (if any)."""

    serving: IndexSpec
    reindex: Reindex | None = None
    generation: int = 0  # moves on every change of the serving index: caches of opened indexes key on it
    changed: str = ""
    note: str = ""  # how the last re-index ended, in words (e.g. why the serving index was kept)


def _locks_of(root: Path) -> tuple[threading.RLock, FileLock]:
    """One thread lock and one (re-entrant) file lock per records folder and process."""
    key = str(root.resolve())
    with _locks_guard:
        if key not in _locks:
            _locks[key] = (threading.RLock(), FileLock(str(root / ".lock")))
        return _locks[key]


class ActiveStore:
    """The two records; ``locked()`` serialises read-modify-write of the pointer (threads and local processes)."""

    def __init__(self, data_dir: Path | str, records: RecordStore | None = None) -> None:
        self.root = Path(data_dir) / "active"
        self._records = records if records is not None else FileRecords(self.root)

    @classmethod
    def for_settings(cls, settings: Settings) -> ActiveStore:
        """On the Chroma server when one is configured, else in the data folder."""
        return cls(settings.data_dir, open_records(settings, "active", "active"))

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        self.root.mkdir(parents=True, exist_ok=True)
        thread_lock, file_lock = _locks_of(self.root)
        with thread_lock, file_lock:
            yield

    def config(self) -> RAGConfig | None:
        """The stored active configuration; None when none was stored (or the record is unreadable)."""
        config, problem = self.read_config()
        if problem:
            log.warning("%s", problem)
        return config

    def read_config(self) -> tuple[RAGConfig | None, str]:
        """The stored active configuration (None when none was stored or it is unreadable) and, when it is
        unreadable, a sentence naming where it is stored and what is wrong ("" otherwise)."""
        try:
            text = self._records.get("config")
        except UnicodeDecodeError as e:
            return None, self._broken(f"not UTF-8 text: {e.reason}")
        if text is None:
            return None, ""
        try:
            return RAGConfig.model_validate_json(text), ""
        except ValidationError as e:
            return None, self._broken(field_problems(e, unnamed=None))

    def _broken(self, why: str) -> str:
        path = getattr(self._records, "path", None)
        where = str(path("config")) if callable(path) else "the record 'config' of namespace 'active' on the server"
        return f"the stored active configuration {where} is broken ({why})"

    def save_config(self, config: RAGConfig) -> None:
        self._records.put("config", config.model_dump_json(indent=2))

    def pointer(self) -> IndexPointer | None:
        text = self._records.get("index")
        if text is None:
            return None
        try:
            return IndexPointer.model_validate_json(text)
        except ValidationError as e:
            log.warning("stored index pointer unreadable (%s); serving the active configuration's index", e)
            return None

    def save_pointer(self, pointer: IndexPointer) -> None:
        self._records.put("index", pointer.model_dump_json(indent=2))


def active_config(settings: Settings, store: ActiveStore | None = None) -> RAGConfig:
    """The stored active configuration; before one is stored, the saved ``default`` (or the built-in defaults)."""
    return (store or ActiveStore.for_settings(settings)).config() or default_config(settings)


def _job_is_over(reindex: Reindex, data_dir: Path) -> bool:
    """Whether the re-index job can no longer finish (its process died; its status says it ended)."""
    status = runner_for(data_dir).get(reindex.job)
    if status is not None:
        return not status.active
    if reindex.host != socket.gethostname():
        return False  # another machine's job: its instance finishes it
    try:
        os.kill(reindex.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def drop_target(settings: Settings, reindex: Reindex, current: IndexPointer | None) -> bool:
    """Remove the index a stopped re-index built, unless it held documents before or is in use now."""
    name = reindex.target.collection
    other = current.reindex if current is not None and current.reindex is not None else None
    in_use = current is not None and current.serving.collection == name or (
        other is not None and other.job != reindex.job and other.target.collection == name)
    if reindex.target_existed or in_use:
        return False
    try:
        return delete_collection(name, settings)
    except Exception as e:  # noqa: BLE001 - a leftover index is listed and can be deleted; the pointer matters
        log.warning("could not remove the partial index %s (%s)", name, e)
        return False


def pointer(settings: Settings, config: RAGConfig | None = None, store: ActiveStore | None = None) -> IndexPointer:
    """The serving index; before one is stored, ``config``'s (the active configuration's) own index.

    A re-index whose job can never finish (the app stopped while it ran) is dropped here: the serving index stays.
    """
    store = store or ActiveStore.for_settings(settings)
    found = store.pointer()
    if found is None:
        return IndexPointer(serving=IndexSpec.of(config or active_config(settings, store)))
    if found.reindex is not None and _job_is_over(found.reindex, Path(settings.data_dir)):
        with store.locked():
            found = store.pointer() or found
            if found.reindex is not None and _job_is_over(found.reindex, Path(settings.data_dir)):
                dropped = drop_target(settings, found.reindex, found)
                found = found.model_copy(update={"reindex": None, "changed": now(),
                                                 "generation": found.generation + int(dropped),
                                                 "note": "The re-index stopped with the app; the index was kept."})
                store.save_pointer(found)
    return found


def activate(settings: Settings, config: RAGConfig, *, save: bool = False,
             previous: RAGConfig | None = None) -> IndexPointer:
    """Make ``config`` the active configuration for everyone (and save it under its name only when ``save``: a
    saved configuration is a snapshot, which applying settings never rewrites);
    ``previous`` is the active configuration the caller saw (until one is stored, its index serves).

    Settings that keep the chunking and embedder keep the serving index. Other ones (another saved configuration
    loaded) serve that configuration's own index, as before, and a re-index building something else is cancelled.
    """
    store = ActiveStore.for_settings(settings)
    with store.locked():
        previous = store.config() or previous or active_config(settings, store)
        current = pointer(settings, previous, store)
        if save:
            ConfigStore.for_settings(settings).save(config)
        store.save_config(config)
        if config.index_key() == previous.index_key() and store.pointer() is not None:
            return current
        pending = current.reindex
        if pending is not None and pending.target.collection == config.collection_name():
            return current  # the re-index already builds this configuration's index
        if pending is not None:
            runner_for(settings.data_dir).cancel(pending.job)
        spec = IndexSpec.of(config)
        moved = spec != current.serving
        updated = IndexPointer(serving=spec.model_dump(), generation=current.generation + int(moved),
                               changed=now() if moved else current.changed)
        store.save_pointer(updated)
        return updated
