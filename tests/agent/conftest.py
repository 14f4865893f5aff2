"""Agent fixtures: the tiny hand-made index and a retriever over it, so loop and policy tests need no chunker,
embedder or Chroma (the scripted OpenAI-compatible server's fixtures are in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest

from rag_core.config import RetrievalConfig
from tests.fakes.index import FakeIndex, agent_index
from tests.fakes.retriever import FakeRetriever


@pytest.fixture
def fake_index() -> FakeIndex:
    return agent_index()


@pytest.fixture
def fake_retriever(fake_index) -> FakeRetriever:
    return FakeRetriever(fake_index, RetrievalConfig())
