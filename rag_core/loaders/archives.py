"""Uploaded ZIP archives of a folder: expanded into ``(path inside the archive, bytes)`` items, paths kept.

A product team's docs folder arrives as one ``docs.zip``; its ``guide/index.md`` and ``config/index.md`` must stay
two documents, so each member keeps its relative path as its name. Bounded before anything is inflated (member
count, declared total size and compression ratio) and while inflating, since declared sizes can lie: each member is
read as a stream that stops at the per-file limit, and all of them together at the archive's budget (a zip bomb is
refused with a message, never unpacked).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from pathlib import PurePosixPath

from rag_core.config import get_settings
from rag_core.errors import LoadError
from rag_core.loaders.detect import accepted_name, extension, zip_kind
from rag_core.loaders.format_table import listed_kinds
from rag_core.loaders.formats import zip_expansion
from rag_core.loaders.zipread import InflateLimit, entries_at_most, expansion_budget, human_bytes, iter_member

MAX_ARCHIVE_UNCOMPRESSED = 500 * 1024 * 1024
MAX_ARCHIVE_RATIO = 200
_SKIPPED_PARTS = frozenset({"__macosx", "__pycache__", "node_modules", "venv", "site-packages"})


def is_folder_archive(data: bytes) -> bool:
    """A ZIP that is not itself a document (a DOCX is a ZIP too, and stays one document: a format's row claims it)."""
    return zip_kind(data) == "zip"


def _wanted(member: str) -> bool:
    return skip_reason(member) is None


def skip_reason(member: str) -> str | None:
    """Why archive member ``member`` is not loaded (None: it is): the one rule ``expand_zip`` keeps members by, so a
    skipped file is named with its reason and a loaded one never is."""
    path = member.replace("\\", "/")
    parts = PurePosixPath(path).parts
    if ".." in parts:
        return "refused: its path escapes the archive"
    for p in parts[:-1]:
        if p.startswith(".") or p.lower() in _SKIPPED_PARTS:
            return f"skipped: inside the tool or hidden folder {p}/"
    name = parts[-1] if parts else ""
    if name.startswith("."):
        return "skipped: a hidden file"
    if name.lower() not in _SKIPPED_PARTS and accepted_name(name):
        return None
    return f"skipped: unsupported type ({extension(name) or 'no extension'})"


def folder_skip_reason(path: str) -> str | None:
    """Why a file of an uploaded folder is left out by its path, as a ZIP member would be (a hidden or tool
    folder, a hidden file, a path escaping the folder); None: it is loaded (its type is judged as it loads)."""
    reason = skip_reason(path)
    return None if reason is None or reason.startswith("skipped: unsupported type") else reason


def skipped_members(data: bytes, max_members: int | None = None) -> list[tuple[str, str]]:
    """Every member of ZIP ``data`` that ``expand_zip`` leaves out, as ``(path, reason)`` in archive order
    (none for an archive refused as a whole: over ``max_members`` files, checked before zipfile parses it)."""
    if entries_at_most(data) > (max_upload_files() if max_members is None else max_members):
        return []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = [i.filename for i in archive.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError, ValueError):
        return []
    return [(n, r) for n in names if (r := skip_reason(n)) is not None]


def max_upload_files() -> int:
    """Files one upload may hold (``RAG_MAX_UPLOAD_FILES``): a folder, a pick of files, or a ZIP's members."""
    return get_settings().max_upload_files


def _too_many(name: str, count: str, limit: int) -> LoadError:
    return LoadError(f"{name}: holds {count} files, over the limit of {limit:,} per upload (RAG_MAX_UPLOAD_FILES); "
                     "upload it in smaller parts.")


def _bomb(name: str, budget: int, data: bytes) -> LoadError:
    return LoadError(f"{name}: inflates to more than {human_bytes(budget)} from {human_bytes(len(data))} "
                     "(a zip bomb?); refusing to open it.")


def _inflates_too_much(member: str, max_member_bytes: int) -> str:
    return (f"{member}: inflates to more than {max_member_bytes / 1024 / 1024:.0f} MB (whatever its header says), "
            "over the limit per file (RAG_MAX_UPLOAD_MB); split it or raise the limit.")


def expand_zip(name: str, data: bytes, *, max_member_bytes: int | None = None, max_members: int | None = None,
               ) -> tuple[list[tuple[str, bytes]], list[tuple[str, str]]]:
    """The supported files of archive ``name`` as ``(relative path, bytes)`` in archive order, and per-file errors.

    Hidden files, tool folders (``__MACOSX``, ``node_modules`` …) and unsupported extensions are left out, as for
    a folder on disk. Raises ``LoadError`` for a corrupt archive, more than ``max_members`` files (default
    ``RAG_MAX_UPLOAD_FILES``), a zip bomb (by declared or by real sizes), or an archive with no document.
    """
    limit = max_upload_files() if max_members is None else max_members
    if entries_at_most(data) > limit:  # refused before zipfile makes an object of every entry
        raise _too_many(name, f"more than {limit:,}", limit)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as e:
        raise LoadError(f"{name}: the ZIP archive is corrupt; zip the folder again and upload it.") from e
    with archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > limit:
            raise _too_many(name, f"{len(infos):,}", limit)
        expands = zip_expansion(infos, MAX_ARCHIVE_UNCOMPRESSED, MAX_ARCHIVE_RATIO)
        if expands:
            total, compressed = expands
            raise LoadError(f"{name}: would expand to {total / 1024 / 1024:.0f} MB from {compressed / 1024:.0f} KB "
                            "(a zip bomb?); refusing to open it.")
        wanted = [i for i in infos if _wanted(i.filename.replace("\\", "/"))]
        if not wanted:
            raise LoadError(f"{name}: the ZIP archive holds no supported document ({listed_kinds()}).")
    members: list[tuple[str, bytes]] = []
    errors: list[tuple[str, str]] = []
    budget = expansion_budget(len(data), MAX_ARCHIVE_UNCOMPRESSED, MAX_ARCHIVE_RATIO)
    inflated = 0  # real bytes inflated so far, kept or not: the work the archive made
    for info in wanted:
        member = info.filename
        if max_member_bytes is not None and info.file_size > max_member_bytes:
            errors.append((member, f"{member}: is {info.file_size / 1024 / 1024:.1f} MB, over the "
                                   f"{max_member_bytes / 1024 / 1024:.0f} MB limit per file (RAG_MAX_UPLOAD_MB); "
                                   "split it or raise the limit."))
            continue
        room = budget - inflated
        per_file = room if max_member_bytes is None else min(room, max_member_bytes)
        pieces: list[bytes] = []
        try:
            for piece in iter_member(data, info, per_file):
                pieces.append(piece)
                inflated += len(piece)
        except InflateLimit as e:
            if per_file == room:
                raise _bomb(name, budget, data) from e
            errors.append((member, _inflates_too_much(member, per_file)))
            continue
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError) as e:
            errors.append((member, f"{member}: could not be read from {name} ({e}); "
                                   "zip the folder again, without encryption."))
            continue
        members.append((member, b"".join(pieces)))
    return members, errors


def expand_archives(items: Iterable, *, max_member_bytes: int | None = None, max_members: int | None = None,
                    ) -> tuple[list, list[tuple[str, str]]]:
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
            members, member_errors = expand_zip(item[0], bytes(item[1]), max_member_bytes=max_member_bytes,
                                                max_members=max_members)
        except LoadError as e:
            errors.append((item[0], str(e)))
            continue
        except MemoryError:  # the caps keep an archive well below this; a tight memory limit may not
            errors.append((item[0], f"{item[0]}: too large to unpack in the memory this server has; "
                                    "upload it in smaller parts."))
            continue
        expanded.extend(members)
        errors.extend(member_errors)
    return expanded, errors
