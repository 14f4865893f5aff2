"""bench tune's verdict rule: a significant gain must be a human gain; "keep" is right when humans see none."""

from __future__ import annotations

from types import SimpleNamespace

from bench.tune import agreement, place_recall


def _row(significant: bool, human_gain: float):
    return {"result": SimpleNamespace(significant=significant), "human": {1500: {"gain": human_gain}}}


def test_agreement_of_the_tool_and_the_human_set():
    assert agreement(_row(True, 0.02), 1500) == "yes"
    assert agreement(_row(True, -0.01), 1500) == "no"
    assert agreement(_row(False, 0.005), 1500) == "yes (keep)"
    assert agreement(_row(False, 0.05), 1500) == "no (missed a gain)"


def test_place_recall_counts_places_not_questions():
    assert place_recall([("a", 1, 1), ("b", 1, 3)]) == 0.5
    assert place_recall([]) == 0.0
