import pytest

from rag_core.retrieval.fusion import hybrid_weights, min_max, rrf_fuse, weighted_fuse


def test_rrf_scores_ranks_and_contributions():
    fused = rrf_fuse({"vector": [("a", 0.9), ("b", 0.8)], "keyword": [("b", 12.0), ("c", 3.0)]}, k=60)
    assert [f.id for f in fused] == ["b", "a", "c"]
    b = fused[0]
    assert b.score == pytest.approx(1 / 62 + 1 / 61)
    assert b.ranks == {"vector": 2, "keyword": 1}
    assert b.scores == {"vector": 0.8, "keyword": 12.0}
    assert b.contributions["keyword"] == pytest.approx(1 / 61)


def test_rrf_k_changes_the_order_of_agreement_versus_a_single_top_rank():
    rankings = {"vector": [("x", 1.0), ("a", 0.9), ("b", 0.8), ("z", 0.7)],
                "keyword": [("c", 5.0), ("d", 4.0), ("e", 3.0), ("z", 2.0)]}
    # Small k: first places win (the tie of c and x is broken by id); large k: agreement of both lists wins.
    assert [f.id for f in rrf_fuse(rankings, k=1)][:3] == ["c", "x", "z"]
    assert rrf_fuse(rankings, k=60)[0].id == "z"


def test_rrf_validates_input():
    with pytest.raises(ValueError, match="at least 1"):
        rrf_fuse({"vector": [("a", 1.0)]}, k=0)
    with pytest.raises(ValueError, match="twice"):
        rrf_fuse({"vector": [("a", 1.0), ("a", 0.5)]})
    with pytest.raises(ValueError, match="nothing to fuse"):
        rrf_fuse({})


def test_min_max():
    assert min_max([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max([7.0, 7.0]) == [1.0, 1.0]
    assert min_max([]) == []


def test_weighted_fusion_is_a_convex_combination_of_normalised_scores():
    rankings = {"vector": [("a", 0.9), ("b", 0.5), ("c", 0.1)], "keyword": [("c", 10.0), ("b", 5.0)]}
    fused = weighted_fuse(rankings, hybrid_weights(0.75))
    by_id = {f.id: f for f in fused}
    assert by_id["a"].score == pytest.approx(0.75 * 1.0)
    assert by_id["b"].score == pytest.approx(0.75 * 0.5 + 0.25 * 0.0)
    assert by_id["c"].score == pytest.approx(0.75 * 0.0 + 0.25 * 1.0)
    assert [f.id for f in fused] == ["a", "b", "c"]
    assert weighted_fuse(rankings, hybrid_weights(0.0))[0].id == "c"


def test_weighted_fusion_validates_weights():
    with pytest.raises(ValueError, match="no weight"):
        weighted_fuse({"vector": [("a", 1.0)], "keyword": [("b", 1.0)]}, {"vector": 1.0})
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        hybrid_weights(1.5)
