"""The trial a study puts forward: the fewest knobs moved within one standard error of the top tuning score."""

from __future__ import annotations

import math

from rag_core.tuning.choose import Candidate, moved_knobs, paired_se, simplest_within_noise


def _scores(values: list[float]) -> dict[str, float]:
    return {f"q{i}": v for i, v in enumerate(values)}


def test_a_simpler_trial_within_noise_of_the_top_one_is_put_forward():
    # The top trial (7 knobs moved) and a one-knob trial disagree on 10 of 40 questions, 6 to 4: a gain of 0.05 with
    # a paired standard error of 0.08, within noise. The current configuration loses 12 places and wins none.
    top = Candidate(3, 0.55, _scores([1.0] * 6 + [0.0] * 4 + [1.0] * 16 + [0.0] * 14), moved=7)
    simple = Candidate(5, 0.50, _scores([0.0] * 6 + [1.0] * 4 + [1.0] * 16 + [0.0] * 14), moved=1)
    current = Candidate(0, 0.25, _scores([0.0] * 10 + [1.0] * 10 + [0.0] * 20), moved=0)
    assert 0.05 < paired_se(top.scores, simple.scores) < 0.09
    choice = simplest_within_noise([top, simple, current])
    assert choice.top == 3 and choice.chosen == 5
    assert "within one standard error" in choice.why and "trial 3" in choice.why


def test_a_gain_on_many_questions_is_not_noise():
    # The top trial finds 12 more places of 40 and loses none: the current configuration is 6 standard errors off.
    top = Candidate(2, 0.75, _scores([1.0] * 30 + [0.0] * 10), moved=2)
    current = Candidate(0, 0.45, _scores([1.0] * 18 + [0.0] * 22), moved=0)
    # One knob: 4 places fewer and 2 more than the top trial, a loss of 0.05 with a standard error of 0.06.
    one_knob = Candidate(1, 0.70, _scores([0.0] * 4 + [1.0] * 26 + [1.0] * 2 + [0.0] * 8), moved=1)
    choice = simplest_within_noise([current, one_knob, top])
    assert choice.top == 2 and choice.chosen == 1  # within one SE; one knob instead of two
    assert simplest_within_noise([current, top]).chosen == 2
    assert "no trial moving fewer knobs" in simplest_within_noise([current, top]).why


def test_equal_moves_prefer_the_higher_score_then_fewer_tokens():
    same = _scores([1.0, 0.0, 1.0, 0.0])
    a = Candidate(1, 0.5, same, moved=1, tokens=900)
    b = Candidate(2, 0.5, same, moved=1, tokens=700)
    assert simplest_within_noise([a, b]).chosen == 2
    assert simplest_within_noise([]) is None


def test_without_per_question_scores_only_a_tie_is_within_noise():
    top = Candidate(4, 0.60, {}, moved=5)
    assert simplest_within_noise([top, Candidate(0, 0.59, {}, moved=0)]).chosen == 4
    assert simplest_within_noise([top, Candidate(0, 0.60, {}, moved=0)]).chosen == 0
    assert math.isinf(paired_se({"q": 1.0}, {"q": 0.0}))


def test_moved_knobs_compares_floats_to_four_decimals():
    current = {"retrieval.initial_k": 5, "retrieval.min_confidence": 0.7, "chunking.strategy": "structure"}
    assert moved_knobs({"retrieval.initial_k": 5, "retrieval.min_confidence": 0.70000001,
                        "chunking.strategy": "structure"}, current) == 0
    assert moved_knobs({"retrieval.initial_k": 6, "retrieval.min_confidence": 0.71,
                        "chunking.strategy": "fixed", "retrieval.rrf_k": 60}, current) == 4
