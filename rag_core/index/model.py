"""What the index modules share: the ingest report, the committed snapshot and small helpers.

``IngestReport`` is public (``rag_core.index`` re-exports it, and ``Filters`` from ``rag_core.stores.filters``);
``Snapshot`` is the immutable state readers use, replaced on each commit (``rag_core.index.sync`` keeps it current).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from rag_core.config import ChunkingConfig
from rag_core.errors import IndexError_
from rag_core.stores.keyword import KeywordIndex
from rag_core.types import GRANULARITIES, Chunk, Document

Chunker = Callable[[Document, ChunkingConfig, str], list[Chunk]]


def timestamp() -> str:
    """Now, in UTC to the second (ISO 8601), as manifests record it."""
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(slots=True)
class IngestReport:
    collection: str
    documents: int = 0
    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    chunks: dict[str, int] = field(default_factory=dict)
    embedded: int = 0
    removed_chunks: int = 0
    errors: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def chunks_per_s(self) -> float:
        return sum(self.chunks.values()) / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "chunks_per_s": round(self.chunks_per_s, 1)}


@dataclass(slots=True, frozen=True)
class Snapshot:
    """The committed state readers use; replaced (never mutated) on each commit."""

    manifest: dict[str, Any]
    chunks: dict[str, Chunk]
    by_doc: dict[str, list[Chunk]]
    keyword: KeywordIndex
    stamp: tuple[int, int] | None

    @property
    def generation(self) -> int:
        return int(self.manifest.get("generation", 0))


def keyword_names(documents: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Document id → the name keyword search reads with its chunks (none for pre-chunked documents)."""
    return {doc_id: str(entry.get("name", "")) for doc_id, entry in documents.items() if entry.get("contextual", True)}


def doc_order(chunks: Iterable[Chunk]) -> list[Chunk]:
    """``chunks`` coarsest granularity first, then in document order."""
    rank = {g: i for i, g in enumerate(GRANULARITIES)}
    return sorted(chunks, key=lambda c: (rank.get(c.granularity, 9), c.start, c.position, c.id))


def built_with(name: str, manifest: dict[str, Any], embedder_id: str, dim: int,
               chunking: ChunkingConfig | None) -> ChunkingConfig:
    """The index's chunking, after checking that ``embedder_id``/``dim`` and ``chunking`` (if given) are its own."""
    if manifest["embedder_id"] != embedder_id or int(manifest["dim"]) != dim:
        raise IndexError_(
            f"index {name!r} was built with embedder {manifest['embedder_id']} ({manifest['dim']} dims), "
            f"not {embedder_id} ({dim} dims); open it with that embedder or use another collection"
        )
    try:
        stored = ChunkingConfig.model_validate(manifest["chunking"])
    except ValidationError as e:
        raise IndexError_(f"index {name!r}: the chunking in its manifest is invalid ({e.error_count()} problem(s): "
                          f"{e.errors()[0]['msg']}); delete the index and ingest its documents again") from e
    # Compared as values: after Streamlit re-imports a changed module, the two may be of two copies of the class
    # (pydantic's == then says they differ, and the message showed two identical settings).
    if chunking is not None and chunking.model_dump() != stored.model_dump():
        raise IndexError_(
            f"index {name!r} was built with chunking {stored.model_dump()}, not {chunking.model_dump()}; "
            "each chunking configuration has its own collection"
        )
    return stored

