"""``DocumentStore``: loaded documents persisted in ``data_dir/documents/``, deduplicated by id, restart-safe.

Layout: one ``<id>.json`` per document (the full ``Document``) plus ``index.json`` (metadata without text)
so listing is cheap. Every write is a temp file + ``os.replace``; read-modify-write of the index runs under
a ``filelock`` so two browser sessions (threads or processes) cannot lose each other's additions.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Annotated, Any

from filelock import FileLock
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, StringConstraints, ValidationError
from pydantic_core import PydanticCustomError

from rag_core.errors import field_problems
from rag_core.files import atomic_write_text
from rag_core.loaders import document_id, load_many
from rag_core.loaders.archives import (
    expand_archives,
    folder_skip_reason,
    is_folder_archive,
    max_upload_files,
    skipped_members,
)
from rag_core.loaders.format_table import format_names
from rag_core.loaders.load import MAX_DOCUMENT_NAME_CHARS, default_max_bytes
from rag_core.types import Document, Progress

log = logging.getLogger(__name__)

INDEX_FILE = "index.json"
_ID_RE = re.compile(r"[0-9a-f]{16}")  # used with fullmatch: "$" lets a final "\n" through
_LOCK_TIMEOUT_S = 30


class _Metadata(BaseModel):
    """What the pages and the chunker read from a document's metadata, typed; other keys are kept as they are."""

    model_config = ConfigDict(strict=True, extra="allow")

    warnings: list[Annotated[str, StringConstraints(max_length=20_000)]] = Field(default_factory=list,
                                                                                max_length=10_000)
    pages: list[Annotated[list[int], Field(min_length=2, max_length=2)]] = Field(default_factory=list)
    page_count: int = Field(0, ge=0)
    title: Annotated[str, StringConstraints(max_length=20_000)] = ""
    encoding: Annotated[str, StringConstraints(max_length=60)] = ""
    original_type: Annotated[str, StringConstraints(max_length=20)] = ""
    converted: bool = False


def _format_name(value: Any) -> str:
    """A format's name from the table, read as each document is, so the documents of a new row read back."""
    names = format_names()
    if isinstance(value, str) and value in names:
        return value
    listed = [repr(n) for n in names]
    expected = ", ".join(listed[:-1]) + " or " + listed[-1] if len(listed) > 1 else listed[0]
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


class _DocumentModel(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    id: Annotated[str, StringConstraints(max_length=64)] = ""
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_DOCUMENT_NAME_CHARS)]  # loaders' own rule
    doc_type: Annotated[str, PlainValidator(_format_name)]
    size: int = Field(ge=0)
    created: Annotated[str, StringConstraints(max_length=40)] = ""
    text: str
    language: Annotated[str, StringConstraints(max_length=40)] | None = None
    metadata: _Metadata = Field(default_factory=_Metadata)


def parse_document(data: Any, where: str = "document", check_id: bool = True) -> Document:
    """A stored or bundled document once every field has its type; ``ValueError`` names the bad fields."""
    try:
        model = _DocumentModel.model_validate(data)
    except ValidationError as e:
        raise ValueError(f"{where} is malformed: {field_problems(e, limit=5)}") from None
    if check_id and not _ID_RE.fullmatch(model.id):
        raise ValueError(f"{where} is malformed: id: 16 hex digits expected")
    fields = model.model_dump(exclude={"metadata"})
    return Document(**fields, metadata=model.metadata.model_dump(exclude_unset=True))


def _summary(doc: Document) -> dict[str, Any]:
    data = doc.to_dict()
    data.pop("text")
    return data


