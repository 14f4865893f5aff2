"""The split by document (disjoint, seeded) and the proof on validation (significant or keep)."""

from __future__ import annotations

import pytest

from rag_core.evaluation.questions import Question
from rag_core.tuning.proof import KEEP, compare_paired, paired_interval, recommendation
from rag_core.tuning.split import document_of, split_by_document


def _questions(docs: int = 10, per_doc: int = 3) -> list[Question]:
    return [Question(id=f"d{d}-{i}", question=f"question {d} {i}",
                     evidence=[{"file": f"doc{d}.md", "heading_path": [], "spans": [f"span {d} {i}"]}])
            for d in range(docs) for i in range(per_doc)] + [Question(id="null-1", question="?", type="null")]


def test_split_is_by_document_disjoint_and_seeded():
    questions = _questions()
    tuning, validation = split_by_document(questions, seed=3)
    assert {document_of(q) for q in tuning}.isdisjoint({document_of(q) for q in validation})
    assert len(tuning) + len(validation) == len(questions)
    assert 0.2 <= len(validation) / len(questions) <= 0.4
    again = split_by_document(questions, seed=3)
    assert [q.id for q in again[1]] == [q.id for q in validation]
    others = {tuple(q.id for q in split_by_document(questions, seed=s)[1]) for s in range(6)}
    assert len(others) > 1  # the seed decides which documents are held out


def test_split_needs_two_documents():
    with pytest.raises(ValueError, match="at least two"):
        split_by_document(_questions(docs=1)[:-1])


def test_no_gain_is_not_significant_and_keeps_the_current_configuration():
    same = {f"q{i}": 0.5 for i in range(30)}
    result = compare_paired("place_recall", same, dict(same), {"quality": 0.5}, {"quality": 0.5})
    assert result.gain == 0.0 and not result.significant and result.p_value == 1.0
    assert recommendation(result) == KEEP


def test_a_small_noisy_gain_is_not_significant():
    current = {f"q{i}": 0.0 for i in range(30)}
    best = {**current, "q0": 1.0}  # one question of thirty changed: gain 0.033, p = 0.5
    result = compare_paired("place_recall", current, best, {}, {})
    assert result.gain == pytest.approx(0.0333, abs=1e-4) and not result.significant
    assert recommendation(result) == KEEP


def test_a_consistent_gain_is_significant_with_an_interval_above_zero():
    current = {f"q{i}": 0.0 for i in range(30)}
    best = {q: (1.0 if i % 3 else 0.0) for i, q in enumerate(current)}
    result = compare_paired("place_recall", current, best, {}, {})
    assert result.significant and result.p_value < 0.05
    assert 0.0 < result.interval[0] <= result.gain <= result.interval[1]
    assert recommendation(result, "tuned").startswith("use the tuned configuration (saved as 'tuned')")


def test_interval_is_seeded():
    assert paired_interval([0.1, -0.2, 0.3, 0.0]) == paired_interval([0.1, -0.2, 0.3, 0.0])


def test_a_spec_needs_an_end():
    from rag_core.tuning import TuneSpec

    with pytest.raises(ValueError, match="needs an end"):
        TuneSpec(collection="docs", minutes=None, trials=None)
    assert TuneSpec(collection="docs", minutes=None, trials=3).trials == 3
