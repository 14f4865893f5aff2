"""What the call log keeps of a real call, and where: a search logs what the agent's step timeline draws (route,
relevance against the threshold, the granularity it ran with, one row per hit), and with a Chroma server the calls
of an MCP server are records on that server, read by a studio with another data dir."""

from __future__ import annotations

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, RetrievalConfig, Settings
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.mcp_server.calllog import log_path, read_calls
from rag_core.mcp_server.server import Backend
from rag_core.services import open_index
from tests.mcp.test_mcp_serving import GUIDE, lab_search, serving_world


def test_a_search_logs_the_agents_step_facts_with_the_served_granularity(data_dir):
    """The client gives a query alone: the log says the search ran at the served configuration's granularity
    (sections), not the argument model's default, with the Lab's route, relevance and hits."""
    settings = serving_world(data_dir, RetrievalConfig(granularity="section", strategy="keyword", initial_k=2,
                                                       min_confidence=0.6))
    result = Backend().call("search_documents", {"query": "rotate the API key"}, client="agent")
    lab = lab_search(settings, "rotate the API key")
    (call,) = read_calls(data_dir)
    assert call["route"] == lab.route == "keyword" and call["route_reason"] == lab.route_reason
    assert call["confidence"] == round(lab.confidence, 4) and call["threshold"] == 0.6
    assert call["granularity"] == "section" and call["k_by_iteration"] == [it.k for it in lab.iterations]
    assert [h["chunk_id"] for h in call["hits"]] == [h.chunk.id for h in lab.hits] == call["chunk_ids"]
    assert [h["chunk_id"] for h in call["hits"]] == [c["chunk_id"] for c in result.structured_content["chunks"]]
    first, hit = call["hits"][0], lab.hits[0]
    assert (first["source"], first["heading"], first["granularity"]) == ("guide.md", hit.chunk.heading, "section")
    assert first["confidence"] == round(hit.confidence, 4) and first["tokens"] == hit.chunk.tokens
    Backend().call("list_documents", {}, client="agent")  # not a search: no step facts
    assert "route" not in read_calls(data_dir)[-1]


@pytest.mark.chroma_server
def test_calls_logged_with_a_chroma_server_are_read_by_a_studio_with_another_data_dir(chroma_server, tmp_path,
                                                                                      collection_name, monkeypatch):
    """The MCP server's data dir and the studio's differ (two machines): the call is a record on the Chroma
    server, not a line in either folder."""
    server = Settings(data_dir=tmp_path / "server", chroma_host=chroma_server.host, chroma_port=chroma_server.port,
                      sync_s=0)
    studio = server.model_copy(update={"data_dir": tmp_path / "studio"})
    doc, _ = DocumentStore(server.data_dir).add(load_bytes("guide.md", GUIDE.encode()))
    open_index(RAGConfig(embedding=EmbeddingConfig(embedder="hash")), server, collection_name).ingest([doc])
    for name, value in (("RAG_DATA_DIR", server.data_dir), ("RAG_CHROMA_HOST", server.chroma_host),
                        ("RAG_CHROMA_PORT", server.chroma_port), ("RAG_SYNC_S", 0)):
        monkeypatch.setenv(name, str(value))
    client = f"agent-{collection_name}"  # the server is shared by the session: this test's calls only
    result = Backend(collection_name).call("search_documents", {"query": "rotate the API key"}, client=client)
    assert not result.is_error, result.content[0].text
    seen = [c for c in read_calls(studio, limit=500) if c["client"] == client]
    assert len(seen) == 1 and seen[0]["tool"] == "search_documents"
    assert seen[0]["chunk_ids"] == [c["chunk_id"] for c in result.structured_content["chunks"]]
    assert seen[0]["hits"] and seen[0]["route"]
    assert not log_path(server.data_dir).exists() and not log_path(studio.data_dir).exists()