class DocumentStore:
    """Persistent documents keyed by their stable id."""

    def __init__(self, data_dir: str | os.PathLike):
        self.root = Path(data_dir) / "documents"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(str(self.root / ".lock"), timeout=_LOCK_TIMEOUT_S)
        self._mutex = threading.RLock()
        self.unreadable: dict[str, str] = {}  # id → why its file could not be read (listed so it can be removed)
        self._index_stamp: tuple[int, int, int] | None = None
        self._order: list[str] = []
        self._docs: dict[str, Document] = {}
        with self._lock:
            self._recover()

    # ------------------------------------------------------------------------------------------ internals

    def _doc_path(self, doc_id: str) -> Path:
        if not _ID_RE.fullmatch(doc_id):
            raise ValueError(f"not a document id: {doc_id!r} (16 lowercase hex digits expected)")
        return self.root / f"{doc_id}.json"

    def _stamp(self) -> tuple[int, int, int] | None:
        try:
            stat = (self.root / INDEX_FILE).stat()
        except FileNotFoundError:
            return None
        return stat.st_ino, stat.st_mtime_ns, stat.st_size  # os.replace gives a new inode

    def _read_index(self) -> list[dict[str, Any]] | None:
        try:
            data = json.loads((self.root / INDEX_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
            return None
        return data["documents"]

    def _write_index(self, summaries: list[dict[str, Any]]) -> None:
        atomic_write_text(self.root / INDEX_FILE, json.dumps({"version": 1, "documents": summaries},
                                                             ensure_ascii=False, indent=1))

    def _recover(self) -> None:
        """Clean up after a crash: drop stale temp files; rebuild the index if it is missing, corrupt or stale."""
        for tmp in self.root.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)
        on_disk = {p.stem for p in self.root.glob("*.json") if _ID_RE.fullmatch(p.stem)}
        summaries = self._read_index()
        listed = [s.get("id") for s in summaries] if summaries is not None else None
        if listed is not None and set(listed) == on_disk:
            return
        log.warning("document index in %s is missing or stale; rebuilding it from the document files", self.root)
        rebuilt: list[dict[str, Any]] = []
        for doc_id in on_disk:
            doc = self._read_doc(doc_id)
            if doc is not None:
                rebuilt.append(_summary(doc))
        rebuilt.sort(key=lambda s: (s.get("created", ""), s.get("name", "")))
        self._write_index(rebuilt)

    def _read_doc(self, doc_id: str) -> Document | None:
        path = self._doc_path(doc_id)
        try:
            doc = parse_document(json.loads(path.read_text(encoding="utf-8")), f"document file {path.name}")
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError, RecursionError) as e:
            log.warning("unreadable document file %s (%s); ignoring it", path, e)
            self.unreadable[doc_id] = str(e)
            return None
        self.unreadable.pop(doc_id, None)
        return doc

    def _refresh(self) -> None:
        """Bring the in-memory view up to date when another session or process changed the index."""
        stamp = self._stamp()
        if stamp == self._index_stamp and stamp is not None:
            return
        summaries = self._read_index()
        if summaries is None:
            with self._lock:
                self._recover()
            summaries = self._read_index() or []
        order: list[str] = []
        docs: dict[str, Document] = {}
        for summary in summaries:
            doc_id = summary.get("id", "")
            doc = self._docs.get(doc_id) or (self._read_doc(doc_id) if _ID_RE.fullmatch(doc_id) else None)
            if doc is not None:
                order.append(doc_id)
                docs[doc_id] = doc
        self._order, self._docs, self._index_stamp = order, docs, stamp

    # ------------------------------------------------------------------------------------------ public API

    def list(self) -> list[Document]:
        """All documents, oldest first (cached; re-read only when the index file changed)."""
        with self._mutex:
            self._refresh()
            return [self._docs[i] for i in self._order]

    def get(self, doc_id: str) -> Document | None:
        with self._mutex:
            self._refresh()
            return self._docs.get(doc_id)

    def __contains__(self, doc_id: str) -> bool:
        return self.get(doc_id) is not None

    def __len__(self) -> int:
        return len(self.list())

    def add(self, doc: Document) -> tuple[Document, bool]:
        """Store ``doc``; returns ``(stored, True)``, or ``(existing, False)`` when the same file is already here."""
        return self.add_many([doc])[0]

    def add_many(self, docs: Iterable[Document]) -> list[tuple[Document, bool]]:
        """``add`` for a batch, writing the index once (a folder of 1,000 files must not rewrite it 1,000 times)."""
        results: list[tuple[Document, bool]] = []
        with self._mutex, self._lock:
            self._index_stamp = None
            self._refresh()
            new: list[Document] = []
            for doc in docs:
                existing = self._docs.get(doc.id)
                if existing is not None:
                    results.append((existing, False))
                    continue
                atomic_write_text(self._doc_path(doc.id), json.dumps(doc.to_dict(), ensure_ascii=False))
                self._order.append(doc.id)
                self._docs[doc.id] = doc
                new.append(doc)
                results.append((doc, True))
            if new:
                self._write_index([_summary(self._docs[i]) for i in self._order])
            self._index_stamp = self._stamp()
        return results

    def delete(self, doc_id: str) -> bool:
        """Remove a document; False when it was not there."""
        with self._mutex, self._lock:
            self._index_stamp = None
            self._refresh()
            if doc_id not in self._docs:
                return False
            self._order.remove(doc_id)
            del self._docs[doc_id]
            self._write_index([_summary(self._docs[i]) for i in self._order])
            self._doc_path(doc_id).unlink(missing_ok=True)
            self._index_stamp = self._stamp()
            return True

    def remove_unreadable(self, index: Any = None) -> list[str]:
        """Delete the document files that could not be read (``unreadable``); returns their ids.

        With ``index`` (anything with ``remove_document(doc_id)``, e.g. the active ``Index``) their chunks are
        removed from it first, by document id, so that nothing searchable is left of a document no longer listed.
        """
        removed = list(self.unreadable)
        for doc_id in removed if index is not None else ():
            index.remove_document(doc_id)
        with self._mutex, self._lock:
            for doc_id in removed:
                self._doc_path(doc_id).unlink(missing_ok=True)
                self.unreadable.pop(doc_id, None)
            self._index_stamp = None
            self._refresh()
            self._write_index([_summary(self._docs[i]) for i in self._order])
            self._index_stamp = self._stamp()
        return removed

    def clear(self) -> int:
        """Remove every document; returns how many were removed."""
        ids = [d.id for d in self.list()]
        return sum(self.delete(doc_id) for doc_id in ids)


