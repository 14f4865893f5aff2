"""Turning files into ``Document``s: one entry point per source (bytes, a path, a batch), type sniffed first."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import stat
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import rag_core
from rag_core.config import get_settings
from rag_core.errors import LoadError
from rag_core.loaders.detect import (
    MAX_CONTROL_RATIO,
    accepted_name,
    binary_signature,
    control_ratio,
    decode_text,
    is_zip,
    normalise_newlines,
    safe_name,
    sniffed_format,
    text_format,
)
from rag_core.loaders.format_table import document_kinds, supported_extensions
from rag_core.types import Document, Progress

SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "venv", "site-packages"})
LoadItem = str | os.PathLike | tuple[str, bytes]
# A document's name, folders included, is at most this long: names are made to fit when files are loaded
# (``document_name``) and stored documents are checked against it when read back (``document_store``), one rule at
# both ends, so a document that was stored is a document that loads.
MAX_DOCUMENT_NAME_CHARS = 2_000


def document_id(name: str, data: bytes) -> str:
    """Stable id: sha256(name + NUL + raw bytes), first 16 hex digits."""
    return hashlib.sha256(name.encode("utf-8", "surrogatepass") + b"\0" + data).hexdigest()[:16]


def document_name(name: str, keep_folders: bool = False) -> str:
    """``safe_name(name, keep_folders)``, shortened to at most ``MAX_DOCUMENT_NAME_CHARS`` characters.

    A longer path (a file under a thousand nested folders) keeps its file name and as many of its innermost
    folders as fit; the outer folders become one part saying how many were left out, with a digest of the whole
    path, so the name is the same on every load and two long paths that differ only in their outer folders stay
    two documents.
    """
    name = safe_name(name, keep_folders=keep_folders)
    if len(name) <= MAX_DOCUMENT_NAME_CHARS:
        return name
    parts = name.split("/")
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    room = MAX_DOCUMENT_NAME_CHARS - len(parts[-1]) - 64  # 64: the marker part and its slash
    inner: list[str] = []
    for part in reversed(parts[:-1]):
        if len(part) + 1 > room:
            break
        inner.append(part)
        room -= len(part) + 1
    left_out = len(parts) - 1 - len(inner)
    return "/".join([f"({left_out} outer folders, {digest})", *reversed(inner), parts[-1]])


def default_max_bytes() -> int:
    return get_settings().max_upload_mb * 1024 * 1024


# ATX headings, and setext ones (a line of "=" or "-" under text): what the chunker makes sections of, counted in
# the whole text before it is parsed (hence setext ones too, unlike markdown_blocks.HEADING_LINE).
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]|$)|^ {0,3}(?:=+|-+)[ \t]*$", re.MULTILINE)


def check_headings(name: str, text: str, limit: int) -> None:
    """Refuse a document with more than ``limit`` headings: each one starts a section the chunker and the index
    carry (100,000 headings took 31 s and 604 MB to chunk)."""
    count = sum(1 for _ in itertools.islice(_HEADING.finditer(text), limit + 1))
    if count > limit:
        raise LoadError(f"{name}: has more than {limit:,} headings, the limit per document (RAG_MAX_HEADINGS); "
                        "split it into several files.")


def _settings():
    return get_settings()


def _too_large(name: str, size: int, max_bytes: int) -> LoadError:
    return LoadError(f"{name}: is {size / 1024 / 1024:.1f} MB, over the {max_bytes / 1024 / 1024:.0f} MB limit "
                     "per file (RAG_MAX_UPLOAD_MB); split it or raise the limit.")


def check_text_size(name: str, chars: int, max_document_mb: float) -> None:
    """Refuse a document whose text is longer than ``max_document_mb`` million characters (before it is chunked:
    chunking and indexing hold several copies of the text, which is what this limit bounds)."""
    if chars > max_document_mb * 1_000_000:
        raise LoadError(f"{name}: holds {chars / 1e6:.1f} million characters of text, over the limit of "
                        f"{max_document_mb:g} million per document (RAG_MAX_DOCUMENT_MB); split it or raise the "
                        "limit.")


def load_bytes(name: str, data: bytes, *, max_bytes: int | None = None, keep_folders: bool = False) -> Document:
    """Load one file's content as a ``Document``; raises ``LoadError`` naming the file on any bad input.

    ``keep_folders`` keeps a relative path in the name (see ``document_name``); uploads keep only the base name.
    """
    name = document_name(name, keep_folders=keep_folders)
    if not isinstance(data, bytes | bytearray | memoryview):
        raise LoadError(f"{name}: expected file content as bytes, got {type(data).__name__}.")
    data = bytes(data)
    limit = default_max_bytes() if max_bytes is None else max_bytes
    if len(data) > limit:
        raise _too_large(name, len(data), limit)
    if not data.strip():
        raise LoadError(f"{name}: the file is empty.")

    language: str | None = None
    metadata: dict = {}
    warnings: list[str] = []
    fmt = sniffed_format(data)
    if fmt is None and is_zip(data):  # a ZIP no format claims: a folder's archive is unpacked before loading
        raise LoadError(f"{name}: is a ZIP archive but not a Word document (.docx); "
                        "unpack it and upload the files inside, or save as .docx.")
    if fmt is not None:
        converted = fmt.convert(name, data)
        metadata["encoding"] = "binary"
    else:
        signature = binary_signature(data)
        if signature:
            raise LoadError(f"{name}: is {signature}, not a supported document; upload {document_kinds()}.")
        decoded = decode_text(name, data)
        text = normalise_newlines(decoded.text)
        if control_ratio(text) > MAX_CONTROL_RATIO:
            raise LoadError(f"{name}: looks like a binary file (many control characters), not text.")
        metadata["encoding"] = decoded.encoding
        if decoded.warning:
            warnings.append(decoded.warning)
        fmt, language = text_format(name, text)
        converted = fmt.convert(name, text)
    doc_type = fmt.name
    check_text_size(name, len(converted.text), _settings().max_document_mb)
    check_headings(name, converted.text[converted.metadata.get("front_matter_chars", 0):], _settings().max_headings)
    metadata.update(converted.metadata)
    warnings.extend(converted.warnings)
    if not converted.text.strip():
        if not fmt.converted:
            raise LoadError(f"{name}: the file is empty.")
        raise LoadError(f"{name}: has no text content after conversion from {doc_type}.")
    metadata["original_type"] = doc_type
    metadata["converted"] = fmt.converted
    if warnings:
        metadata["warnings"] = warnings
    return Document(
        id=document_id(name, data),
        name=name,
        doc_type=doc_type,
        size=len(data),
        created=datetime.now(UTC).isoformat(timespec="seconds"),
        text=converted.text,
        language=language,
        metadata=metadata,
    )


def load_path(path: str | os.PathLike, *, max_bytes: int | None = None, name: str | None = None) -> Document:
    """Load a file from disk (size checked before reading); ``name`` (e.g. a path relative to a folder) overrides
    the file's base name as the document name."""
    path = Path(path)
    given_name = name
    name = document_name(given_name or path.name, keep_folders=True)
    limit = default_max_bytes() if max_bytes is None else max_bytes
    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise LoadError(f"{name}: is a folder, not a file.")
        if not stat.S_ISREG(info.st_mode):  # a FIFO or /dev/zero would block or never end
            raise LoadError(f"{name}: is not a regular file.")
        if info.st_size > limit:
            raise _too_large(name, info.st_size, limit)
        with path.open("rb") as handle:
            data = handle.read(limit + 1)  # the file may have grown since stat()
        if len(data) > limit:
            raise _too_large(name, len(data), limit)
    except FileNotFoundError as e:
        raise LoadError(f"{path}: no such file.") from e
    except PermissionError as e:
        raise LoadError(f"{path}: permission denied.") from e
    except OSError as e:
        raise LoadError(f"{path}: cannot be read ({e.strerror or e}).") from e
    return load_bytes(given_name or path.name, data, max_bytes=limit, keep_folders=True)


