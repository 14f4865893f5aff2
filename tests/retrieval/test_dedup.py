import numpy as np
import pytest

from rag_core.retrieval.dedup import dedup_hits


def _embed_by_table(table):
    def embed(texts):
        return np.asarray([table[t] for t in texts], dtype=np.float32)

    return embed


def test_near_duplicates_are_dropped_and_tokens_saved(make_chunk, make_hit):
    a = make_chunk("a", "alpha text")
    b = make_chunk("b", "alpha text again", doc_id="d2")
    c = make_chunk("c", "something else", doc_id="d3")
    table = {"alpha text": [1.0, 0.0], "alpha text again": [0.9, np.sqrt(1 - 0.81)], "something else": [0.0, 1.0]}
    kept, report = dedup_hits([make_hit(a, 3), make_hit(b, 2), make_hit(c, 1)], _embed_by_table(table), 0.85)
    assert [h.chunk.id for h in kept] == ["a", "c"]
    assert [(d.chunk_id, d.duplicate_of) for d in report.dropped] == [("b", "a")]
    assert report.dropped[0].similarity == pytest.approx(0.9, abs=1e-6)
    assert report.tokens_saved == b.tokens
    assert report.kept == 2


def test_threshold_is_inclusive_and_configurable(make_chunk, make_hit):
    a, b = make_chunk("a", "x"), make_chunk("b", "y", doc_id="d2")
    table = {"x": [1.0, 0.0], "y": [0.8, 0.6]}
    kept, _ = dedup_hits([make_hit(a, 2), make_hit(b, 1)], _embed_by_table(table), 0.8)
    assert [h.chunk.id for h in kept] == ["a"]
    kept, _ = dedup_hits([make_hit(a, 2), make_hit(b, 1)], _embed_by_table(table), 0.81)
    assert [h.chunk.id for h in kept] == ["a", "b"]


def test_chunk_inside_a_selected_parent_is_dropped(make_chunk, make_hit):
    section = make_chunk("s", "Install. Run pip install. Then init.", granularity="section", start=0)
    child = make_chunk("p", "Run pip install.", start=9, parent_id="s")
    spanned = make_chunk("q", "Then init.", start=26, end=36)
    kept, report = dedup_hits([make_hit(section, 3), make_hit(child, 2), make_hit(spanned, 1)], None)
    assert [h.chunk.id for h in kept] == ["s"]
    assert [d.reason for d in report.dropped] == ["contained in selected section s"] * 2


def test_previous_context_counts_as_selected_but_is_not_returned(make_chunk, make_hit):
    held = make_chunk("held", "x")
    new = make_chunk("new", "x again", doc_id="d2")
    table = {"x": [1.0, 0.0], "x again": [1.0, 0.0]}
    kept, report = dedup_hits([make_hit(new, 1)], _embed_by_table(table), 0.85, previous=[held])
    assert kept == []
    assert report.dropped[0].duplicate_of == "held"


def test_bad_threshold_is_refused(make_chunk, make_hit):
    with pytest.raises(ValueError, match="threshold"):
        dedup_hits([], None, 0.0)