ON_CONFLICT = ("ask", "replace", "keep_both", "skip")
CONFLICT_ACTIONS = ("replace", "keep_both", "skip")


@dataclass(slots=True)
class Conflict:
    """A loaded file whose name is already stored with other content: nothing is decided until someone says."""

    new: Document
    stored: Document


@dataclass(slots=True)
class AddReport:
    """What happened to a batch of files: added, already present, replaced old versions, kept under a new name,
    skipped, same-name conflicts waiting for a decision, per-file errors."""

    added: list[Document] = field(default_factory=list)
    existing: list[Document] = field(default_factory=list)
    replaced: list[Document] = field(default_factory=list)
    renamed: list[Document] = field(default_factory=list)
    skipped: list[Document] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    skipped_files: list[tuple[str, str]] = field(default_factory=list)  # (ZIP member, why it was left out)
    folder_skipped: list[tuple[str, str]] = field(default_factory=list)  # (a folder upload's file, why left out)

    @property
    def documents(self) -> list[Document]:
        return self.added + self.existing

    def merge(self, other: AddReport) -> AddReport:
        for name in ("added", "existing", "replaced", "renamed", "skipped", "conflicts", "errors",
                     "skipped_files", "folder_skipped"):
            getattr(self, name).extend(getattr(other, name))
        return self


def free_name(name: str, taken: set[str]) -> str:
    """``name`` or, when taken, ``stem (2).ext``, ``stem (3).ext`` … in the same folder."""
    if name not in taken:
        return name
    path = PurePosixPath(name)
    suffix = "".join(path.suffixes[-1:])
    stem = name[: len(name) - len(suffix)] if suffix else name
    n = 2
    while f"{stem} ({n}){suffix}" in taken:
        n += 1
    return f"{stem} ({n}){suffix}"


def _renamed(doc: Document, name: str) -> Document:
    """``doc`` under another name, with its own stable id (derived from the new name and the content's id)."""
    return dataclasses.replace(doc, name=name, id=document_id(name, doc.id.encode()),
                               metadata={**doc.metadata, "renamed_from": doc.name})


def _item_name(item) -> str:
    return str(item[0]) if isinstance(item, tuple) else Path(item).name


def _over_file_limit(refused: list, limit: int, total: int) -> tuple[str, str]:
    """The one error for the files of an upload past ``limit``: how many, from which on, and what to do."""
    return (f"{len(refused):,} more files",
            f"Only the first {limit:,} of {total:,} files of this upload were loaded: one upload takes at most "
            f"{limit:,} files (RAG_MAX_UPLOAD_FILES). The other {len(refused):,}, from {_item_name(refused[0])} on, "
            "were not loaded; upload them in another batch.")


