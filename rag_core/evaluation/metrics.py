"""Ranking metrics as pure functions over a ranked list of ids and the relevance judgements of one query.

``relevant`` is either a collection of relevant ids (binary relevance) or a mapping id → graded relevance
(ids with a grade ≤ 0 are not relevant). Definitions follow trec_eval so that figures compare with published
BEIR numbers: nDCG uses linear gains ``rel / log2(rank + 1)`` and the ideal ranking of all judged relevant ids;
recall divides by every relevant id, retrieved or not; reciprocal rank is of the first relevant id.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

Relevance = Collection[str] | Mapping[str, float]


def _grades(relevant: Relevance) -> dict[str, float]:
    if isinstance(relevant, Mapping):
        return {doc_id: float(grade) for doc_id, grade in relevant.items() if grade > 0}
    return {doc_id: 1.0 for doc_id in relevant}


def _check_k(k: int | None) -> None:
    if k is not None and k < 1:
        raise ValueError(f"k must be ≥ 1 (got {k})")


def _top(ranked: Sequence[str], k: int | None) -> list[str]:
    """The first ``k`` ids, each counted once (a repeated id later in the list earns nothing)."""
    _check_k(k)
    seen: set[str] = set()
    top: list[str] = []
    for doc_id in ranked:
        if doc_id in seen:
            continue
        seen.add(doc_id)
        top.append(doc_id)
        if k is not None and len(top) == k:
            break
    return top


def hit_at_k(ranked: Sequence[str], relevant: Relevance, k: int) -> float:
    """1.0 when any relevant id is in the top ``k``, else 0.0."""
    grades = _grades(relevant)
    return 1.0 if any(doc_id in grades for doc_id in _top(ranked, k)) else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Relevance, k: int) -> float:
    """Share of the relevant ids found in the top ``k`` (0.0 when nothing is relevant)."""
    grades = _grades(relevant)
    if not grades:
        return 0.0
    found = sum(1 for doc_id in _top(ranked, k) if doc_id in grades)
    return found / len(grades)


def precision_at_k(ranked: Sequence[str], relevant: Relevance, k: int) -> float:
    """Relevant ids in the top ``k`` divided by ``k`` (trec_eval's P@k)."""
    grades = _grades(relevant)
    found = sum(1 for doc_id in _top(ranked, k) if doc_id in grades)
    return found / k


def mrr(ranked: Sequence[str], relevant: Relevance, k: int | None = None) -> float:
    """Reciprocal rank of the first relevant id (within the top ``k`` when given: MRR@k), else 0.0."""
    grades = _grades(relevant)
    for rank, doc_id in enumerate(_top(ranked, k), start=1):
        if doc_id in grades:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(ranked: Sequence[str], relevant: Relevance, k: int = 10) -> float:
    """Normalised discounted cumulative gain at ``k`` with linear gains (0.0 when nothing is relevant)."""
    grades = _grades(relevant)
    if not grades:
        return 0.0
    dcg = sum(grades.get(doc_id, 0.0) / math.log2(rank + 1) for rank, doc_id in enumerate(_top(ranked, k), start=1))
    ideal = sorted(grades.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 1) for rank, grade in enumerate(ideal, start=1))
    return dcg / idcg


def mean(values: Sequence[float]) -> float:
    """Arithmetic mean, 0.0 for an empty sequence."""
    return sum(values) / len(values) if values else 0.0


def evaluate_run(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Relevance], ks: Sequence[int] = (10,)
) -> dict[str, float]:
    """Mean nDCG@k, Recall@k, MRR@k and Hit@k over the queries of ``qrels`` (a query absent from ``run`` scores 0).

    Queries without any relevant id are skipped, as trec_eval does.
    """
    judged = [qid for qid, rel in qrels.items() if _grades(rel)]
    if not judged:
        raise ValueError("no query has a relevant document in the judgements")
    scores: dict[str, float] = {}
    for k in ks:
        _check_k(k)
        ranked_lists = [(run.get(qid, ()), qrels[qid]) for qid in judged]
        scores[f"ndcg@{k}"] = mean([ndcg_at_k(r, rel, k) for r, rel in ranked_lists])
        scores[f"recall@{k}"] = mean([recall_at_k(r, rel, k) for r, rel in ranked_lists])
        scores[f"mrr@{k}"] = mean([mrr(r, rel, k) for r, rel in ranked_lists])
        scores[f"hit@{k}"] = mean([hit_at_k(r, rel, k) for r, rel in ranked_lists])
    scores["queries"] = float(len(judged))
    return scores
