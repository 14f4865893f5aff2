"""With the Chroma server down, an index built before still answers: keyword search, with the reason shown."""

from __future__ import annotations

from rag_core.config import RetrievalConfig
from rag_core.retrieval import Retriever


def test_hybrid_and_auto_fall_back_to_keyword_search_when_vectors_are_unreachable(server_down):
    index, settings, port = server_down
    for strategy in ("hybrid", "auto", "vector"):
        result = Retriever(index, RetrievalConfig(strategy=strategy), settings).retrieve("How do I install the agent?")
        assert result.hits, strategy
        assert result.route == "keyword" and "vector search unavailable" in result.route_reason, strategy
        assert f"127.0.0.1:{port}" in result.route_reason
        assert result.route_reason.count("vector search unavailable") == 1
        assert all(it.strategy == "keyword" for it in result.iterations)
