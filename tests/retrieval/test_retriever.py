import dataclasses
import json

import pytest

from rag_core.config import RetrievalConfig, Settings
from rag_core.index import Filters
from rag_core.retrieval.confidence import vector_confidence
from rag_core.retrieval.retriever import Retriever


def _retriever(index, settings=None, llm=None, **config):
    return Retriever(index, RetrievalConfig(**config), settings=settings, llm=llm)


def test_vector_hits_keep_rank_raw_score_and_calibrated_confidence(fake_index):
    result = _retriever(fake_index, strategy="vector", min_confidence=0.0).retrieve("request timeout setting")
    assert result.route == "vector" and result.route_reason == "strategy set to vector in the configuration"
    assert len(result.iterations) == 1
    top = result.hits[0]
    assert top.chunk.id == "p-config"
    assert top.ranks == {"vector": 1}
    assert top.confidence == pytest.approx(vector_confidence(top.scores["vector"], "hash-256"))
    assert top.source_name == "guide.md"
    assert result.iterations[0].k == 3
    assert result.iterations[0].filters == {"granularity": ["paragraph"], "chunk_types": "any"}


def test_low_confidence_relaxes_chunk_type_then_granularity_and_doubles_k(fake_index):
    result = _retriever(fake_index, strategy="keyword", min_confidence=1.0, use_intent_filter=True).retrieve(
        "show me the code for the timeout client")
    assert result.intent == "code"
    steps = [(it.k, it.filters["granularity"], it.filters["chunk_types"], it.decision) for it in result.iterations]
    assert steps == [
        (3, ["paragraph"], ["code"], "relax"),
        (6, ["paragraph"], "any", "relax"),
        (12, ["paragraph", "section"], "any", "stop"),
    ]
    assert "dropped the chunk-type filter ['code']" in result.iterations[0].decision_reason
    assert "max_iterations (3) reached" in result.iterations[-1].decision_reason
    assert all(it.elapsed_ms >= 0 for it in result.iterations)
    assert fake_index.calls[-1][3]["granularity"] == ["paragraph", "section"]  # sections searched once widened


def test_widens_k_when_no_filter_is_left_and_stops_at_max_k(fake_index):
    result = _retriever(fake_index, strategy="vector", granularity="any", use_intent_filter=False,
                        min_confidence=1.0, max_iterations=5, max_k=8).retrieve("timeout")
    assert [(it.k, it.decision) for it in result.iterations] == [(3, "widen"), (6, "widen"), (8, "stop")]
    assert "k is at max_k (8)" in result.iterations[-1].decision_reason


def test_confident_result_stops_after_one_pass(fake_index):
    result = _retriever(fake_index, strategy="keyword", min_confidence=0.5).retrieve("timeout request cancelled")
    assert [it.decision for it in result.iterations] == ["stop"]
    assert result.hits[0].chunk.id == "p-config"
    assert result.hits[0].confidence == 1.0  # every query term is in the chunk
    assert result.confidence >= 0.5


def test_hybrid_hits_have_ranks_of_both_retrievers_and_the_fused_rank(fake_index):
    result = _retriever(fake_index, strategy="hybrid", min_confidence=0.0).retrieve("timeout request")
    top = result.hits[0]
    assert top.chunk.id == "p-config"
    assert set(top.ranks) == {"vector", "keyword", "fused"} and top.ranks["fused"] == 1
    k = RetrievalConfig().rrf_k
    assert top.scores["fused"] == pytest.approx(1 / (k + top.ranks["vector"]) + 1 / (k + top.ranks["keyword"]))
    weighted = _retriever(fake_index, strategy="hybrid", fusion="weighted", hybrid_weight=1.0,
                          min_confidence=0.0).retrieve("timeout request")
    assert weighted.hits[0].score == pytest.approx(1.0)


def test_excluded_ids_are_not_returned(fake_index):
    retriever = _retriever(fake_index, strategy="keyword", min_confidence=0.0, granularity="any")
    first = retriever.retrieve("timeout")
    assert "p-config" in [h.chunk.id for h in first.hits]
    second = retriever.retrieve("timeout", exclude_ids=["p-config"])
    assert "p-config" not in [h.chunk.id for h in second.hits]
    assert fake_index.calls[-1][0] == "keyword"


