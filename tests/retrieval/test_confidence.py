import math

import pytest

from rag_core.retrieval.confidence import calibrate_confidence, cosine_params, result_confidence, vector_confidence
from rag_core.types import Chunk, Hit


def test_vector_confidence_is_a_logistic_centred_on_the_embedder_midpoint():
    assert cosine_params("minilm-l6-v2") == (0.49, 0.065)
    assert cosine_params("hash-384") == (0.32, 0.13)
    assert cosine_params("openai-text-embedding-3-small") == (0.35, 0.08)
    assert vector_confidence(0.49, "minilm-l6-v2") == pytest.approx(0.5)
    assert vector_confidence(0.32, "hash-384") == pytest.approx(0.5)
    assert vector_confidence(0.49 + 0.065, "minilm-l6-v2") == pytest.approx(1 / (1 + math.exp(-1)))
    assert vector_confidence(0.9, "minilm-l6-v2") > 0.99
    assert vector_confidence(0.0, "minilm-l6-v2") < 0.01
    assert vector_confidence(0.6, "minilm") > vector_confidence(0.5, "minilm")


def test_keyword_confidence_is_the_query_term_coverage():
    assert calibrate_confidence("keyword", coverage=0.5) == 0.5
    with pytest.raises(ValueError, match="coverage"):
        calibrate_confidence("keyword")


def test_hybrid_confidence_is_agreement():
    vector = vector_confidence(0.6, "minilm")
    assert calibrate_confidence("hybrid", cosine=0.6, coverage=1.0, embedder_id="minilm") == pytest.approx(
        (vector + 1.0) / 2)
    weighted = calibrate_confidence("hybrid", cosine=0.6, coverage=0.0, embedder_id="minilm", fusion="weighted",
                                    hybrid_weight=0.8)
    assert weighted == pytest.approx(0.8 * vector)


def test_unknown_strategy_names_the_allowed_ones():
    with pytest.raises(ValueError, match="vector"):
        calibrate_confidence("magic", cosine=0.3)


def _hit(confidence):
    return Hit(Chunk("c", "d", "paragraph", "prose", "t", 0, 1, 1), score=confidence, confidence=confidence)


def test_result_confidence_is_the_mean_of_the_top_three():
    assert result_confidence([]) == 0.0
    assert result_confidence([_hit(0.9)]) == pytest.approx(0.9)
    assert result_confidence([_hit(0.2), _hit(0.9), _hit(0.6), _hit(0.3)]) == pytest.approx((0.9 + 0.6 + 0.3) / 3)
