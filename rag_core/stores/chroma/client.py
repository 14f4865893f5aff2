"""Chroma clients (one per store location and process), and the functions of Chroma's row in
``rag_core.stores.backends``: open a collection, list and delete collections, the ``studio-meta`` records of a
server, whether a server is configured and how the store is named in messages.

Only this module reads ``RAG_CHROMA_HOST`` / ``RAG_CHROMA_PORT`` to connect; everything else asks
``rag_core.stores.backends.server_mode(settings)``.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from rag_core.config import Settings
from rag_core.errors import IndexError_
from rag_core.stores.chroma.meta import MetaRecords
from rag_core.stores.chroma.vector import ChromaVectorStore

log = logging.getLogger(__name__)

_clients_lock = threading.Lock()
_clients: dict[str, Any] = {}


def served(settings: Settings) -> bool:
    """Whether indexes live on a Chroma server (and instances coordinate through it)."""
    return bool(settings.chroma_host)


def describe(settings: Settings) -> str:
    """The store in messages: the server's address, or the embedded store's folder."""
    if settings.chroma_host:
        return f"Chroma server at {settings.chroma_host}:{settings.chroma_port}"
    return f"embedded Chroma in {Path(settings.data_dir) / 'chroma'}"


def make_client(settings: Settings):
    """A Chroma client: ``HttpClient`` when a server is configured, else an embedded ``PersistentClient``."""
    # lazy: ChromaDB is heavy, imported only where it is used
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    try:
        if settings.chroma_host:
            return chromadb.HttpClient(host=settings.chroma_host, port=settings.chroma_port, settings=chroma_settings)
        path = Path(settings.data_dir) / "chroma"
        path.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(path=str(path), settings=chroma_settings)
    except Exception as e:
        raise IndexError_(f"{describe(settings)} is unreachable or unusable: {e}") from e


def client(settings: Settings):
    """One Chroma client per store location per process (clients are thread-safe and costly to build)."""
    key = describe(settings)
    with _clients_lock:
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
        with _clients_lock:
            SharedSystemClient._identifier_to_system.pop(path, None)
            _clients[describe(settings)] = make_client(settings)
            return _clients[describe(settings)]
    except (ImportError, AttributeError) as e:  # a Chroma version without that cache: keep the old view
        log.warning("cannot reload embedded Chroma (%s); restart to see other processes' writes", e)
        return None


def open_store(settings: Settings, name: str, metadata: dict[str, Any], fresh: bool = False) -> ChromaVectorStore:
    """The collection ``name`` (created with ``metadata`` when missing) through the process's shared client;
    ``fresh``: through a ``fresh_client`` that sees other processes' writes (the shared one when impossible)."""
    chroma = fresh_client(settings) if fresh else None
    return ChromaVectorStore(client(settings) if chroma is None else chroma, name, metadata, describe(settings))


def collections(settings: Settings) -> list[tuple[str, dict[str, Any], int]]:
    """``(name, metadata, count)`` of every collection."""
    where = describe(settings)
    try:
        return [(c.name, dict(c.metadata or {}), int(c.count())) for c in client(settings).list_collections()]
    except IndexError_:
        raise
    except Exception as e:
        raise IndexError_(f"listing collections failed on {where}: {e}") from e


def drop(settings: Settings, name: str) -> bool:
    """Delete collection ``name``; False when it did not exist."""
    where = describe(settings)
    try:
        chroma = client(settings)
        if name not in {c.name for c in chroma.list_collections()}:
            return False
        chroma.delete_collection(name)
        return True
    except IndexError_:
        raise
    except Exception as e:
        raise IndexError_(f"deleting collection {name!r} failed on {where}: {e}") from e


def meta_records(settings: Settings) -> MetaRecords:
    """The ``studio-meta`` records of the configured Chroma server (the per-process shared client)."""
    return MetaRecords(lambda: client(settings), describe(settings))
