"""Helpers for the embedding tests: a scripted OpenAI-compatible server on loopback, and a counting fake embedder."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest


def fake_vector(text: str) -> list[float]:
    """Deterministic, deliberately unnormalised 3-d vector: (characters, words, 1)."""
    return [float(len(text)), float(len(text.split())), 1.0]


class ScriptedEmbeddingsServer:
    """Speaks POST /v1/embeddings; ``faults`` is consumed one per request: (status, headers) or ("sleep", seconds)."""

    def __init__(self, api_key: str = "") -> None:
        self.api_key = api_key
        self.faults: list[tuple] = []
        self.requests: list[dict] = []
        self.arrivals: list[float] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                body = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out first, as scripted
                    pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                server.arrivals.append(time.monotonic())
                if server.faults:
                    fault = server.faults.pop(0)
                    if fault[0] == "sleep":
                        time.sleep(fault[1])
                    else:
                        status, headers = fault
                        self._send(status, {"error": {"message": f"scripted {status}", "type": "x"}}, headers)
                        return
                if server.api_key and self.headers.get("Authorization") != f"Bearer {server.api_key}":
                    self._send(401, {"error": {"message": "Incorrect API key provided", "type": "auth"}})
                    return
                if self.path != "/v1/embeddings":
                    self._send(404, {"error": {"message": "not found", "type": "x"}})
                    return
                inputs = body["input"]
                # Answer out of order: clients must sort by "index".
                data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)]
                self._send(200, {"object": "list", "data": data[::-1], "model": body["model"],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def embeddings_server():
    server = ScriptedEmbeddingsServer()
    yield server
    server.close()


@pytest.fixture
def refused_url() -> str:
    """A loopback URL where nothing listens (the port was bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class CountingEmbedder:
    """A tiny fake Embedder recording every text it is asked to embed."""

    def __init__(self, dim: int = 4, id: str = "counting-4") -> None:
        self.id = id
        self.dim = dim
        self.calls: list[list[str]] = []

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        vector[len(text) % self.dim] = 1.0
        return vector

    def embed_documents(self, texts: Sequence[str], progress=None) -> np.ndarray:
        self.calls.append(list(texts))
        if progress:
            progress(len(texts), len(texts))
        return np.array([self._vector(t) for t in texts], dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        self.calls.append([text])
        return self._vector(text)


@pytest.fixture
def make_counting():
    """The ``CountingEmbedder`` class (importlib mode: test modules cannot import conftest)."""
    return CountingEmbedder
