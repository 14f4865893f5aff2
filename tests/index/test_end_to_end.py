"""Ingest → search → agent on the sample documents with the real loaders, chunker and hash embedder.

Runs against embedded Chroma (slow) and a real `chroma run` server (chroma_server): the scale-out check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.config import RAGConfig, RetrievalConfig, Settings


@pytest.fixture(params=[pytest.param("embedded", marks=pytest.mark.slow),
                        pytest.param("server", marks=pytest.mark.chroma_server)])
def e2e_settings(request, data_dir: Path) -> Settings:
    if request.param == "server":
        server = request.getfixturevalue("chroma_server")
        return Settings(data_dir=data_dir, chroma_host=server.host, chroma_port=server.port)
    return Settings(data_dir=data_dir)


def test_ingest_search_and_ask_on_samples(e2e_settings, collection_name):
    from rag_core.agent.loop import ask
    from rag_core.embeddings import get_embedder
    from rag_core.index import Filters, Index
    from rag_core.loaders import load_path, sample_paths
    from rag_core.retrieval.retriever import Retriever

    docs = [load_path(p) for p in sample_paths()]
    index = Index.open(collection_name, e2e_settings, get_embedder("hash", e2e_settings), None)
    report = index.ingest(docs)
    assert report.errors == {} and report.warnings == [] and len(report.added) == len(docs)
    assert sum(index.count().values()) == sum(report.chunks.values()) == index._store.count()

    config = RAGConfig(embedding={"embedder": "hash"}, retrieval=RetrievalConfig(strategy="hybrid"))
    rows = index.keyword_search("default port REST API", 2, Filters(granularity=["row"]))
    assert any("Port for the REST API and web console" in chunk.text for chunk, _ in rows)
    result = Retriever(index, config.retrieval, e2e_settings).retrieve("What is the default port of the REST API?")
    assert result.hits and result.context.text
    assert all(index.get(hit.chunk.id) is not None for hit in result.hits)

    code = index.keyword_search("wrenfall_client", 3, Filters(granularity=["paragraph"], chunk_types=["code"]))
    assert code and all(chunk.chunk_type == "code" for chunk, _ in code)

    answer = ask("What is the default port of the REST API?", index, config, e2e_settings)
    assert answer.answer and answer.citations
    assert all(index.get(chunk_id) is not None for chunk_id in answer.citations)

    reopened = Index.open(collection_name, e2e_settings, get_embedder("hash", e2e_settings), None)
    assert reopened.count() == index.count()
    for section in reopened.list_sections(docs[0].id):
        assert reopened.read_section(docs[0].id, section.id).doc_id == docs[0].id
