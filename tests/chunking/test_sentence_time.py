"""Sentence boundaries take time linear in the text, on prose and on long runs of end marks."""

from __future__ import annotations

import time

import pytest

from rag_core.chunking.sentences import sentence_spans


@pytest.mark.parametrize("unit", ["Ab cd. ", ".", "?!", "e.g. X. "])
def test_sentence_spans_are_linear(unit):
    text = unit * (40_000 // len(unit))
    started = time.perf_counter()
    sentence_spans(text, 0, len(text))
    assert time.perf_counter() - started < 1.5  # was 4-30 s at this size (quadratic)


def test_boundaries_are_unchanged_by_the_bounded_look_back():
    text = "Smith arrived... Then J. Doe left! See e.g. the notes. " + "A" * 100 + ". Next one."
    assert [text[s:e] for s, e in sentence_spans(text, 0, len(text))] == [
        "Smith arrived...", "Then J. Doe left!", "See e.g. the notes.", "A" * 100 + ".", "Next one."]
