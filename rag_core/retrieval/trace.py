"""Traces of a retrieval: one ``IterationTrace`` per confidence-gated pass and the overall ``RetrievalResult``.

Both serialise with ``to_dict()`` to plain JSON-ready dictionaries, which the command line prints and the
Retrieval Lab draws, so a person can follow every decision (strategy, filters, k, confidence, stop/widen/relax).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag_core.config import RetrievalConfig
from rag_core.retrieval.dedup import DedupReport
from rag_core.retrieval.formatting import FormattedContext
from rag_core.types import Hit

# Decisions taken at the end of an iteration.
DECISIONS: tuple[str, ...] = ("stop", "widen", "relax")


@dataclass(slots=True)
class DroppedHit:
    """A candidate removed by a retrieval step, and why (``step`` is ``threshold``, ``dedup`` or ``budget``)."""

    chunk_id: str
    step: str
    reason: str
    confidence: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"chunk_id": self.chunk_id, "step": self.step, "reason": self.reason, "confidence": self.confidence}


@dataclass(slots=True)
class IterationTrace:
    """One pass of dynamic retrieval: what was searched, what came back and what was decided next."""

    iteration: int
    strategy: str
    strategy_reason: str
    query: str
    k: int
    filters: dict[str, Any]
    hits: list[Hit]
    confidence: float
    decision: str = "stop"
    decision_reason: str = ""
    elapsed_ms: float = 0.0
    below_min_score: list[DroppedHit] = field(default_factory=list)

    def to_dict(self, include_text: bool = False) -> dict[str, Any]:
        return {
            "iteration": self.iteration,
            "strategy": self.strategy,
            "strategy_reason": self.strategy_reason,
            "query": self.query,
            "k": self.k,
            "filters": dict(self.filters),
            "hits": [_hit_summary(hit, include_text) for hit in self.hits],
            "confidence": round(self.confidence, 4),
            "decision": self.decision,
            "decision_reason": self.decision_reason,
            "elapsed_ms": round(self.elapsed_ms, 2),
            "below_min_score": [d.to_dict() for d in self.below_min_score],
        }


@dataclass(slots=True)
class RetrievalResult:
    """Everything a retrieval produced: final hits, confidence, per-iteration trace, de-dup and context."""

    query: str
    rewritten_query: str
    intent: str
    route: str
    route_reason: str
    hits: list[Hit]
    confidence: float
    iterations: list[IterationTrace]
    dedup: DedupReport
    context: FormattedContext
    elapsed_ms: float
    intent_reason: str = ""
    rewrite_notes: list[str] = field(default_factory=list)
    # The settings the search ran with, typed; only ``to_dict`` makes it a dict. The dict form saved traces hold is
    # read back into the model (settings no longer known left out).
    config: RetrievalConfig | None = None

    def __post_init__(self) -> None:
        if isinstance(self.config, dict):
            known = {name: value for name, value in self.config.items() if name in RetrievalConfig.model_fields}
            self.config = RetrievalConfig.model_validate(known) if known else None

    @property
    def final_filters(self) -> dict[str, Any]:
        return self.iterations[-1].filters if self.iterations else {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "rewritten_query": self.rewritten_query,
            "rewrite_notes": list(self.rewrite_notes),
            "intent": self.intent,
            "intent_reason": self.intent_reason,
            "route": self.route,
            "route_reason": self.route_reason,
            "confidence": round(self.confidence, 4),
            "hits": [_hit_summary(hit, include_text=True) for hit in self.hits],
            "iterations": [it.to_dict() for it in self.iterations],
            "dedup": self.dedup.to_dict(),
            "context": self.context.to_dict(),
            "elapsed_ms": round(self.elapsed_ms, 2),
            "config": self.config.model_dump() if self.config is not None else {},
        }


def _hit_summary(hit: Hit, include_text: bool) -> dict[str, Any]:
    """A hit as the trace shows it: ids, scores and ranks, provenance, optionally the text."""
    chunk = hit.chunk
    summary: dict[str, Any] = {
        "chunk_id": chunk.id,
        "doc_id": chunk.doc_id,
        "doc_name": hit.source_name,
        "heading_path": list(chunk.heading_path),
        "granularity": chunk.granularity,
        "chunk_type": chunk.chunk_type,
        "tokens": chunk.tokens,
        "score": round(hit.score, 6),
        "confidence": round(hit.confidence, 4),
        "ranks": dict(hit.ranks),
        "scores": {name: round(value, 6) for name, value in hit.scores.items()},
    }
    if chunk.metadata.get("url"):
        summary["url"] = chunk.metadata["url"]
    if include_text:
        summary["text"] = chunk.text
    return summary
