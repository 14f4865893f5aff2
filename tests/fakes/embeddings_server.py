"""A real OpenAI-compatible ``POST /v1/embeddings`` server on loopback: word-hashed vectors, stoppable so that a
test can turn it into a refused connection (an embedding-endpoint outage)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.fakes.embedder import WordHashEmbedder


class EmbeddingsServer:
    """Serves ``dim``-sized vectors of ``WordHashEmbedder``; ``requests`` counts the calls; ``stop()`` closes the
    port, so that every later request is refused."""

    def __init__(self, dim: int = 32) -> None:
        self.requests = 0
        vectors = WordHashEmbedder(dim)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests += 1
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [{"object": "embedding", "index": i, "embedding": vectors.embed_query(t).tolist()}
                        for i, t in enumerate(texts)]
                out = json.dumps({"object": "list", "data": data, "model": body["model"],
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
