"""With the Chroma server down, an index built before still answers: keyword search, with the reason shown."""

from __future__ import annotations

from rag_core.chroma_server import free_port
from rag_core.config import RetrievalConfig, Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Index
from rag_core.loaders import load_path, sample_paths
from rag_core.retrieval import Retriever


def test_hybrid_and_auto_fall_back_to_keyword_search_when_vectors_are_unreachable(data_dir):
    embedded = Settings(data_dir=data_dir)
    embedder = get_embedder("hash", embedded, None)
    Index.open("served", embedded, embedder).ingest([load_path(p) for p in sample_paths()[:3]])
    port = free_port()
    down = Settings(data_dir=data_dir, chroma_host="127.0.0.1", chroma_port=port)
    index = Index.open("served", down, embedder)
    for strategy in ("hybrid", "auto", "vector"):
        result = Retriever(index, RetrievalConfig(strategy=strategy), down).retrieve("How do I install the agent?")
        assert result.hits, strategy
        assert result.route == "keyword" and "vector search unavailable" in result.route_reason, strategy
        assert f"127.0.0.1:{port}" in result.route_reason
        assert result.route_reason.count("vector search unavailable") == 1
        assert all(it.strategy == "keyword" for it in result.iterations)