def test_min_score_drops_hits_and_records_them(fake_index):
    result = _retriever(fake_index, strategy="keyword", min_score=0.9, max_iterations=1,
                        granularity="any").retrieve("timeout jobs")
    assert all(h.confidence >= 0.9 for h in result.hits)
    dropped = result.iterations[0].below_min_score
    assert dropped and all(d.step == "threshold" and d.confidence < 0.9 for d in dropped)


def test_auto_routes_and_context_is_formatted(fake_index):
    result = _retriever(fake_index, strategy="auto", min_confidence=0.0).retrieve(
        "Could you tell me about Client(timeout=30)?")
    assert result.rewritten_query == "Client(timeout=30)?"
    assert result.route == "keyword" and "code symbol" in result.route_reason
    assert result.context.text.startswith("--- Document 1 ---\n[Source: guide.md › Guide › Configuration]")
    json.dumps(result.to_dict())  # plain JSON all the way down


def test_overrides_are_validated(fake_index):
    retriever = _retriever(fake_index)
    assert retriever.retrieve("timeout", overrides={"strategy": "keyword"}).route == "keyword"
    with pytest.raises(ValueError, match="allowed"):
        retriever.retrieve("timeout", overrides={"top_k": 3})
    with pytest.raises(ValueError):
        retriever.retrieve("timeout", overrides={"initial_k": 50})  # above max_k


def test_a_typed_config_replaces_the_retrievers_own_for_one_search(fake_index):
    retriever = _retriever(fake_index)
    typed = retriever.retrieve("timeout", config=retriever.config.model_copy(update={"strategy": "keyword"}))
    assert typed.route == "keyword" and typed.config == retriever.config.model_copy(update={"strategy": "keyword"})
    assert [h.chunk.id for h in typed.hits] == [
        h.chunk.id for h in retriever.retrieve("timeout", overrides={"strategy": "keyword"}).hits]
    with pytest.raises(ValueError, match="not both"):
        retriever.retrieve("timeout", overrides={"strategy": "vector"}, config=retriever.config)


def test_the_result_holds_its_config_typed_and_serialises_it_as_before(fake_index):
    retriever = _retriever(fake_index, strategy="keyword", initial_k=4)
    result = retriever.retrieve("timeout")
    assert isinstance(result.config, RetrievalConfig) and result.config.initial_k == 4
    data = result.to_dict()
    assert data["config"] == retriever.config.model_dump()
    assert json.dumps(data["config"]) == json.dumps(RetrievalConfig(strategy="keyword", initial_k=4).model_dump())
    # The dict form of a saved trace is read back into the model (a setting no longer known is left out).
    saved = dataclasses.replace(result, config={**data["config"], "gone": 1})
    assert saved.config == result.config and saved.to_dict()["config"] == data["config"]
    assert dataclasses.replace(result, config={}).config is None and saved.to_dict() == data


def test_with_llm_is_a_copy_sharing_all_but_the_router(fake_index):
    retriever = _retriever(fake_index, strategy="auto", llm="router")
    bounded = retriever.with_llm("bounded router")
    assert (bounded.llm, retriever.llm) == ("bounded router", "router")
    assert bounded.index is retriever.index and bounded.config is retriever.config
    assert bounded.settings is retriever.settings and bounded.embedder_id == retriever.embedder_id
    assert retriever.with_llm(None).llm is None and retriever.llm == "router"


@pytest.mark.parametrize("strategy", ["vector", "keyword", "hybrid"])
def test_ranked_over_given_candidates_and_uncalibrated_keeps_the_order(fake_index, strategy):
    retriever = _retriever(fake_index)
    calibrated = retriever.ranked(strategy, "request timeout", 4, Filters(), candidates=2)
    bare = retriever.ranked(strategy, "request timeout", 4, Filters(), candidates=2, calibrate=False)
    assert [(h.chunk.id, h.ranks, h.scores) for h in bare] == [(h.chunk.id, h.ranks, h.scores) for h in calibrated]
    assert all(h.confidence == 0.0 for h in bare) and any(h.confidence > 0 for h in calibrated)
    if strategy == "hybrid":  # each list two deep: at most four chunks to fuse
        assert all(rank <= 2 for h in bare for name, rank in h.ranks.items() if name != "fused")


def test_web_route_uses_the_configured_endpoint(fake_index, searx):
    url, handler = searx
    handler.results = [{"url": "https://example.org/r", "title": "Wrenfall latest release", "content": "v3 news"}]
    settings = Settings(web_search_url=url)
    result = _retriever(fake_index, strategy="auto", settings=settings).retrieve("latest wrenfall release news")
    assert result.route == "web"
    assert [h.chunk.metadata["url"] for h in result.hits] == ["https://example.org/r"]
    assert "[Source: example.org › Wrenfall latest release]" in result.context.text


