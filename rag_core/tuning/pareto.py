"""The Pareto front of trials: quality (higher is better) against context tokens and latency (lower is better)."""

from __future__ import annotations

from collections.abc import Sequence


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """``a`` (quality, tokens, latency) is at least as good as ``b`` everywhere and better somewhere."""
    at_least = a[0] >= b[0] and all(x <= y for x, y in zip(a[1:], b[1:], strict=True))
    better = a[0] > b[0] or any(x < y for x, y in zip(a[1:], b[1:], strict=True))
    return at_least and better


def pareto_front(points: Sequence[Sequence[float]]) -> list[int]:
    """Indexes of the points no other point dominates, best quality first."""
    front = [i for i, p in enumerate(points) if not any(dominates(q, p) for j, q in enumerate(points) if j != i)]
    return sorted(front, key=lambda i: (-points[i][0], *points[i][1:]))
