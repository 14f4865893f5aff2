"""A persistent embedding cache: vectors keyed by (embedder id, sha256 of the text) in SQLite.

Re-chunking a corpus re-embeds only texts never seen by that embedder. SQLite in WAL mode lets several
threads (one connection each) and several processes (busy timeout) read and write the same file safely.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from rag_core.embeddings.base import (
    Embedder,
    assume_dim,
    check_query_text,
    documents_checked,
    report,
)
from rag_core.errors import EmbeddingError
from rag_core.types import Progress

log = logging.getLogger(__name__)

CACHE_FILE = "embeddings.sqlite3"
# SQLite's default limit on host parameters is 999 in old builds; stay well under it.
LOOKUP_CHUNK = 500
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    embedder TEXT NOT NULL,
    text_hash BLOB NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (embedder, text_hash)
) WITHOUT ROWID
"""


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).digest()


class CachedEmbedder:
    """Wraps any ``Embedder``: same ``id``, ``dim`` and vectors, but each distinct text is embedded once, ever."""

    def __init__(self, inner: Embedder, cache_dir: Path | str) -> None:
        self.inner = inner
        self.cache_dir = Path(cache_dir)
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise EmbeddingError(f"cannot create the embedding cache folder {self.cache_dir}: {e}") from e
        self.path = self.cache_dir / CACHE_FILE
        self._local = threading.local()
        self._stats_lock = threading.Lock()
        self._file_lock = FileLock(str(self.path) + ".lock", timeout=BUSY_TIMEOUT_S)  # re-entrant per thread
        self.hits = 0
        self.misses = 0
        try:
            with self._setup_lock():
                self._connection().execute(_SCHEMA)
        except (sqlite3.DatabaseError, EmbeddingError) as e:
            cause = e.__cause__ if isinstance(e, EmbeddingError) else e
            if not isinstance(cause, sqlite3.DatabaseError) or isinstance(cause, sqlite3.OperationalError):
                # Locked, read-only or missing folder: not damage; moving the file would lose a good cache.
                raise EmbeddingError(f"cannot open the embedding cache {self.path}: {cause}") from e
            # The cache only saves time: a damaged file is moved aside and a fresh one started.
            self._set_aside_damaged(cause)
            with self._setup_lock():
                self._connection().execute(_SCHEMA)

    def _setup_lock(self) -> FileLock:
        """Serialises creating the file and switching it to WAL across processes: SQLite may answer "database is
        locked" to a concurrent ``journal_mode`` change without waiting on its busy timeout."""
        return self._file_lock

    def _set_aside_damaged(self, error: Exception) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
        damaged = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
        try:
            self.path.replace(damaged)
        except OSError as e:
            raise EmbeddingError(
                f"the embedding cache {self.path} is unreadable ({error}) and cannot be moved aside: {e}"
            ) from e
        for suffix in ("-wal", "-shm"):
            self.path.with_name(self.path.name + suffix).unlink(missing_ok=True)
        log.warning("embedding cache %s was unreadable (%s); moved to %s and started afresh", self.path, error, damaged)

    @property
    def id(self) -> str:
        return self.inner.id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def assume_dim(self, dim: int) -> None:
        """Pass a known vector size (an index manifest's) to the inner embedder, when it can take one."""
        assume_dim(self.inner, dim)

    @property
    def max_tokens(self) -> int | None:
        """The inner embedder's input limit in its own tokens, when it has one."""
        return getattr(self.inner, "max_tokens", None)

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            try:
                with self._setup_lock():
                    connection = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
                    connection.execute("PRAGMA journal_mode=WAL")
                    connection.execute("PRAGMA synchronous=NORMAL")
            except (sqlite3.Error, Timeout) as e:
                raise EmbeddingError(f"cannot open the embedding cache {self.path}: {e}") from e
            self._local.connection = connection
        return connection

    def _lookup(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        expected_bytes = self.dim * 4
        connection = self._connection()
        for start in range(0, len(keys), LOOKUP_CHUNK):
            part = keys[start : start + LOOKUP_CHUNK]
            marks = ",".join("?" * len(part))
            try:
                rows = connection.execute(
                    f"SELECT text_hash, vector FROM embeddings WHERE embedder = ? AND text_hash IN ({marks})",
                    [self.id, *part],
                ).fetchall()
            except sqlite3.Error as e:
                raise EmbeddingError(f"cannot read the embedding cache {self.path}: {e}") from e
            for key, blob in rows:
                if len(blob) != expected_bytes:  # a vector of another size is stale: treat it as a miss
                    continue
                vector = np.frombuffer(blob, dtype=np.float32)
                if np.isfinite(vector).all():  # a NaN/inf row (a poisoned cache) is a miss, re-embedded and replaced
                    found[key] = vector
        return found

    def _store(self, keys: list[bytes], vectors: np.ndarray) -> None:
        embedder_id = self.id
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or not np.isfinite(vectors).all():
            # Never remember a vector the index would refuse: it would be served again after the fault heals.
            raise EmbeddingError(
                f"embedder {embedder_id!r} returned non-finite or wrongly sized vectors (shape {vectors.shape}, "
                f"expected {self.dim} columns); nothing was cached"
            )
        rows = [(embedder_id, key, np.ascontiguousarray(vector).tobytes())
                for key, vector in zip(keys, vectors, strict=True)]
        connection = self._connection()
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)
            connection.execute("COMMIT")
        except sqlite3.Error as e:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            # The vectors are computed and correct; failing to remember them only costs time later.
            log.warning("could not write %d vectors to the embedding cache %s: %s", len(rows), self.path, e)

    def _count(self, hits: int, misses: int) -> None:
        with self._stats_lock:
            self.hits += hits
            self.misses += misses

    @documents_checked
    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        total = len(texts)
        keys = [text_key(text) for text in texts]
        found = self._lookup(list(dict.fromkeys(keys)))
        # Distinct texts still to embed, in first-seen order.
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        cached_rows = sum(1 for key in keys if key in found)
        # misses = texts the inner embedder computes; a text repeated within the call is embedded once.
        self._count(total - len(missing), len(missing))
        report(progress, cached_rows, total)
        if missing:
            missing_keys = list(missing)
            # Rows not cached may repeat a text; progress counts rows, so scale the inner count to them.
            remaining_rows = total - cached_rows

            def inner_progress(done: int, inner_total: int, label: str = "") -> None:
                share = remaining_rows if inner_total == 0 else round(remaining_rows * done / inner_total)
                report(progress, cached_rows + share, total)

            fresh = self.inner.embed_documents(list(missing.values()), progress=inner_progress if progress else None)
            self._store(missing_keys, fresh)
            found.update(zip(missing_keys, fresh, strict=True))
        out = np.empty((total, self.dim), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def embed_query(self, text: str) -> np.ndarray:
        key = text_key(check_query_text(text))
        cached = self._lookup([key]).get(key)
        if cached is not None:
            self._count(1, 0)
            return cached.copy()
        self._count(0, 1)
        vector = self.inner.embed_query(text)
        self._store([key], vector[None, :])
        return vector

    def size(self) -> int:
        """Number of vectors cached for this embedder."""
        row = self._connection().execute("SELECT COUNT(*) FROM embeddings WHERE embedder = ?", [self.id]).fetchone()
        return int(row[0])

    def clear(self) -> int:
        """Drop this embedder's cached vectors; returns how many were removed."""
        cursor = self._connection().execute("DELETE FROM embeddings WHERE embedder = ?", [self.id])
        return cursor.rowcount

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {str(self.cache_dir)!r})"