def add_files(store: DocumentStore, items: Iterable, *, max_bytes: int | None = None,
              progress: Progress | None = None, replace_same_name: bool = True, on_conflict: str = "replace",
              keep_folders: bool = True, max_files: int | None = None) -> AddReport:
    """Load files (paths or ``(name, bytes)`` pairs; a folder's ZIP is expanded) and store them, going on past
    per-file failures.

    A file whose name is already stored with other content is a conflict, settled by ``on_conflict``:
    ``"replace"`` (a new version: the old one is removed from the store, as ``Index.ingest`` does in the index),
    ``"keep_both"`` (stored as ``name (2).ext``), ``"skip"``, or ``"ask"``: not stored, returned in
    ``report.conflicts`` for ``resolve_conflicts``. ``replace_same_name=False`` stores same-named files side by
    side. ``keep_folders`` (the default) keeps relative paths in names (a folder upload), so ``guide/index.md``
    and ``config/index.md`` are two documents; a ZIP's members always keep theirs.

    At most ``max_files`` files (default ``RAG_MAX_UPLOAD_FILES``; a ZIP counts as its members) are loaded: the
    first ones, files before ZIP members; the rest are refused with one error saying how many and from which on.
    """
    if on_conflict not in ON_CONFLICT:
        raise ValueError(f"on_conflict must be one of {', '.join(ON_CONFLICT)}, got {on_conflict!r}")
    limit = max_upload_files() if max_files is None else max_files
    max_bytes = default_max_bytes() if max_bytes is None else max_bytes  # a ZIP's members are files like the others
    items = list(items)
    archives = [i for i in items if isinstance(i, tuple) and is_folder_archive(bytes(i[1]))]
    plain = [i for i in items if not any(i is a for a in archives)]
    folder_skipped = []
    if keep_folders:  # a folder upload leaves out what a ZIP of that folder would, and names it
        reasons = [folder_skip_reason(str(i[0])) if isinstance(i, tuple) else None for i in plain]
        folder_skipped = [(str(i[0]), r) for i, r in zip(plain, reasons, strict=True) if r is not None]
        plain = [i for i, r in zip(plain, reasons, strict=True) if r is None]
    refused = plain[limit:]
    plain = plain[:limit]
    room = limit - len(plain)
    members: list = []
    archive_errors: list[tuple[str, str]] = []
    if room > 0:
        members, archive_errors = expand_archives(archives, max_member_bytes=max_bytes, max_members=limit)
        refused += members[room:]
        members = members[:room]
    else:
        refused += archives
    docs, errors = load_many(plain, max_bytes=max_bytes, progress=progress, keep_folders=keep_folders)
    member_docs, member_errors = load_many(members, max_bytes=max_bytes, progress=progress, keep_folders=True)
    docs += member_docs
    report = AddReport(errors=[*archive_errors, *errors, *member_errors],
                       skipped_files=[s for a in archives for s in skipped_members(bytes(a[1]), limit)],
                       folder_skipped=folder_skipped)
    if refused:
        report.errors.append(_over_file_limit(refused, limit, len(plain) + len(members) + len(refused)))
    if not replace_same_name:
        return _store_new(store, docs, report)
    latest = {doc.name: doc for doc in store.list()}
    plain_docs: list[Document] = []
    for doc in docs:
        previous = latest.get(doc.name)
        if previous is None or previous.id == doc.id:
            plain_docs.append(doc)
            latest[doc.name] = doc
        elif on_conflict == "ask":
            report.conflicts.append(Conflict(doc, previous))
        else:
            _store_new(store, plain_docs, report)
            plain_docs = []
            report.merge(resolve_conflicts(store, [(Conflict(doc, previous), on_conflict)]))
            latest = {d.name: d for d in store.list()}
    _store_new(store, plain_docs, report)
    gone = {d.id for d in report.replaced}  # a batch's own earlier file that a later one replaced
    report.added = [d for d in report.added if d.id not in gone]
    return report


def _store_new(store: DocumentStore, docs: list[Document], report: AddReport) -> AddReport:
    try:
        for stored, is_new in store.add_many(docs):
            (report.added if is_new else report.existing).append(stored)
    except OSError as e:
        report.errors.extend((doc.name, f"{doc.name}: could not be saved ({e.strerror or e}).") for doc in docs)
    return report


def resolve_conflicts(store: DocumentStore, decisions: Iterable[tuple[Conflict, str]]) -> AddReport:
    """Carry out the decision for each same-name conflict: ``replace``, ``keep_both`` or ``skip``."""
    report = AddReport()
    for conflict, action in decisions:
        if action not in CONFLICT_ACTIONS:
            raise ValueError(f"a conflict is settled by one of {', '.join(CONFLICT_ACTIONS)}, got {action!r}")
        if action == "skip":
            report.skipped.append(conflict.new)
            continue
        if action == "keep_both":
            taken = {d.name for d in store.list()}
            doc = _renamed(conflict.new, free_name(conflict.new.name, taken))
            before = len(report.added)
            _store_new(store, [doc], report)
            report.renamed.extend(report.added[before:])
            continue
        before = len(report.added)
        _store_new(store, [conflict.new], report)
        if len(report.added) > before and store.get(conflict.stored.id) is not None:
            store.delete(conflict.stored.id)
            report.replaced.append(conflict.stored)
    return report
