"""Uploaded ZIP archives of a folder: expanded into ``(path inside the archive, bytes)`` items, paths kept.

A product team's docs folder arrives as one ``docs.zip``; its ``guide/index.md`` and ``config/index.md`` must stay
two documents, so each member keeps its relative path as its name. Bounded before anything is inflated: member
count, declared total size and compression ratio (a zip bomb is refused with a message, never unpacked).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from pathlib import PurePosixPath

from rag_core.errors import LoadError
from rag_core.loaders.detect import CODE_FILENAMES, SUPPORTED_EXTENSIONS, extension, zip_kind
from rag_core.loaders.formats import zip_expansion

MAX_ARCHIVE_MEMBERS = 5000
MAX_ARCHIVE_UNCOMPRESSED = 500 * 1024 * 1024
MAX_ARCHIVE_RATIO = 200
_SKIPPED_PARTS = frozenset({"__macosx", "__pycache__", "node_modules", "venv", "site-packages"})


def is_folder_archive(data: bytes) -> bool:
    """A ZIP that is not itself a document (a DOCX is a ZIP too, and stays one document)."""
    return zip_kind(data) == "zip"


def _wanted(member: str) -> bool:
    parts = PurePosixPath(member).parts
    if any(p.startswith(".") or p.lower() in _SKIPPED_PARTS for p in parts):
        return False
    name = parts[-1] if parts else ""
    return extension(name) in SUPPORTED_EXTENSIONS or (extension(name) == "" and name.lower() in CODE_FILENAMES)


def expand_zip(name: str, data: bytes, *, max_member_bytes: int | None = None,
               ) -> tuple[list[tuple[str, bytes]], list[tuple[str, str]]]:
    """The supported files of archive ``name`` as ``(relative path, bytes)`` in archive order, and per-file errors.

    Hidden files, tool folders (``__MACOSX``, ``node_modules`` …) and unsupported extensions are left out, as for
    a folder on disk. Raises ``LoadError`` for a corrupt archive, a zip bomb, or an archive with no document.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise LoadError(f"{name}: the ZIP archive is corrupt; zip the folder again and upload it.") from e
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > MAX_ARCHIVE_MEMBERS:
            raise LoadError(f"{name}: holds {len(infos)} files (limit {MAX_ARCHIVE_MEMBERS}); upload smaller parts.")
        expands = zip_expansion(infos, MAX_ARCHIVE_UNCOMPRESSED, MAX_ARCHIVE_RATIO)
        if expands:
            total, compressed = expands
            raise LoadError(f"{name}: would expand to {total / 1024 / 1024:.0f} MB from {compressed / 1024:.0f} KB "
                            "(a zip bomb?); refusing to open it.")
        wanted = [i for i in infos if _wanted(i.filename.replace("\\", "/"))]
        if not wanted:
            raise LoadError(f"{name}: the ZIP archive holds no supported document "
                            "(Markdown, text, code, HTML, PDF, CSV, DOCX).")
        members: list[tuple[str, bytes]] = []
        errors: list[tuple[str, str]] = []
        for info in wanted:
            member = info.filename
            if max_member_bytes is not None and info.file_size > max_member_bytes:
                errors.append((member, f"{member}: is {info.file_size / 1024 / 1024:.1f} MB, over the "
                                       f"{max_member_bytes / 1024 / 1024:.0f} MB limit per file (RAG_MAX_UPLOAD_MB); "
                                       "split it or raise the limit."))
                continue
            try:
                members.append((member, archive.read(info)))
            except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError) as e:
                errors.append((member, f"{member}: could not be read from {name} ({e}); "
                                       "zip the folder again without encryption."))
        return members, errors


def expand_archives(items: Iterable, *, max_member_bytes: int | None = None) -> tuple[list, list[tuple[str, str]]]:
    """``items`` with each uploaded folder archive ``(name, bytes)`` replaced by its members (folders kept).

    Returns (items, errors): archive-level failures and unreadable or oversized members as ``(name, message)``.
    """
    expanded: list = []
    errors: list[tuple[str, str]] = []
    for item in items:
        if not (isinstance(item, tuple) and is_folder_archive(bytes(item[1]))):
            expanded.append(item)
            continue
        try:
            members, member_errors = expand_zip(item[0], bytes(item[1]), max_member_bytes=max_member_bytes)
        except LoadError as e:
            errors.append((item[0], str(e)))
            continue
        expanded.extend(members)
        errors.extend(member_errors)
    return expanded, errors
