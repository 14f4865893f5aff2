""""Why not retrieved?": for a chunk the user expected, where it ranks and which step removed it.

The chunk is followed through the pipeline of a finished ``RetrievalResult`` in order: excluded (already held)
→ filter (granularity / chunk type of the last pass) → rank (outside the last pass's top k) → threshold
(confidence below ``min_score``) → de-dup → budget. Its rank in each retriever is measured on the whole index
(no filters, a deep k), with its Reciprocal Rank Fusion contribution ``1 / (rrf_k + rank)`` from each list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag_core.index import Filters
from rag_core.retrieval.fusion import rrf_contribution
from rag_core.retrieval.retriever import OVERFETCH, collapse_overlaps, same_place
from rag_core.retrieval.trace import RetrievalResult
from rag_core.types import Chunk

DIAGNOSE_DEPTH = 200
STEPS: tuple[str, ...] = ("exclude", "filter", "rank", "threshold", "dedup", "budget")
# The ranked lists hybrid search fuses.
LISTS: tuple[str, ...] = ("vector", "keyword")


@dataclass(slots=True)
class StepCheck:
    step: str
    passed: bool
    detail: str


@dataclass(slots=True)
class WhyNot:
    """Where the expected chunk stands: per-retriever ranks, fusion contributions and each step's verdict."""

    chunk: Chunk
    ranks: dict[str, int | None]
    scores: dict[str, float | None]
    rrf_contributions: dict[str, float]
    depth: int
    checks: list[StepCheck] = field(default_factory=list)
    scope: str = "filtered"  # ranks under the last pass's filters (as the hits table), or "whole index"
    strategy: str = "hybrid"  # the last pass's search
    rank: int | None = None  # the one rank under that search, as configured: the rank step and the table say it

    @property
    def removed_by(self) -> str | None:
        """The first step the chunk failed (None: it is in the result)."""
        return next((c.step for c in self.checks if not c.passed), None)

    @property
    def verdict(self) -> str:
        failed = next((c for c in self.checks if not c.passed), None)
        return "retrieved and in the context" if failed is None else f"removed by {failed.step}: {failed.detail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk_id": self.chunk.id,
            "ranks": dict(self.ranks),
            "scope": self.scope,
            "scores": dict(self.scores),
            "rrf_contributions": dict(self.rrf_contributions),
            "depth": self.depth,
            "strategy": self.strategy,
            "rank": self.rank,
            "removed_by": self.removed_by,
            "verdict": self.verdict,
            "checks": [{"step": c.step, "passed": c.passed, "detail": c.detail} for c in self.checks],
        }


def find_chunks(index, text: str, limit: int = 25) -> list[Chunk]:
    """Chunks whose text or heading path contains ``text`` (case-insensitive), paragraphs first."""
    needle = " ".join(text.lower().split())
    if not needle:
        return []
    order = {"paragraph": 0, "row": 1, "section": 2, "document": 3}
    found = [c for c in index.chunks()
             if needle in " ".join(c.text.lower().split()) or needle in c.heading.lower()]
    found.sort(key=lambda c: (order.get(c.granularity, 9), len(c.text)))
    return found[:limit]


def _filter_failure(chunk: Chunk, filters: dict[str, Any]) -> str | None:
    granularity = filters.get("granularity")
    if isinstance(granularity, list) and chunk.granularity not in granularity:
        return f"granularity {chunk.granularity!r} not in {granularity} in the last pass"
    chunk_types = filters.get("chunk_types")
    if isinstance(chunk_types, list) and chunk.chunk_type not in chunk_types:
        return f"chunk type {chunk.chunk_type!r} not in {chunk_types} in the last pass"
    return None


