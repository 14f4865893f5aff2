"""Context de-duplication: drop hits that repeat what the selected context already holds, and count the saving.

Hits are taken best first. A hit is dropped when (1) an already selected chunk of the same document spans it
(its parent section, or the whole document, was selected: the text is already in the context), or (2) its
embedding's cosine similarity to any selected chunk is ≥ the threshold (near-duplicate wording, e.g. the same
paragraph in two documents). ``previous`` holds chunks already in the agent's context from earlier retrievals;
they count as selected but are not returned again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_core.errors import EmbeddingError
from rag_core.types import Chunk, Hit


@dataclass(slots=True)
class DedupDrop:
    """A hit removed by de-duplication: which chunk, why, and the selected chunk it duplicates."""

    chunk_id: str
    reason: str
    duplicate_of: str
    similarity: float
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk_id,
            "reason": self.reason,
            "duplicate_of": self.duplicate_of,
            "similarity": round(self.similarity, 4),
            "tokens": self.tokens,
        }


@dataclass(slots=True)
class DedupReport:
    """What de-duplication removed and the tokens that removal saved."""

    threshold: float
    kept: int = 0
    dropped: list[DedupDrop] = field(default_factory=list)

    @property
    def tokens_saved(self) -> int:
        return sum(d.tokens for d in self.dropped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "kept": self.kept,
            "dropped": [d.to_dict() for d in self.dropped],
            "tokens_saved": self.tokens_saved,
        }


def _contains(outer: Chunk, inner: Chunk) -> bool:
    """True when ``outer`` is an ancestor of ``inner`` or spans it in the same document."""
    if outer.id == inner.id or outer.doc_id != inner.doc_id:
        return False
    if inner.parent_id == outer.id or inner.id in outer.child_ids:
        return True
    return outer.granularity != inner.granularity and outer.start <= inner.start and inner.end <= outer.end


def dedup_hits(
    hits: Sequence[Hit],
    embed: Callable[[list[str]], np.ndarray] | None,
    threshold: float = 0.85,
    previous: Sequence[Chunk] = (),
) -> tuple[list[Hit], DedupReport]:
    """Keep hits (in order) that add new content; ``embed`` maps texts to L2-normalised rows (None: no cosine test,
    as when the embedding endpoint is down: then containment alone de-duplicates)."""
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"de-dup threshold must be in (0, 1], got {threshold}")
    report = DedupReport(threshold=threshold)
    if not hits:
        return [], report
    candidates = [hit.chunk for hit in hits]
    vectors: np.ndarray | None = None
    if embed is not None:
        try:
            vectors = np.asarray(embed([c.text for c in [*previous, *candidates]]), dtype=np.float32)
        except EmbeddingError:
            vectors = None
    selected: list[tuple[Chunk, int]] = [(chunk, i) for i, chunk in enumerate(previous)]
    kept: list[Hit] = []
    offset = len(previous)
    for position, hit in enumerate(hits):
        chunk = hit.chunk
        container = next((c for c, _ in selected if _contains(c, chunk)), None)
        if container is not None:
            report.dropped.append(
                DedupDrop(chunk.id, f"contained in selected {container.granularity} {container.id}", container.id,
                          1.0, chunk.tokens)
            )
            continue
        if vectors is not None and selected:
            row = vectors[offset + position]
            sims = vectors[[i for _, i in selected]] @ row
            best = int(np.argmax(sims))
            if float(sims[best]) >= threshold:
                twin = selected[best][0]
                report.dropped.append(
                    DedupDrop(chunk.id, f"cosine {float(sims[best]):.3f} ≥ {threshold} to selected {twin.id}",
                              twin.id, float(sims[best]), chunk.tokens)
                )
                continue
        selected.append((chunk, offset + position))
        kept.append(hit)
    report.kept = len(kept)
    return kept, report
