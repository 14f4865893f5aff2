"""The load bench's row of searches during an ingest (issue 39.10): every search settles and both phases are
reported (a tiny run: the figures themselves are the bench's, not a timed test)."""

from __future__ import annotations

import pytest

from bench.load_ingest import corpus_documents, searches_during_ingest, table


@pytest.mark.slow
def test_searches_during_an_ingest_all_settle_and_are_tabled(tmp_path):
    row = searches_during_ingest(tmp_path, "hash", clients=2, files=4, per_client=1, seed_files=2)
    for phase in ("idle", "during"):
        assert row[phase]["searches"] >= 2 and row[phase]["settled"] == row[phase]["searches"]
        assert row[phase]["unsettled"] == 0
    text = table(row)
    assert "| ingest running |" in text and "| no job |" in text


@pytest.mark.slow
def test_corpus_documents_come_again_under_new_names_past_the_end():
    docs = corpus_documents(250)
    assert len({d.id for d in docs}) == 250 and docs[-1].name.startswith("copy1/")