def test_web_failure_falls_back_to_hybrid_with_the_reason(fake_index, searx):
    url, _ = searx
    result = _retriever(fake_index, strategy="auto", settings=Settings(web_search_url=url + "/error")).retrieve(
        "latest timeout news")
    assert result.route == "hybrid"
    assert "web search failed" in result.route_reason and "HTTP 500" in result.route_reason


def test_overlapping_places_collapse_to_the_best_ranked(fake_index):
    query = "guide section install package timeout jobs client"
    retriever = _retriever(fake_index, strategy="keyword", granularity="any", min_confidence=0.0, initial_k=6)
    result = retriever.retrieve(query)
    assert [h.chunk.id for h in result.hits] == ["s-guide", "t-limits"]  # the passages inside the section collapse
    assert not result.dedup.dropped


def test_dedup_drops_chunks_inside_a_section_already_held(fake_index):
    retriever = _retriever(fake_index, strategy="keyword", granularity="paragraph", min_confidence=0.0, initial_k=6)
    result = retriever.retrieve("install package timeout jobs client", exclude_ids=["s-guide"])
    assert {d.chunk_id for d in result.dedup.dropped} == {"p-install", "p-config", "c-config"}
    assert {d.reason for d in result.dedup.dropped} == {"contained in selected section s-guide"}
    assert [h.chunk.id for h in result.hits] == ["t-limits"]
    assert result.dedup.tokens_saved == sum(fake_index.get(d.chunk_id).tokens for d in result.dedup.dropped)


def test_auto_escalates_an_unconfident_single_retriever_to_hybrid(fake_index):
    result = _retriever(fake_index, strategy="auto", min_confidence=1.0, granularity="any").retrieve(
        "why are bananas yellow")
    assert [it.strategy for it in result.iterations] == ["vector", "hybrid", "hybrid"]
    assert "switched vector → hybrid" in result.iterations[0].decision_reason
    assert result.route == "hybrid"
    assert result.route_reason.startswith("escalated from vector (natural-language question")
    fixed = _retriever(fake_index, strategy="vector", min_confidence=1.0, granularity="any").retrieve("bananas")
    assert {it.strategy for it in fixed.iterations} == {"vector"}  # an explicit strategy is never switched


@pytest.mark.parametrize(
    ("query", "message"),
    [("   ", "the query is empty"), ("?!… --", "the query has no words"),
     ("x" * 100_000, "the query is 100,000 characters long; keep it under 4,000")],
)
def test_bad_queries_are_refused_before_any_search(fake_index, query, message):
    with pytest.raises(ValueError, match=message):
        _retriever(fake_index).retrieve(query)


def test_passages_are_ranked_with_their_section(make_index, make_chunk):
    """A section that matches as a whole lifts its passages, and brings in a passage no search ranked."""
    section = make_chunk("s-retry", "Retry policy: backoff, jitter, attempts and the retry budget of workers.",
                         granularity="section", start=0, end=300, heading_path=["Retry policy"])
    first = make_chunk("p-backoff", "Backoff doubles the wait after each failed attempt.", start=0,
                       heading_path=["Retry policy"], parent_id="s-retry")
    second = make_chunk("p-budget", "Workers stop once the budget is spent.", start=150, heading_path=["Retry policy"],
                        parent_id="s-retry")
    section.child_ids = ["p-backoff", "p-budget"]
    other = make_chunk("p-other", "Each failed attempt of the retry is logged with its policy.", doc_id="d2",
                       heading_path=["Logging"])
    index = make_index([section, first, second, other])
    query = "retry policy jitter backoff attempts budget"
    plain = _retriever(index, section_weight=0.0, initial_k=2, max_iterations=1).retrieve(query)
    ranked = _retriever(index, initial_k=2, max_iterations=1).retrieve(query)
    assert "p-budget" not in [h.chunk.id for h in plain.hits] and "p-other" in [h.chunk.id for h in plain.hits]
    assert {h.chunk.id for h in ranked.hits} == {"p-backoff", "p-budget"}
    assert all(h.ranks.get("section") == 1 for h in ranked.hits)
    assert all(h.chunk.granularity == "paragraph" for h in ranked.hits)
