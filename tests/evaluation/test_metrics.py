import math

import pytest

from rag_core.evaluation.metrics import evaluate_run, hit_at_k, mrr, ndcg_at_k, precision_at_k, recall_at_k

RANKED = ["d3", "d1", "d7", "d2", "d9"]
RELEVANT = {"d1", "d2", "d5"}


def test_hit_at_k():
    assert hit_at_k(RANKED, RELEVANT, 1) == 0.0
    assert hit_at_k(RANKED, RELEVANT, 2) == 1.0
    assert hit_at_k([], RELEVANT, 5) == 0.0


def test_recall_at_k_counts_every_relevant_document():
    assert recall_at_k(RANKED, RELEVANT, 1) == 0.0
    assert recall_at_k(RANKED, RELEVANT, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, RELEVANT, 5) == pytest.approx(2 / 3)
    assert recall_at_k(RANKED, set(), 5) == 0.0


def test_duplicates_in_the_ranking_earn_nothing_twice():
    assert recall_at_k(["d1", "d1", "d1"], {"d1", "d2"}, 3) == 0.5
    assert precision_at_k(["d1", "d1", "x"], {"d1", "d2"}, 2) == 0.5


def test_mrr_and_mrr_at_k():
    assert mrr(RANKED, RELEVANT) == 0.5
    assert mrr(RANKED, {"d9"}) == 0.2
    assert mrr(RANKED, {"d9"}, k=4) == 0.0
    assert mrr(RANKED, {"zz"}) == 0.0


def test_ndcg_hand_computed():
    # gains at ranks 2 and 4; ideal puts the three relevant documents at ranks 1..3
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(RANKED, RELEVANT, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["d1"], {"d1"}, 10) == 1.0
    assert ndcg_at_k(["x", "d1"], {"d1"}, 1) == 0.0


def test_ndcg_graded_relevance_uses_linear_gains():
    ranked = ["a", "b"]
    grades = {"a": 1, "b": 2, "c": 0}
    dcg = 1 + 2 / math.log2(3)
    idcg = 2 + 1 / math.log2(3)
    assert ndcg_at_k(ranked, grades, 10) == pytest.approx(dcg / idcg)


def test_bad_k_is_rejected_with_a_clear_message():
    with pytest.raises(ValueError, match="k must be ≥ 1"):
        hit_at_k(RANKED, RELEVANT, 0)


def test_evaluate_run_averages_judged_queries_only():
    run = {"q1": ["a", "b"], "q2": ["c", "x"]}
    qrels = {"q1": {"b": 1}, "q2": {"c": 1, "d": 1}, "q3": {"e": 0}}
    scores = evaluate_run(run, qrels, ks=(1, 2))
    assert scores["queries"] == 2.0
    assert scores["hit@1"] == 0.5
    assert scores["recall@2"] == pytest.approx((1 + 0.5) / 2)
    assert scores["mrr@2"] == pytest.approx((0.5 + 1) / 2)
    with pytest.raises(ValueError, match="no query has a relevant document"):
        evaluate_run(run, {"q3": {"e": 0}})