def _is_candidate(path: Path) -> bool:
    return accepted_name(path.name)


def iter_paths(paths: Iterable[str | os.PathLike], *, supported_only: bool = True) -> list[Path]:
    """The files of ``iter_named_paths`` without their names."""
    return [path for path, _ in iter_named_paths(paths, supported_only=supported_only)]


def _walk_files(top: Path) -> list[Path]:
    """Files under ``top`` in ``os.walk``'s top-down order (each folder's files sorted, then its sub-folders
    sorted), hidden and tool folders skipped. Iterative: ``os.walk`` recurses once per level on Python 3.11, so a
    folder nested a thousand levels deep raised ``RecursionError``."""
    found: list[Path] = []
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        dirs = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED_DIRS:
                    dirs.append(Path(entry.path))
            elif entry.is_file():
                found.append(Path(entry.path))
        stack.extend(reversed(dirs))
    return found


def iter_named_paths(
    paths: Iterable[str | os.PathLike], *, supported_only: bool = True
) -> list[tuple[Path, str]]:
    """(file, document name) for files named, plus files found recursively in folders (hidden and tool folders
    skipped), sorted per folder.

    Files named explicitly are always returned; files found in folders only when their extension is supported
    (unless ``supported_only`` is False), so a docs folder's images do not turn into a wall of errors.
    """
    found: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            candidates = [path]
        elif path.is_dir():
            candidates = [file_path for file_path in _walk_files(path)
                          if not supported_only or _is_candidate(file_path)]
        else:
            raise LoadError(f"{path}: no such file or folder.")
        for candidate in candidates:
            key = candidate.resolve()
            if key not in seen:
                seen.add(key)
                # A file found in a folder is named by its path inside that folder ("tutorial/index.md"), so
                # same-named files from different folders stay distinct documents.
                name = candidate.name if candidate == path else candidate.relative_to(path).as_posix()
                found.append((candidate, name))
    return found


