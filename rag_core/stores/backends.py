"""The vector store backends, one row each, and the one place that reads ``Settings.vector_store``.

A row says how to open an index's store, list and delete the stores of a data directory or server, how the store
is named in messages, which index names it accepts, and whether indexes coordinate through a server (then the
row's ``records`` are where manifests, leases and saved records live, see ``rag_core.stores.shared``). A new
backend is its module in ``rag_core/stores/``, its row here, its name in ``Settings.vector_store`` and its run of
``tests/stores/test_vector_contract.py``; ``tests/fakes/vector_store.py`` is a complete small one to copy.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rag_core.config import Settings
from rag_core.stores.chroma import client as chroma
from rag_core.stores.chroma.meta import MetaRecords
from rag_core.stores.chroma.vector import check_collection_name
from rag_core.stores.vector import VectorStore


def _never(settings: Settings) -> bool:
    return False


@dataclass(frozen=True)
class VectorBackend:
    """One backend: its functions over ``Settings`` (where it is, how to reach it)."""

    # (settings, index name, metadata for a new store, fresh) -> the index's store, created when missing. ``fresh``:
    # one that sees what other processes wrote since this process opened it.
    open: Callable[[Settings, str, dict[str, Any], bool], VectorStore]
    describe: Callable[[Settings], str]  # "Chroma server at host:port": where the store is, for messages
    collections: Callable[[Settings], list[tuple[str, dict[str, Any], int]]]  # (name, metadata, rows) of each
    drop: Callable[[Settings, str], bool]  # delete a store; False when there was none
    check_name: Callable[[str], str] = lambda name: name  # the backend's own rule for names (ValueError)
    served: Callable[[Settings], bool] = _never  # do indexes live on a server that instances coordinate through?
    records: Callable[[Settings], MetaRecords] | None = None  # the server's shared records (when ``served``)
    reserved: frozenset[str] = frozenset()  # store names the backend uses itself (never listed as indexes)


BACKENDS: dict[str, VectorBackend] = {
    "chroma": VectorBackend(
        open=chroma.open_store, describe=chroma.describe, collections=chroma.collections, drop=chroma.drop,
        check_name=check_collection_name, served=chroma.served, records=chroma.meta_records,
        reserved=frozenset({"studio-meta"}),
    ),
}


def backend(settings: Settings) -> VectorBackend:
    """The row of the configured backend (``RAG_VECTOR_STORE``)."""
    try:
        return BACKENDS[settings.vector_store]
    except KeyError:
        raise ValueError(f"unknown vector store {settings.vector_store!r}; known: {', '.join(BACKENDS)}") from None


def open_vector_store(settings: Settings, name: str, metadata: dict[str, Any], fresh: bool = False) -> VectorStore:
    """The vector store of index ``name`` (created with ``metadata`` when missing); ``fresh``: one that sees other
    processes' writes (embedded Chroma keeps its view in process memory)."""
    return backend(settings).open(settings, name, metadata, fresh)


def server_mode(settings: Settings) -> bool:
    """Whether indexes, configurations and runs live on the backend's server, shared by every instance (the local
    side store is then a cache), rather than in ``data_dir``."""
    return backend(settings).served(settings)


def describe(settings: Settings) -> str:
    """Where the vector store is, for messages ("embedded Chroma in …", "Chroma server at host:port")."""
    return backend(settings).describe(settings)


def meta_records(settings: Settings) -> MetaRecords:
    """The shared records on the backend's server (only in ``server_mode``)."""
    row = backend(settings)
    if row.records is None or not row.served(settings):
        raise ValueError(f"the {settings.vector_store} vector store keeps no shared records here")
    return row.records(settings)


def check_index_name(name: str, settings: Settings) -> str:
    """``name`` if the backend accepts it and it is safe as a folder name (the side store's), else ``ValueError``."""
    backend(settings).check_name(name)
    safe = isinstance(name, str) and 0 < len(name) <= 255 and name not in (".", "..") and not set("/\\\0") & set(name)
    if not safe:
        raise ValueError(f"invalid collection name {name!r}: it names a folder, so no '/' or '\\', not '.' or '..'")
    return name
