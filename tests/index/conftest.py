"""Fixtures for the index tests: a word-hashing embedder, a tiny Markdown chunker, and the index on embedded Chroma,
on the in-memory backend of ``tests/fakes/vector_store.py`` and (marked chroma_server) on a Chroma server."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.config import Settings
from tests.fakes.chunker import fake_chunker, make_doc
from tests.fakes.embedder import WordHashEmbedder
from tests.fakes.vector_store import use_memory_backend


@pytest.fixture(params=["embedded", "memory", pytest.param("server", marks=pytest.mark.chroma_server)])
def settings(request, data_dir: Path, monkeypatch) -> Settings:
    if request.param == "server":
        server = request.getfixturevalue("chroma_server")
        return Settings(data_dir=data_dir, chroma_host=server.host, chroma_port=server.port)
    if request.param == "memory":  # the in-memory backend of tests/fakes, registered as a row for the test
        return use_memory_backend(monkeypatch, Settings(data_dir=data_dir))
    return Settings(data_dir=data_dir)


@pytest.fixture
def embedder() -> WordHashEmbedder:
    return WordHashEmbedder()


@pytest.fixture
def open_index(settings, embedder, collection_name):
    from rag_core.index import Index

    def _open(name: str | None = None, **kwargs):
        return Index.open(name or collection_name, settings, kwargs.pop("embedder", embedder),
                          kwargs.pop("chunking", None), chunker=kwargs.pop("chunker", fake_chunker), **kwargs)

    return _open


@pytest.fixture(name="make_doc")
def make_doc_fixture():
    return make_doc


@pytest.fixture(name="fake_embedder_cls")
def fake_embedder_cls_fixture():
    return WordHashEmbedder


@pytest.fixture(name="fake_chunker")
def fake_chunker_fixture():
    return fake_chunker
