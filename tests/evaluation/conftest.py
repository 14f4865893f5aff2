"""Fakes for the evaluation tests: an index of documents only and an executor that returns scripted rankings."""

from __future__ import annotations

import pytest

from tests.fakes.executor import ScriptedExecutor, make_chunk
from tests.fakes.index import FakeIndex


def documents_index(doc_ids=()) -> FakeIndex:
    """An index of documents without chunks: what the runner checks for and ingests missing documents into."""
    return FakeIndex(doc_ids=doc_ids)


@pytest.fixture
def fake_index():
    return documents_index(["d1"])


@pytest.fixture
def fakes():
    """The fakes, for tests that build their own: ``FakeIndex(doc_ids)`` is an index of documents only."""
    from types import SimpleNamespace

    return SimpleNamespace(FakeIndex=documents_index, ScriptedExecutor=ScriptedExecutor, make_chunk=make_chunk)
