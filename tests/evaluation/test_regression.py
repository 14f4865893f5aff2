"""The regression rule: a drop below the baseline is a regression only when it is large enough and not chance."""

from __future__ import annotations

import itertools

import pytest

from rag_core.evaluation.regression import MIN_DROP, compare, sign_flip_p
from rag_core.evaluation.results import ResultsStore, find_regressions
from rag_core.evaluation.runner import EvalRun


def _run(run_id: str, scores: list[float], metric: str = "mrr") -> EvalRun:
    records = [{"question_id": f"q{i}", "question": f"Q{i}?", "intent": "fact", "config": "c", "strategy": "hybrid",
                "metrics": {metric: score}, "context_tokens": 1, "steps": 1, "latency_ms": 1.0}
               for i, score in enumerate(scores)]
    return EvalRun(id=run_id, created="2026-01-01T00:00:00+00:00", question_set={"name": "golden"}, configs=[],
                   strategies=["hybrid"], records=records, status="complete")


def test_sign_flip_p_is_exact_for_few_changed_questions():
    assert sign_flip_p([-1, -1, -1, -1, -1]) == 1 / 32  # only "all five down" is as low
    assert sign_flip_p([-1, -1, -1] + [0.0] * 50) == 1 / 8  # unchanged questions carry no evidence
    assert sign_flip_p([]) == 1.0 and sign_flip_p([0.0, 0.0]) == 1.0
    assert sign_flip_p([0.5, 0.5]) == 1.0  # an improvement is never a drop
    # brute force over every sign assignment of a mixed set
    diffs = [-0.5, 0.25, -0.2, -0.1]
    totals = [sum(s * abs(d) for s, d in zip(signs, diffs, strict=True))
              for signs in itertools.product((-1, 1), repeat=len(diffs))]
    assert sign_flip_p(diffs) == pytest.approx(sum(t <= sum(diffs) + 1e-12 for t in totals) / len(totals))


def test_sign_flip_p_samples_many_changed_questions_reproducibly():
    diffs = [-1.0] * 14 + [1.0] * 6  # 20 changed: sampled, the same answer on every call
    p = sign_flip_p(diffs)
    assert p == sign_flip_p(diffs) and 0.03 < p < 0.09  # exact binomial tail P(X ≥ 14 of 20) = 0.0577
    assert sign_flip_p([-1.0] * 30) < 1e-3


def test_a_drop_of_a_thousandth_is_noise():
    """The issue's banner: mrr 0.811 → 0.810 over 60 questions, a few ranks moving either way."""
    before = [1.0, 0.5, 1 / 3] * 20
    after = list(before)
    after[0], after[1], after[2], after[3], after[4] = 0.5, 1.0, 0.5, 1 / 3, 0.94  # net -0.06 over 60 questions
    verdict = compare("mrr", sum(before) / 60, sum(after) / 60, {f"q{i}": s for i, s in enumerate(before)},
                      {f"q{i}": s for i, s in enumerate(after)})
    assert verdict.delta == pytest.approx(-0.001) and verdict.questions == 60
    assert not verdict.regression


def test_a_larger_drop_that_chance_explains_is_noise_and_a_consistent_one_is_a_regression():
    before = [1.0] * 20 + [0.0] * 20
    mixed = [0.0] * 3 + [1.0] * 17 + [1.0] * 2 + [0.0] * 18  # 3 lost, 2 gained: -0.025 ≥ MIN_DROP, p = 0.5
    lost = [0.0] * 8 + [1.0] * 12 + [0.0] * 20  # 8 lost, none gained: p = 1/256
    scores = lambda values: {f"q{i}": v for i, v in enumerate(values)}  # noqa: E731
    noise = compare("hit@5", 0.5, sum(mixed) / 40, scores(before), scores(mixed))
    assert -noise.delta >= MIN_DROP and noise.p_value == 0.5 and not noise.regression
    real = compare("hit@5", 0.5, sum(lost) / 40, scores(before), scores(lost))
    assert real.delta == -0.2 and real.p_value == pytest.approx(1 / 256, abs=1e-4) and real.regression


def test_a_significant_drop_smaller_than_the_minimum_is_not_a_regression():
    before, after = [0.5] * 200, [0.495] * 200  # every question slightly worse: p tiny, but only -0.005
    verdict = compare("ndcg@10", 0.5, 0.495, {f"q{i}": v for i, v in enumerate(before)},
                      {f"q{i}": v for i, v in enumerate(after)})
    assert verdict.p_value < 0.001 and not verdict.regression


def test_without_baseline_scores_the_unpaired_fallback_needs_a_drop_beyond_its_standard_error():
    current = {f"q{i}": v for i, v in enumerate([1.0, 0.0] * 20)}  # sd 0.51: SE of a difference ≈ 0.16
    assert not compare("hit@1", 0.6, 0.5, None, current).regression
    assert compare("hit@1", 0.9, 0.5, None, current).regression


def test_baselines_keep_per_question_scores_and_old_ones_read_their_run(tmp_path):
    store = ResultsStore(tmp_path)
    first, noisy, worse = _run("r1", [1.0] * 30), _run("r2", [0.0] + [1.0] * 29), _run("r3", [0.0] * 10 + [1.0] * 20)
    for run in (first, noisy, worse):
        store.save(run)
    store.set_baseline(first, "c", "hybrid")
    assert store.baselines()["golden|c|hybrid"]["scores"]["mrr"] == {f"q{i}": 1.0 for i in range(30)}
    assert store.regressions(noisy) == [] and [r["metric"] for r in store.below_baseline(noisy)] == ["mrr"]
    [row] = store.regressions(worse)
    assert (row["test"], row["questions"], row["delta"]) == ("paired sign-flip", 30, -0.3333)
    # A baseline kept before scores were stored: its run gives them while it is stored; then the fallback decides.
    old = {"golden|c|hybrid": {"run_id": "r1", "metrics": {"mrr": 1.0}}}
    assert find_regressions(worse, old, store.load)[0]["p_value"] < 0.01
    store.delete("r1")
    [fallback] = find_regressions(worse, old, store.load)
    assert fallback["p_value"] is None and fallback["test"] == "unpaired z"


def test_a_malformed_scores_entry_is_ignored_not_a_crash():
    baseline = {"golden|c|hybrid": {"run_id": "x", "metrics": {"mrr": 1.0}, "scores": {"mrr": ["not", "a", "map"]}}}
    [row] = find_regressions(_run("r", [0.0] * 10), baseline)
    assert row["test"] == "unpaired z"
