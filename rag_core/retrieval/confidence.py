"""Confidence: one number in [0, 1] per hit, comparable across vector, keyword and hybrid retrieval.

Raw scores are not comparable: a cosine lives in [-1, 1] with a model-specific "relevant" range, BM25 is
unbounded and grows with query length, and an RRF score is a function of ranks only. Each is therefore mapped
to an estimate of "this chunk answers the query", and the gate of dynamic retrieval compares that estimate with
``min_confidence`` whatever the strategy.

* **vector**: ``σ((cos − μ) / τ)``, a logistic on the cosine. ``μ`` is the cosine at which a query–passage pair
  is as likely relevant as not, ``τ`` the spread. Both are fitted per embedder by class-balanced logistic
  regression of SciFact relevance judgments on the cosines of each judged query's top 50 documents
  (``python -m bench.latency --calibration-only``): MiniLM ``μ = 0.49, τ = 0.065`` (judged-relevant median
  cosine 0.611, all non-relevant 0.410); the hashing embedder only sees shared words and fits
  ``μ = 0.32, τ = 0.13``. Unknown embedders (e.g. OpenAI-compatible) use ``μ = 0.35, τ = 0.08``, not fitted.
  Cosine alone separates well from the bulk of a corpus but not from the best near-miss (SciFact's best
  non-relevant median is 0.569), which is why the result confidence averages several hits.
* **keyword**: BM25 has no fixed scale (it is not a similarity), so it only orders hits. The confidence is the
  query-term coverage of the chunk: the fraction of the query's distinct content terms (stop-words removed,
  stemmed as the BM25 index stems them) that occur in it, i.e. how much of what was asked the chunk contains.
* **hybrid**: agreement of the two retrievers. With RRF (rank-based, equal votes) it is the mean of the vector
  and keyword confidences, so it is high only when both agree; with weighted fusion it is the same convex
  combination as the scores, ``w · vector + (1 − w) · keyword``. A hit missing from the vector candidate list
  has a cosine at most the last candidate's (the vector search is exhaustive), and that bound is used.
* **result**: the mean confidence of the top three hits (fewer if fewer came back; 0 with none). One strong hit
  among weak ones is not enough context, and three is the design's starting k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rag_core.types import Hit

STRATEGIES: tuple[str, ...] = ("vector", "keyword", "hybrid", "web")
RESULT_TOP_N = 3

# (μ, τ) of the cosine logistic, by embedder id prefix.
COSINE_LOGISTIC: dict[str, tuple[float, float]] = {
    "minilm": (0.49, 0.065),
    "hash": (0.32, 0.13),
}
DEFAULT_COSINE_LOGISTIC = (0.35, 0.08)


def _logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def cosine_params(embedder_id: str) -> tuple[float, float]:
    """The (μ, τ) of the cosine logistic for an embedder id such as ``minilm-l6-v2`` or ``hash-384``."""
    key = (embedder_id or "").lower()
    for prefix, params in COSINE_LOGISTIC.items():
        if key.startswith(prefix):
            return params
    return DEFAULT_COSINE_LOGISTIC


def vector_confidence(cosine: float, embedder_id: str = "") -> float:
    """Calibrated confidence of a cosine similarity for the given embedder."""
    mu, tau = cosine_params(embedder_id)
    return _logistic((float(cosine) - mu) / tau)


def calibrate_confidence(
    strategy: str,
    *,
    cosine: float | None = None,
    coverage: float | None = None,
    embedder_id: str = "",
    fusion: str = "rrf",
    hybrid_weight: float = 0.5,
) -> float:
    """Confidence in [0, 1] of one hit under ``strategy`` from its cosine and/or query-term coverage."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}; choose from {list(STRATEGIES)}")
    if coverage is not None and not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage must be in [0, 1], got {coverage}")
    vector = None if cosine is None else vector_confidence(cosine, embedder_id)
    if strategy == "vector":
        if vector is None:
            raise ValueError("vector confidence needs the cosine")
        return vector
    if strategy in ("keyword", "web"):
        if coverage is None:
            raise ValueError(f"{strategy} confidence needs the query-term coverage")
        return float(coverage)
    if vector is None or coverage is None:
        raise ValueError("hybrid confidence needs both the cosine and the query-term coverage")
    if fusion == "rrf":
        return (vector + coverage) / 2.0
    if fusion == "weighted":
        if not 0.0 <= hybrid_weight <= 1.0:
            raise ValueError(f"hybrid weight must be in [0, 1], got {hybrid_weight}")
        return hybrid_weight * vector + (1.0 - hybrid_weight) * coverage
    raise ValueError(f"unknown fusion {fusion!r}; choose from ['rrf', 'weighted']")


def result_confidence(hits: Sequence[Hit], top_n: int = RESULT_TOP_N) -> float:
    """Confidence of a result list: mean confidence of its ``top_n`` most confident hits (0.0 when empty)."""
    if not hits:
        return 0.0
    best = sorted((h.confidence for h in hits), reverse=True)[:top_n]
    return sum(best) / len(best)
