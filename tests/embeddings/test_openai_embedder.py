"""The OpenAI-compatible embedder against a real HTTP server on loopback, with scripted faults."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.embeddings.openai_embedder import OpenAIEmbedder
from rag_core.errors import EmbeddingError


def make(url: str, **kwargs) -> OpenAIEmbedder:
    kwargs.setdefault("backoff_s", 0.01)
    return OpenAIEmbedder(url, "fake-embed", "sk-test", **kwargs)


def test_vectors_are_normalised_in_input_order_and_batched(embeddings_server):
    embedder = make(embeddings_server.url, batch_size=2)
    seen = []
    vectors = embedder.embed_documents(["ab", "a b c d", "xyz", ""], progress=lambda d, t: seen.append((d, t)))
    assert vectors.shape == (4, 3) and vectors.dtype == np.float32
    expected = np.array([[2, 1, 1], [7, 4, 1], [3, 1, 1], [1, 0, 1]], dtype=np.float32)  # "" is sent as " "
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-6)
    assert [len(r["body"]["input"]) for r in embeddings_server.requests] == [2, 2]
    assert embeddings_server.requests[0]["body"]["model"] == "fake-embed"
    assert embeddings_server.requests[0]["auth"] == "Bearer sk-test"
    assert seen == [(2, 4), (4, 4)]
    assert embedder.id == "openai-fake-embed" and embedder.dim == 3


def test_query_vector_and_probed_dim(embeddings_server):
    embedder = make(embeddings_server.url)
    assert embedder.dim == 3  # unknown model: probed once
    np.testing.assert_allclose(embedder.embed_query("hello"), np.array([5, 1, 1]) / np.sqrt(27), rtol=1e-6)


def test_500_then_ok_is_retried(embeddings_server):
    embeddings_server.faults = [(500, {}), (503, {})]
    vectors = make(embeddings_server.url).embed_documents(["abc"])
    assert len(embeddings_server.requests) == 3
    np.testing.assert_allclose(vectors[0], np.array([3, 1, 1]) / np.sqrt(11), rtol=1e-6)


def test_429_honours_retry_after(embeddings_server):
    embeddings_server.faults = [(429, {"Retry-After": "0.3"})]
    started = time.monotonic()
    make(embeddings_server.url, backoff_s=0.0).embed_documents(["abc"])
    arrivals = embeddings_server.arrivals
    assert len(arrivals) == 2
    assert arrivals[1] - arrivals[0] >= 0.3
    assert time.monotonic() - started < 5


def test_backoff_doubles_then_gives_up_with_clear_message(embeddings_server):
    embeddings_server.faults = [(502, {})] * 3
    delays = []
    embedder = make(embeddings_server.url, max_retries=2, backoff_s=0.5, sleep=delays.append)
    with pytest.raises(EmbeddingError, match=r"server error \(502\) after 3 attempts"):
        embedder.embed_documents(["abc"])
    assert delays == [0.5, 1.0]


def test_timeout_is_retried(embeddings_server):
    embeddings_server.faults = [("sleep", 1.0)]
    vectors = make(embeddings_server.url, timeout_s=0.3).embed_documents(["abc"])
    assert vectors.shape == (1, 3)
    assert len(embeddings_server.requests) == 2


def test_connection_refused_is_a_clear_error(refused_url):
    with pytest.raises(EmbeddingError, match=r"is unreachable \(connection failed\) after 2 attempts"):
        make(refused_url, max_retries=1).embed_documents(["abc"])


def test_bad_key_is_not_retried(embeddings_server):
    embeddings_server.api_key = "sk-right"
    with pytest.raises(EmbeddingError, match="refused the API key.*RAG_EMBED_API_KEY"):
        make(embeddings_server.url).embed_documents(["abc"])
    assert len(embeddings_server.requests) == 1


def test_wrong_path_names_the_base_url(embeddings_server):
    with pytest.raises(EmbeddingError, match="not found \\(404\\).*RAG_EMBED_BASE_URL"):
        make(embeddings_server.url.removesuffix("/v1") + "/wrong").embed_documents(["abc"])


def test_get_embedder_reads_settings(embeddings_server):
    settings = Settings(embed_base_url=embeddings_server.url, embed_api_key="k", embed_model="m1")
    embedder = get_embedder("openai", settings)
    assert embedder.id == "openai-m1"
    assert embedder.embed_documents(["abcd"]).shape == (1, 3)
    assert embeddings_server.requests[-1]["auth"] == "Bearer k"


def test_unconfigured_openai_says_what_to_set():
    with pytest.raises(EmbeddingError, match="RAG_EMBED_BASE_URL"):
        get_embedder("openai", Settings(embed_base_url="", embed_api_key=""))


def test_bad_url_scheme():
    with pytest.raises(EmbeddingError, match="http:// or https://"):
        OpenAIEmbedder("localhost:11434", "m")
