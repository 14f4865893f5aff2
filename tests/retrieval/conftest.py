"""Retrieval fixtures: literal chunks, an in-memory index over them (``tests.fakes.index``), a loopback SearxNG."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Hit
from tests.fakes.index import FakeIndex


def new_chunk(chunk_id: str, text: str, *, doc_id: str = "d1", granularity: str = "paragraph",
               chunk_type: str = "prose", start: int = 0, end: int | None = None, heading_path=None,
               parent_id: str | None = None) -> Chunk:
    return Chunk(id=chunk_id, doc_id=doc_id, granularity=granularity, chunk_type=chunk_type, text=text, start=start,
                 end=start + len(text) if end is None else end, tokens=count_tokens(text),
                 heading_path=list(heading_path or []), parent_id=parent_id)


def new_hit(chunk: Chunk, score: float, confidence: float = 0.5, source: str = "guide.md") -> Hit:
    return Hit(chunk=chunk, score=score, confidence=confidence, source_name=source)


CORPUS = [
    # Spans as in a real document: the passages one after another, the Guide section spanning the first three.
    new_chunk("p-install", "To install Wrenfall run pip install wrenfall and then wrenfall init in your project.",
               heading_path=["Guide", "Install"], start=0),
    new_chunk("p-config", "The timeout setting controls how long a request may take before it is cancelled.",
               heading_path=["Guide", "Configuration"], start=100),
    new_chunk("c-config", "```python\nclient = Client(timeout=30)\nclient.fetch('jobs')\n```", chunk_type="code",
               heading_path=["Guide", "Configuration"], start=200),
    new_chunk("t-limits", "| plan | max jobs |\n| --- | --- |\n| free | 5 |\n| pro | 500 |", chunk_type="table",
               heading_path=["Plans"], start=300),
    new_chunk("s-guide", "Guide section: install the package, configure the timeout and run jobs with the client.",
               granularity="section", heading_path=["Guide"], start=0, end=290),
    new_chunk("p-other", "Bananas are yellow fruit that grow in tropical climates.", doc_id="d2",
               heading_path=["Fruit"]),
]


@pytest.fixture
def corpus() -> list[Chunk]:
    return list(CORPUS)


@pytest.fixture
def fake_index(corpus) -> FakeIndex:
    return FakeIndex(corpus, names={"d1": "guide.md", "d2": "fruit.md"})


@pytest.fixture
def make_chunk():
    """``make_chunk(id, text, **fields)`` builds a literal chunk."""
    return new_chunk


@pytest.fixture
def make_hit():
    """``make_hit(chunk, score, confidence=0.5, source="guide.md")`` builds a hit."""
    return new_hit


class _SearxHandler(BaseHTTPRequestHandler):
    """Answers like SearxNG's JSON API; ``/broken`` answers HTML, ``/error`` HTTP 500."""

    results: list[dict] = []
    queries: list[dict] = []

    def do_GET(self):  # noqa: N802 (http.server API)
        url = urllib.parse.urlsplit(self.path)
        params = dict(urllib.parse.parse_qsl(url.query))
        type(self).queries.append({"path": url.path, **params})
        if url.path == "/error":
            self.send_response(500)
            self.end_headers()
            return
        body = b"<html>not json</html>" if url.path == "/broken" else json.dumps(
            {"query": params.get("q"), "results": type(self).results}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def searx():
    """A loopback SearxNG-compatible server: yields (base URL, handler class) and stops afterwards."""
    handler = type("Handler", (_SearxHandler,), {"results": [], "queries": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


GUIDE_MD = """# Wrenfall guide

## Install

Run `pip install wrenfall` and then `wrenfall init` in your project folder.

## Configuration

The request timeout setting controls how long a request may take before it is cancelled. The default is 30 seconds.

```python
client = Client(timeout=30)
client.fetch("jobs")
```

## Plans

| plan | max jobs |
| --- | --- |
| free | 5 |
| pro | 500 |
"""

FRUIT_MD = """# Fruit

Bananas are yellow fruit that grow in tropical climates. Apples grow in orchards.
"""


@pytest.fixture
def real_index(data_dir):
    """A real ``rag_core.index.Index`` (hashing embedder, embedded Chroma) holding two tiny Markdown files."""
    from rag_core.config import get_settings
    from rag_core.embeddings import get_embedder
    from rag_core.index import Index
    from rag_core.loaders import load_bytes

    settings = get_settings()
    index = Index.open("retrieval-test", settings, get_embedder("hash", settings))
    index.ingest([load_bytes("guide.md", GUIDE_MD.encode()), load_bytes("fruit.md", FRUIT_MD.encode())])
    return index


@pytest.fixture
def make_index():
    """``make_index(chunks)`` builds a ``FakeIndex`` over literal chunks."""
    return FakeIndex