def explain_missing(retriever, result: RetrievalResult, chunk_id: str, exclude_ids=(),
                    depth: int = DIAGNOSE_DEPTH) -> WhyNot:
    """Explain what happened to ``chunk_id`` in ``result`` (produced by ``retriever`` with ``exclude_ids``)."""
    index = retriever.index
    chunk = index.get(chunk_id)
    if chunk is None:
        raise ValueError(f"no chunk {chunk_id!r} in the index: pick one from the index's chunks")
    config = result.config or retriever.config
    query = result.rewritten_query
    last = result.iterations[-1]
    # Rank under the last pass's filters, as the hits table does (a whole-index rank read "rank 11" beside a
    # table saying 20); a chunk those filters exclude is ranked on the whole index instead.
    scope = "whole index" if _filter_failure(chunk, last.filters) else "filtered"
    filters = Filters() if scope == "whole index" else Filters(
        granularity=last.filters.get("granularity"), chunk_types=last.filters.get("chunk_types"))
    # Each retriever's rank and their RRF, ranked by the retriever's own hybrid search over two ``depth``-deep lists
    # (every chunk of either list kept). The table shows each list's RRF contribution, so it is plain RRF, without
    # the section lift; the rank (the rank step's, and the table's fused rank for hybrid) is the search's as configured.
    plain_rrf = config.model_copy(update={"fusion": "rrf", "section_weight": 0.0})
    fused = retriever.ranked("hybrid", query, 2 * depth, filters, tuple(exclude_ids), plain_rrf, candidates=depth,
                             calibrate=False)
    hit = next((h for h in fused if h.chunk.id == chunk_id), None)
    ranks: dict[str, int | None] = {name: hit.ranks.get(name) if hit else None for name in LISTS}
    scores: dict[str, float | None] = {name: hit.scores.get(name) if hit else None for name in LISTS}
    ranks["fused"], scores["fused"] = (hit.ranks["fused"], hit.score) if hit else (None, None)
    contributions = {name: rrf_contribution(rank, plain_rrf.rrf_k) for name, rank in ranks.items()
                     if name in LISTS and rank is not None}
    why = WhyNot(chunk, ranks, scores, contributions, depth, scope=scope)

    excluded = set(exclude_ids)
    searched = chunk_id not in excluded and last.strategy != "web" and _filter_failure(chunk, last.filters) is None
    ranked = retriever.ranked(last.strategy, query, OVERFETCH * max(depth, last.k), filters, list(excluded),
                              config) if searched else []
    position = next((i for i, h in enumerate(ranked) if h.chunk.id == chunk_id), None)
    deep = collapse_overlaps(ranked)
    rank = next((i for i, h in enumerate(deep, start=1) if h.chunk.id == chunk_id), None)
    why.strategy, why.rank = last.strategy, rank
    if last.strategy == "hybrid":  # the table's fused rank is the search's own (it was plain RRF over raw lists)
        ranks["fused"], scores["fused"] = rank, ranked[position].score if position is not None else None

    why.checks.append(StepCheck("exclude", chunk_id not in excluded,
                                "already retrieved (in exclude_ids)" if chunk_id in excluded else "not excluded"))
    if chunk_id in excluded:
        return why
    if last.strategy == "web":
        why.checks.append(StepCheck("rank", False, "the web route was taken: the index was not searched"))
        return why
    failure = _filter_failure(chunk, last.filters)
    why.checks.append(StepCheck("filter", failure is None, failure or f"passes the last pass's filters {last.filters}"))
    if failure:
        return why
    if position is not None:
        better = same_place(chunk, [h.chunk for h in collapse_overlaps(ranked[:position])])
        if better is not None:
            why.checks.append(StepCheck("same place", False, f"overlaps {better.granularity} {better.id}, ranked "
                                        "higher in the same document: a place is listed once"))
            return why
    in_top = rank is not None and rank <= last.k
    where = f"rank {rank}" if rank is not None else f"not in the top {max(depth, last.k)}"
    why.checks.append(StepCheck("rank", in_top, f"{where} under {last.strategy}; the last pass kept the top {last.k}"))
    if not in_top:
        return why
    below = next((d for d in last.below_min_score if d.chunk_id == chunk_id), None)
    why.checks.append(StepCheck("threshold", below is None, below.reason if below else "confidence ≥ min_score"))
    if below:
        return why
    dropped = next((d for d in result.dedup.dropped if d.chunk_id == chunk_id), None)
    why.checks.append(StepCheck("dedup", dropped is None, dropped.reason if dropped else "not a duplicate"))
    if dropped:
        return why
    budget = next((d for d in result.context.dropped if d["chunk_id"] == chunk_id), None)
    truncated = next((t for t in result.context.truncated if t["chunk_id"] == chunk_id), None)
    detail = budget["reason"] if budget else (
        f"included, truncated to {truncated['shown_tokens']} of {truncated['total_tokens']} tokens" if truncated
        else "included whole")
    why.checks.append(StepCheck("budget", budget is None, detail))
    return why
