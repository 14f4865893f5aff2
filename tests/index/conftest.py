"""Fakes and fixtures for the index tests: a word-hashing embedder, a tiny Markdown chunker, both store backends."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from rag_core.config import ChunkingConfig, Settings
from rag_core.types import Chunk, Document

DIM = 64


class FakeEmbedder:
    """Bag of words hashed into 64 signed buckets: texts sharing words have a high cosine."""

    def __init__(self, dim: int = DIM, id: str = "fake-64"):
        self.dim = dim
        self.id = id
        self.calls = 0

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.md5(word.encode()).digest()
            vector[digest[0] % self.dim] += 1.0 if digest[1] % 2 else -1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_documents(self, texts, progress=None):
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), 4):
            for row in range(start, min(start + 4, len(texts))):
                out[row] = self._vector(texts[row])
            if progress is not None:
                progress(min(start + 4, len(texts)), len(texts))
        return out

    def embed_query(self, text):
        return self._vector(text)


def _chunk_id(*parts) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def _block_type(block: str) -> str:
    if block.startswith("```"):
        return "code"
    if block.startswith("|"):
        return "table"
    if block.startswith("- "):
        return "list"
    return "prose"


def fake_chunker(doc: Document, config: ChunkingConfig, granularity: str = "all") -> list[Chunk]:
    """Document → sections (at '#' lines) → paragraphs (blank-line blocks), with offsets and links."""
    text = doc.text
    document = Chunk(_chunk_id(doc.id, "document"), doc.id, "document", "prose", text, 0, len(text), len(text.split()))
    chunks = [document]
    starts = [m.start() for m in re.finditer(r"(?m)^#+ ", text)] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    for s_pos, start in enumerate(starts):
        end = starts[s_pos + 1] if s_pos + 1 < len(starts) else len(text)
        body = text[start:end]
        heading = body.splitlines()[0].lstrip("# ").strip() if body.startswith("#") else ""
        section = Chunk(_chunk_id(doc.id, "section", start, end), doc.id, "section", "heading", body, start, end,
                        len(body.split()), heading_path=[heading] if heading else [], parent_id=document.id,
                        position=s_pos)
        document.child_ids.append(section.id)
        chunks.append(section)
        for p_pos, match in enumerate(re.finditer(r"(?s)\S.*?(?=\n\s*\n|\Z)", body)):
            block = match.group(0)
            if block.startswith("#"):
                continue
            block_type = _block_type(block)
            para = Chunk(_chunk_id(doc.id, "paragraph", start + match.start()), doc.id, "paragraph", block_type,
                         block, start + match.start(), start + match.end(), len(block.split()),
                         heading_path=list(section.heading_path), parent_id=section.id, position=p_pos,
                         language="python" if block_type == "code" else None)
            section.child_ids.append(para.id)
            section.contains_types = sorted({*section.contains_types, block_type})
            chunks.append(para)
    document.contains_types = sorted({t for c in chunks[1:] for t in c.contains_types})
    return chunks


def make_doc(name: str, text: str) -> Document:
    doc_id = hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()[:16]
    return Document(doc_id, name, "markdown", len(text.encode()), "2026-01-01T00:00:00", text)


AUTH = """# Auth

Tokens are signed with the RS256 algorithm.

```
def verify(token):
    return jwt.decode(token)
```

# Rate limits

Each client may send 100 requests per minute.

| plan | limit |
| free | 100 |
"""

BILLING = """# Billing

Invoices are emailed monthly to the account owner.

- pay by card
- pay by wire transfer
"""


@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.chroma_server)])
def settings(request, data_dir: Path) -> Settings:
    if request.param == "server":
        server = request.getfixturevalue("chroma_server")
        return Settings(data_dir=data_dir, chroma_host=server.host, chroma_port=server.port)
    return Settings(data_dir=data_dir)


@pytest.fixture
def embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def collection_name(request) -> str:
    """A collection name unique per test (the server is shared by the whole session)."""
    return "t-" + hashlib.sha256(request.node.nodeid.encode()).hexdigest()[:12]


@pytest.fixture
def open_index(settings, embedder, collection_name):
    from rag_core.index import Index

    def _open(name: str | None = None, **kwargs):
        return Index.open(name or collection_name, settings, kwargs.pop("embedder", embedder),
                          kwargs.pop("chunking", None), chunker=kwargs.pop("chunker", fake_chunker), **kwargs)

    return _open


@pytest.fixture
def auth_doc() -> Document:
    return make_doc("auth.md", AUTH)


@pytest.fixture
def billing_doc() -> Document:
    return make_doc("billing.md", BILLING)


@pytest.fixture(name="make_doc")
def make_doc_fixture():
    return make_doc


@pytest.fixture(name="fake_embedder_cls")
def fake_embedder_cls_fixture():
    return FakeEmbedder


@pytest.fixture(name="fake_chunker")
def fake_chunker_fixture():
    return fake_chunker
