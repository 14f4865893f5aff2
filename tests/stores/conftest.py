"""Fixtures for the store tests that open a real index: the word-hashing embedder, the tiny Markdown chunker and
two documents shaped for it (as in ``tests/index``)."""

from __future__ import annotations

import pytest

from tests.fakes.chunker import fake_chunker
from tests.fakes.embedder import WordHashEmbedder


@pytest.fixture
def embedder() -> WordHashEmbedder:
    return WordHashEmbedder()


@pytest.fixture(name="fake_chunker")
def fake_chunker_fixture():
    return fake_chunker
