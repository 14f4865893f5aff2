"""The side store of an index: full chunks, the manifest that commits a generation, and the ingest lock.

Layout under ``data_dir/indexes/<name>/``:

- ``manifest.json`` — the committed state: embedder id and dimension, chunking, generation number and,
  per document, its name, chunk file and counts. Replaced atomically (temp file + fsync + ``os.replace``);
  replacing it *is* the commit of an ingest.
- ``chunks/seg-g<generation>.json`` — the full ``Chunk`` dicts written by one commit (immutable); the manifest
  names each document's segment, and a segment no document names any more is deleted.
- ``bm25-g<generation>/`` — the keyword index of that generation.
- ``pending.json`` — written before an ingest touches the vector store, removed after it finished;
  its presence on open means an ingest died midway and its vectors must be cleaned up.
- ``ingest.lock`` — an ``flock`` held by whoever writes (threads and processes), so writers never interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rag_core.errors import IndexError_
from rag_core.types import Chunk

MANIFEST_VERSION = 1


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so a reader sees the old or the new file, never a partial one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    with contextlib.suppress(OSError):  # persist the rename itself (not possible on every filesystem)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def manifest_problem(manifest: object) -> str:
    """What makes ``manifest`` unusable as an index manifest ("" when nothing does)."""
    if not isinstance(manifest, dict):
        return f"expected a JSON object, got {type(manifest).__name__}"
    if not isinstance(manifest.get("embedder_id"), str) or not manifest["embedder_id"]:
        return "field 'embedder_id' is missing or not a string"
    dim = manifest.get("dim")
    if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
        return "field 'dim' is missing or not a whole number ≥ 1"
    if not isinstance(manifest.get("chunking"), dict):
        return "field 'chunking' is missing or not an object"
    if not isinstance(manifest.get("documents", {}), dict):
        return "field 'documents' is not an object"
    generation = manifest.get("generation", 0)
    if isinstance(generation, bool) or not isinstance(generation, int):
        return "field 'generation' is not a whole number"
    return ""


def damaged_manifest(path: Path, why: str) -> IndexError_:
    return IndexError_(f"the index manifest {path} is damaged ({why}); delete the folder {path.parent} and "
                       "ingest its documents again")


class SideStore:
    """Files of one index; all methods are plain file operations (the caller holds the locks)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.chunk_dir = self.root / "chunks"
        self.manifest_path = self.root / "manifest.json"
        self.pending_path = self.root / "pending.json"

    def ensure(self) -> None:
        self.chunk_dir.mkdir(parents=True, exist_ok=True)

    # --- manifest -----------------------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any] | None:
        """The committed manifest, None when there is none; a damaged one (truncated, not JSON, fields missing or
        of the wrong type) is an ``IndexError_`` naming the file."""
        path = self.manifest_path
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError) as e:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise damaged_manifest(path, f"not readable as JSON: {e}") from e
        problem = manifest_problem(manifest)
        if problem:
            raise damaged_manifest(path, problem)
        return manifest

    def stamp(self) -> tuple[int, int] | None:
        """Changes whenever another writer commits (used to reload a stale in-memory state)."""
        try:
            stat = self.manifest_path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_mtime_ns, stat.st_ino)

    def commit(self, manifest: dict[str, Any]) -> None:
        manifest["version"] = MANIFEST_VERSION
        atomic_write_text(self.manifest_path, json.dumps(manifest, ensure_ascii=False, indent=1))

    # --- chunks -------------------------------------------------------------------------------------
    def write_segment(self, generation: int, chunks: list[Chunk]) -> str:
        """Write the chunks of one commit as one file (one fsync, not one per document). Returns its name."""
        name = f"seg-g{generation}.json"
        atomic_write_text(self.chunk_dir / name, json.dumps([c.to_dict() for c in chunks], ensure_ascii=False))
        return name

    def read_chunks(self, file_name: str) -> list[Chunk]:
        data = json.loads((self.chunk_dir / file_name).read_text(encoding="utf-8"))
        return [Chunk.from_dict(item) for item in data]

    def bm25_dir(self, generation: int) -> Path:
        return self.root / f"bm25-g{generation}"

    # --- pending ingest -----------------------------------------------------------------------------
    def write_pending(self, added_ids: list[str], removed_ids: list[str]) -> None:
        atomic_write_text(self.pending_path, json.dumps({"added": added_ids, "removed": removed_ids}))

    def read_pending(self) -> dict[str, list[str]] | None:
        try:
            return json.loads(self.pending_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError:  # torn write of the marker itself: treat as "something was pending"
            return {"added": [], "removed": []}

    def clear_pending(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.pending_path.unlink()

    # --- garbage ------------------------------------------------------------------------------------
    def remove_unreferenced(self, manifest: dict[str, Any]) -> int:
        """Delete chunk files, BM25 directories and temp files the manifest does not name. Returns the count."""
        keep = {entry["file"] for entry in manifest.get("documents", {}).values()}
        removed = 0
        if self.chunk_dir.is_dir():
            for path in self.chunk_dir.iterdir():
                if path.name not in keep:
                    path.unlink(missing_ok=True)
                    removed += 1
        current_bm25 = self.bm25_dir(int(manifest.get("generation", 0))).name
        for path in self.root.iterdir():
            if path.is_dir() and path.name.startswith("bm25-g") and path.name != current_bm25:
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
            elif path.is_file() and path.name.startswith(".") and path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)
                removed += 1
        return removed

    def remove_all(self) -> None:
        """Delete every file of the index (under ``write_lock``; its lock file is the caller's to keep)."""
        for path in self.root.iterdir():
            if path.name != "ingest.lock":
                shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)

    # --- locking ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def write_lock(self, blocking: bool = True) -> Iterator[bool]:
        """An exclusive ``flock`` on ``ingest.lock``; yields False (without the lock) when not blocking and busy."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / "ingest.lock", "a+") as handle:
            flags = fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB)
            try:
                fcntl.flock(handle.fileno(), flags)
            except BlockingIOError:
                yield False
                return
            try:
                yield True
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
