"""Issue 39 item 4: with its embedding endpoint down, a collection still opens (its vector size comes from the
manifest, not from a probe), and searches answer by keyword search, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from rag_core.config import RetrievalConfig, Settings
from rag_core.errors import EmbeddingError
from rag_core.loaders import load_path, sample_paths
from rag_core.retrieval import Retriever
from rag_core.services import open_collection
from tests.fakes.embeddings_server import EmbeddingsServer

QUESTION = "How do I install the agent?"


@pytest.fixture
def built_then_down(data_dir):
    """A collection ``outage`` built through a live endpoint (a model of unknown size: it was probed), after which
    the endpoint stops: ``(settings, endpoint url)``."""
    server = EmbeddingsServer(dim=32)
    settings = Settings(data_dir=data_dir, embed_base_url=server.url, embed_model="local-model")
    index = open_collection("outage", settings, embedder="openai", create=True)
    index.ingest([load_path(p) for p in sample_paths()[:3]])
    assert index.embedder.dim == 32 and server.requests > 0
    server.stop()
    return settings, server.url


def test_a_collection_opens_without_its_endpoint_and_keyword_search_answers(built_then_down):
    settings, url = built_then_down
    index = open_collection("outage", settings)  # a new embedder, as in a new process: its size is unknown
    assert index.embedder.dim == 32
    for strategy in ("vector", "hybrid", "auto"):
        result = Retriever(index, RetrievalConfig(strategy=strategy), settings).retrieve(QUESTION)
        assert result.hits, strategy
        assert result.route == "keyword", strategy
        assert "vector search unavailable" in result.route_reason and url in result.route_reason
        assert all(it.strategy == "keyword" for it in result.iterations)


def test_the_outage_is_not_retried_on_every_search(built_then_down):
    settings, _ = built_then_down
    index = open_collection("outage", settings)
    Retriever(index, RetrievalConfig(strategy="hybrid"), settings).retrieve(QUESTION)  # learns of the outage
    started = time.monotonic()
    result = Retriever(index, RetrievalConfig(strategy="hybrid"), settings).retrieve("uninstall the agent")
    assert result.route == "keyword" and "not retried" in result.route_reason
    assert time.monotonic() - started < 2.0  # no backoff (0.5 + 1 + 2 + 4 s) on each search during the outage
    with pytest.raises(EmbeddingError, match="unreachable"):
        index.embedder.embed_query("still down?")


def test_cli_search_in_a_new_process_answers_by_keyword(built_then_down):
    settings, url = built_then_down
    env = {**os.environ, "RAG_DATA_DIR": str(settings.data_dir), "RAG_EMBED_BASE_URL": url,
           "RAG_EMBED_MODEL": "local-model"}
    done = subprocess.run([sys.executable, "-m", "rag_core", "search", QUESTION, "--collection", "outage",
                           "--strategy", "hybrid", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["hits"] and result["route"] == "keyword" and "vector search unavailable" in result["route_reason"]


def test_ask_in_a_new_process_answers_by_keyword_and_says_why(built_then_down):
    """The agent's own embedding uses (de-duplication, relevance, zooming, the name check) fall back to term
    overlap during the outage: ``ask`` answered nothing before ("error: the embeddings endpoint … is
    unreachable", exit 2)."""
    settings, url = built_then_down
    env = {**os.environ, "RAG_DATA_DIR": str(settings.data_dir), "RAG_EMBED_BASE_URL": url,
           "RAG_EMBED_MODEL": "local-model"}
    done = subprocess.run([sys.executable, "-m", "rag_core", "ask", QUESTION, "--collection", "outage", "--json"],
                          capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["answer"] and result["context_chunks"]
    assert all(s["route"] == "keyword" for s in result["steps"] if s["tool"] == "search")
    assert any("vector search unavailable" in w and url in w for w in result["warnings"]), result["warnings"]