def load_many(items: Iterable[LoadItem], *, max_bytes: int | None = None, progress: Progress | None = None,
              keep_folders: bool = False) -> tuple[list[Document], list[tuple[str, str]]]:
    """Load a batch, going on past failures: (documents, [(file name, error message), ...]).

    ``items`` are paths or ``(name, bytes)`` pairs; ``progress(done, total, name)`` is called after each.
    ``keep_folders`` keeps the relative path of a pair's name (a folder upload's ``guide/index.md``).
    """
    items = list(items)
    limit = default_max_bytes() if max_bytes is None else max_bytes
    docs: list[Document] = []
    errors: list[tuple[str, str]] = []
    for done, item in enumerate(items, start=1):
        if isinstance(item, tuple):
            name = document_name(item[0], keep_folders=keep_folders)
        else:
            name = document_name(Path(item).name)
        try:
            doc = load_bytes(item[0], item[1], max_bytes=limit, keep_folders=keep_folders) if isinstance(
                item, tuple) else load_path(item, max_bytes=limit)
            docs.append(doc)
        except LoadError as e:
            errors.append((name, str(e)))
        except (RecursionError, MemoryError) as e:
            errors.append((name, f"{name}: too deeply nested or too large to load ({type(e).__name__})."))
        except Exception as e:  # one bad file must never stop the batch
            errors.append((name, f"{name}: could not be loaded ({type(e).__name__}: {e})."))
        if progress is not None:
            progress(done, len(items), name)
    return docs, errors


def samples_dir() -> Path:
    """The shipped ``samples/`` folder (example documents and the golden question set)."""
    return Path(rag_core.__file__).resolve().parent.parent / "samples"


def sample_paths() -> list[Path]:
    """The shipped sample documents: supported files directly in ``samples/`` (its sub-folders hold test
    fixtures such as ``hostile/``, which are not samples). Empty when the folder is missing."""
    folder = samples_dir()
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".") and _is_candidate(p))


def sample_ids() -> dict[str, str]:
    """Id → name of each shipped sample document as loaded (ids derive from name and content, so a team's own file
    of the same name but other content is never taken for a sample)."""
    ids = {}
    for path in sample_paths():
        try:
            ids[load_path(path).id] = path.name
        except LoadError:  # a sample that does not load is no sample anyone has stored
            continue
    return ids


def remove_samples(store: Any, index: Any = None) -> list[str]:
    """Remove the shipped samples from ``store`` (a ``DocumentStore``) and, first, their chunks from ``index``
    (anything with ``remove_document(doc_id)``): a team's index then holds only its own documents. Returns the
    names removed; the team's documents stay as they are."""
    samples = sample_ids()
    removed = []
    for doc in store.list():
        if doc.id in samples:
            if index is not None:
                index.remove_document(doc.id)
            store.delete(doc.id)
            removed.append(doc.name)
    return removed


def supported_types() -> Sequence[str]:
    return sorted(supported_extensions())
