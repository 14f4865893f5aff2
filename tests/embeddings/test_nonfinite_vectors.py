"""Issue 39 item 1: NaN/inf vectors from an embeddings endpoint are refused and never cached; a cache already
holding non-finite rows serves none of them (they are re-embedded and replaced)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rag_core.embeddings.cache import CachedEmbedder, text_key
from rag_core.embeddings.openai_embedder import OpenAIEmbedder
from rag_core.errors import EmbeddingError

DIM = 4


class _Endpoint:
    def __init__(self) -> None:
        self.poisoned = True
        handler_owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                value = float("nan") if handler_owner.poisoned else 1.0
                data = [{"object": "embedding", "index": i, "embedding": [value, 1.0, 0.5, 0.25]}
                        for i in range(len(inputs))]
                out = json.dumps({"object": "list", "data": data, "model": "m",
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def endpoint():
    e = _Endpoint()
    yield e
    e.server.shutdown()
    e.server.server_close()


def test_nan_vectors_are_refused_and_not_cached_then_heal(endpoint, tmp_path):
    cached = CachedEmbedder(OpenAIEmbedder(endpoint.url, "m", max_retries=0), tmp_path)
    with pytest.raises(EmbeddingError, match="NaN or infinite"):
        cached.embed_documents(["alpha", "beta"])
    assert cached.size() == 0
    endpoint.poisoned = False
    vectors = cached.embed_documents(["alpha", "beta"])
    assert np.isfinite(vectors).all() and vectors.shape == (2, DIM)
    assert np.isfinite(cached.embed_query("alpha")).all()


def test_poisoned_rows_already_in_the_cache_are_re_embedded(endpoint, tmp_path):
    endpoint.poisoned = False
    cached = CachedEmbedder(OpenAIEmbedder(endpoint.url, "m", max_retries=0), tmp_path)
    cached.embed_documents(["seed"])  # learns the dimension
    bad = np.full(DIM, np.nan, dtype=np.float32).tobytes()
    cached._connection().execute("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)",
                                 [cached.id, text_key("gamma"), bad])
    assert np.isfinite(cached.embed_query("gamma")).all()
    assert np.isfinite(cached.embed_documents(["gamma", "seed"])).all()
    blob = cached._connection().execute("SELECT vector FROM embeddings WHERE text_hash = ?",
                                        [text_key("gamma")]).fetchone()[0]
    assert np.isfinite(np.frombuffer(blob, dtype=np.float32)).all()


class _LocalModel:
    """Any in-process embedder (not the endpoint, which checks its own replies) gone wrong: NaN rows or the wrong
    width, until ``fault`` is cleared."""

    id = "local-model"
    dim = DIM

    def __init__(self) -> None:
        self.fault = "nan"

    def _vectors(self, n: int) -> np.ndarray:
        if self.fault == "nan":
            return np.array([[np.inf, 1.0, 0.5, 0.25]] * n, dtype=np.float32)
        if self.fault == "width":
            return np.ones((n, DIM - 1), dtype=np.float32)
        return np.ones((n, DIM), dtype=np.float32)

    def embed_documents(self, texts, progress=None):
        return self._vectors(len(texts))

    def embed_query(self, text):
        return self._vectors(1)[0]


@pytest.mark.parametrize("fault", ["nan", "width"])
def test_the_cache_never_stores_a_non_finite_or_wrongly_sized_vector_from_any_embedder(tmp_path, fault):
    model = _LocalModel()
    model.fault = fault
    cached = CachedEmbedder(model, tmp_path)
    with pytest.raises(EmbeddingError, match="non-finite or wrongly sized vectors.*nothing was cached"):
        cached.embed_documents(["alpha", "beta"])
    with pytest.raises(EmbeddingError, match="nothing was cached"):
        cached.embed_query("alpha")
    assert cached.size() == 0  # the cache stored what any embedder returned before
    model.fault = ""
    assert cached.embed_documents(["alpha", "beta"]).shape == (2, DIM) and cached.size() == 2
