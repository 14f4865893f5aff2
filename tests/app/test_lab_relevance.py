"""Retrieval Lab: the relevance shown is what it says (keyword search is rank only), the hits keep the retrieval
order, links read as their text, and engineer details sit behind one toggle."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, RetrievalConfig
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from rag_core.types import Chunk, Hit
from tests.app.apptest_helpers import page_app
from ui.retrieval import hits as hit_view

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "retrieval_lab.py")
CONFIG = RAGConfig(name="lab-relevance", embedding=EmbeddingConfig(embedder="hash"))
KEYWORD = CONFIG.model_copy(update={"retrieval": RetrievalConfig(strategy="keyword")})

# "Publish package" is asked; the off-topic changelog line repeats both words, so BM25 ranks it and every term
# is "covered": the old page showed it with relevance 1.00.
GUIDE = """# Packaging guide

## Publishing

To publish a package, run `pkg publish` with a token; see [the token guide](../../concepts/tokens.md#pat) and
the [registry settings][REG].

[REG]: ../../reference/registry.md

## Changelog

Package publish package publish: renamed the internal publish-package helper (no user change).
"""


@pytest.fixture
def indexed(data_dir):
    open_index(CONFIG).ingest([load_bytes("guide.md", GUIDE.encode())])


def _search(config: RAGConfig, query: str, **session):
    at = page_app(PAGE, config, **session)
    at.run()
    at.text_input(key="lab_query").input(query)
    next(b for b in at.button if b.label == "Search").click()
    at.run()
    assert not at.exception
    return at


def test_keyword_hits_are_rank_only_not_a_confidence(indexed):
    at = _search(KEYWORD, "publish package")
    hits = at.dataframe[0].value
    assert "relevance" not in hits.columns
    assert list(hits.columns[:2]) == ["#", "query terms"]
    assert hits["query terms"].iloc[0] == "2 of 2 query terms"
    labels = [m.label for m in at.metric]
    assert "Confidence" not in labels and "Query terms found (top 3)" in labels
    assert any("rank only" in c.value for c in at.caption)
    cards = "".join(h.proto.body for h in at.get("html"))
    assert "rank only" in cards and "<b>1.00</b>" not in cards


def test_hits_keep_the_retrieval_order_with_and_without_engineer_details(indexed):
    from rag_core.config import get_settings
    from rag_core.retrieval.retriever import Retriever

    expected = [h.chunk.heading for h in Retriever(open_index(CONFIG, get_settings()), CONFIG.retrieval,
                                                   get_settings()).retrieve("publish a package").hits]
    plain = _search(CONFIG, "publish a package").dataframe[0].value
    engineer = _search(CONFIG, "publish a package", engineer_details=True).dataframe[0].value
    assert list(plain["heading"]) == list(engineer["heading"]) == expected
    assert list(plain["#"]) == list(range(1, len(expected) + 1))


def test_engineer_details_sit_behind_one_toggle(indexed):
    at = _search(CONFIG, "publish a package")
    hits = at.dataframe[0].value
    assert not {"chunk id", "fused raw", "vector rank", "granularity"} & set(hits.columns)
    assert len(at.dataframe) == 1  # no iterations table
    shown = " ".join([*(c.value for c in at.caption), *(t.value for t in at.text), *(m.value for m in at.markdown)])
    assert "RRF" not in shown and "tokens saved" not in shown
    assert "raw: " not in "".join(h.proto.body for h in at.get("html"))
    assert not at.get("plotly_chart")

    at.toggle(key="engineer_details").set_value(True).run()
    assert not at.exception
    hits = at.dataframe[0].value
    assert {"chunk id", "fused raw", "vector rank", "granularity"} <= set(hits.columns)
    assert "iteration" in at.dataframe[1].value.columns
    assert "raw: " in "".join(h.proto.body for h in at.get("html"))
    assert any("RRF" in c.value for c in at.caption)


def test_links_in_hits_read_as_their_text(indexed):
    at = _search(CONFIG, "publish a package token")
    cards = "".join(h.proto.body for h in at.get("html"))
    assert "the <mark>token</mark> guide" in cards and "registry settings" in cards
    assert "concepts/tokens.md" not in cards and "[REG]" not in cards and "reference/registry.md" not in cards
    text = " ".join(at.dataframe[0].value["text"])
    assert "tokens.md" not in text and "[REG]" not in text


def _hit(confidence: float, **ranks: int) -> Hit:
    chunk = Chunk(id="c" * 16, doc_id="d", granularity="paragraph", chunk_type="prose", text="publish the package",
                  start=0, end=19, tokens=3)
    return Hit(chunk=chunk, score=0.0, confidence=confidence, ranks=ranks)


def test_relevance_note_says_when_the_list_is_not_in_relevance_order():
    class Result:
        hits = [_hit(0.73, fused=1, vector=2), _hit(0.92, fused=2, vector=1)]

    assert not hit_view.in_relevance_order(Result.hits)
    assert "listed in the order the search ranked them" in hit_view.relevance_note(Result)
    Result.hits = Result.hits[::-1]
    assert hit_view.in_relevance_order(Result.hits)
    assert hit_view.relevance_note(Result).endswith("hits are listed by it.")
    assert hit_view.rank_only(_hit(1.0, keyword=1)) and not hit_view.rank_only(_hit(1.0, fused=1, keyword=1))
