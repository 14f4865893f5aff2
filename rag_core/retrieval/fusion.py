"""Fusion of ranked lists: Reciprocal Rank Fusion and a weighted convex combination of normalised scores.

Both take ``{retriever name: [(item id, raw score), ...] best first}`` and return ``Fused`` items best first,
keeping each retriever's 1-based rank and raw score so a hit can always say where it came from.

* RRF (Cormack et al., 2009): ``score(d) = Σ_r 1 / (k + rank_r(d))``, with the paper's ``k = 60`` as this
  function's default; search passes ``RetrievalConfig.rrf_k`` (20, measured in ``rag_core.config``). It ignores
  raw scores, so it needs no calibration between BM25 and cosine.
* Weighted: each list's scores are min-max normalised to [0, 1] (best = 1, worst = 0; a list of one or of
  equal scores maps to 1), then ``score(d) = Σ_r w_r · norm_r(d)`` with ``Σ w_r = 1``; an item absent from a
  list gets 0 from it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Ranking = Sequence[tuple[str, float]]


@dataclass(slots=True)
class Fused:
    """One fused item: its fused score, and per retriever its rank, raw score and contribution."""

    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    contributions: dict[str, float] = field(default_factory=dict)


def _check_rankings(rankings: Mapping[str, Ranking]) -> None:
    if not rankings:
        raise ValueError("nothing to fuse: give at least one ranked list")
    for name, ranking in rankings.items():
        ids = [item_id for item_id, _ in ranking]
        if len(ids) != len(set(ids)):
            raise ValueError(f"ranked list {name!r} holds the same id twice")


def order_fused(items: dict[str, Fused]) -> list[Fused]:
    """Fused items best first; ties broken by the best rank in any list, then by id, so the order is deterministic."""
    return sorted(items.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.id))


# The RRF paper's constant, also LangChain's: this function's default, the naive baseline's and the offline
# policy's (its final ranking over all of a run's searches). The retriever's hybrid search uses its own
# ``RetrievalConfig.rrf_k`` (``config.DEFAULT_RRF_K`` = 20, measured there).
PAPER_RRF_K = 60


def rrf_contribution(rank: int, k: int = PAPER_RRF_K) -> float:
    """What an item at 1-based ``rank`` of one list adds to its RRF score: ``1 / (k + rank)``."""
    return 1.0 / (k + rank)


def rrf_fuse(rankings: Mapping[str, Ranking], k: int = PAPER_RRF_K) -> list[Fused]:
    """Reciprocal Rank Fusion of ``rankings`` with constant ``k`` (≥ 1)."""
    if k < 1:
        raise ValueError(f"RRF k must be at least 1, got {k}")
    _check_rankings(rankings)
    items: dict[str, Fused] = {}
    for name, ranking in rankings.items():
        for rank, (item_id, raw) in enumerate(ranking, start=1):
            item = items.setdefault(item_id, Fused(item_id, 0.0))
            contribution = rrf_contribution(rank, k)
            item.ranks[name] = rank
            item.scores[name] = float(raw)
            item.contributions[name] = contribution
            item.score += contribution
    return order_fused(items)


def min_max(scores: Sequence[float]) -> list[float]:
    """Scores scaled to [0, 1] by the list's min and max (all 1.0 when they are equal)."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high - low <= 1e-12:
        return [1.0] * len(scores)
    return [(s - low) / (high - low) for s in scores]


def weighted_fuse(rankings: Mapping[str, Ranking], weights: Mapping[str, float]) -> list[Fused]:
    """Convex combination of min-max normalised scores; ``weights`` (≥ 0, one per list) are scaled to sum 1."""
    _check_rankings(rankings)
    missing = set(rankings) - set(weights)
    if missing:
        raise ValueError(f"no weight for ranked list(s) {sorted(missing)}")
    if any(weights[name] < 0 for name in rankings):
        raise ValueError("fusion weights must be ≥ 0")
    total = sum(weights[name] for name in rankings)
    if total <= 0:
        raise ValueError("at least one fusion weight must be > 0")
    items: dict[str, Fused] = {}
    for name, ranking in rankings.items():
        weight = weights[name] / total
        normalised = min_max([float(raw) for _, raw in ranking])
        for rank, ((item_id, raw), norm) in enumerate(zip(ranking, normalised, strict=True), start=1):
            item = items.setdefault(item_id, Fused(item_id, 0.0))
            item.ranks[name] = rank
            item.scores[name] = float(raw)
            item.contributions[name] = weight * norm
            item.score += weight * norm
    return order_fused(items)


def hybrid_weights(vector_weight: float) -> dict[str, float]:
    """The two-list weights for a ``hybrid_weight`` (the vector share) in [0, 1]."""
    if not 0.0 <= vector_weight <= 1.0:
        raise ValueError(f"hybrid weight must be in [0, 1], got {vector_weight}")
    return {"vector": vector_weight, "keyword": 1.0 - vector_weight}
