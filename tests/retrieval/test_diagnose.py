import pytest

from rag_core.config import RetrievalConfig
from rag_core.retrieval.diagnose import explain_missing, find_chunks
from rag_core.retrieval.retriever import Retriever


def _run(index, query, exclude=(), **config):
    retriever = Retriever(index, RetrievalConfig(**config))
    return retriever, retriever.retrieve(query, exclude_ids=exclude)


def test_included_chunk(fake_index):
    retriever, result = _run(fake_index, "request timeout cancelled", strategy="keyword", min_confidence=0.0)
    why = explain_missing(retriever, result, "p-config")
    assert why.removed_by is None and why.verdict == "retrieved and in the context"
    assert why.ranks["keyword"] == 1 and why.ranks["vector"] == 1 and why.ranks["fused"] == 1
    k = retriever.config.rrf_k
    assert why.rrf_contributions == {"vector": pytest.approx(1 / (k + 1)), "keyword": pytest.approx(1 / (k + 1))}
    assert [c.step for c in why.checks] == ["exclude", "filter", "rank", "threshold", "dedup", "budget"]


def test_removed_by_filter(fake_index):
    retriever, result = _run(fake_index, "show me the code for the request timeout", strategy="keyword",
                             min_confidence=0.0, use_intent_filter=True)
    why = explain_missing(retriever, result, "p-config")
    assert why.removed_by == "filter"
    assert "chunk type 'prose' not in ['code']" in why.verdict


def test_removed_by_rank(fake_index):
    retriever, result = _run(fake_index, "timeout", strategy="keyword", min_confidence=0.0, initial_k=1,
                             granularity="any")
    missing = next(c.id for c in fake_index.chunks() if c.id not in {h.chunk.id for h in result.hits}
                   and "timeout" in c.text)
    why = explain_missing(retriever, result, missing)
    assert why.removed_by == "rank"
    assert "the last pass kept the top 1" in why.verdict


def test_removed_by_threshold_dedup_exclude_and_budget(fake_index):
    retriever, result = _run(fake_index, "timeout jobs", strategy="keyword", granularity="any", min_score=0.9,
                             max_iterations=1, initial_k=6, use_intent_filter=False)
    low = result.iterations[0].below_min_score[0].chunk_id
    assert explain_missing(retriever, result, low).removed_by == "threshold"

    retriever, result = _run(fake_index, "guide section install package timeout jobs client", strategy="keyword",
                             granularity="any", min_confidence=0.0, initial_k=6, use_intent_filter=False)
    why = explain_missing(retriever, result, "p-install")
    assert why.removed_by == "same place" and "overlaps section s-guide" in why.verdict

    retriever, result = _run(fake_index, "timeout", exclude=["p-config"], strategy="keyword", min_confidence=0.0)
    assert explain_missing(retriever, result, "p-config", exclude_ids=["p-config"]).removed_by == "exclude"



def test_removed_by_budget(make_index, make_chunk):
    index = make_index([make_chunk(f"long{i}", f"timeout story {i}: " + "lorem ipsum dolor " * 60, doc_id=f"d{i}")
                        for i in range(3)])
    retriever, result = _run(index, "timeout story", strategy="keyword", min_confidence=0.0, token_budget=300,
                             dedup_threshold=1.0)
    assert [h.chunk.id for h in result.hits] == ["long0", "long1", "long2"]
    assert result.context.dropped[0]["chunk_id"] == "long2"
    why = explain_missing(retriever, result, "long2")
    assert why.removed_by == "budget"
    assert "token budget of 300 exhausted" in why.verdict
    assert "truncated to" in explain_missing(retriever, result, "long1").checks[-1].detail


def test_find_chunks_and_unknown_id(fake_index):
    assert [c.id for c in find_chunks(fake_index, "TIMEOUT setting")] == ["p-config"]
    assert [c.id for c in find_chunks(fake_index, "plans")] == ["t-limits"]  # heading match
    assert find_chunks(fake_index, "  ") == []
    retriever, result = _run(fake_index, "timeout", strategy="keyword")
    with pytest.raises(ValueError, match="no chunk 'nope'"):
        explain_missing(retriever, result, "nope")


@pytest.mark.parametrize("config", [{"fusion": "weighted", "hybrid_weight": 1.0}, {"section_weight": 2.0},
                                    {"fusion": "rrf"}])
def test_the_verdict_and_the_table_say_one_rank(fake_index, config):
    """Issue 35.5: the banner said "rank 7 under hybrid" while the table said fused rank 1 (plain RRF over the raw
    lists beside the configured fusion over collapsed places)."""
    import re

    retriever, result = _run(fake_index, "request timeout jobs", strategy="hybrid", min_confidence=0.0, initial_k=1,
                             granularity="any", use_intent_filter=False, **config)
    compared = 0
    for chunk in fake_index.chunks():
        why = explain_missing(retriever, result, chunk.id)
        step = next((c for c in why.checks if c.step == "rank"), None)
        said = re.match(r"rank (\d+) under hybrid", step.detail) if step else None
        if said:
            compared += 1
            assert int(said.group(1)) == why.ranks["fused"], (chunk.id, step.detail, why.ranks)
            assert why.to_dict()["rank"] == why.ranks["fused"]
    assert compared >= 3
