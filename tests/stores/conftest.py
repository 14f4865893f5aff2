"""Fixtures for the store tests that open a real index: the word-hashing embedder, the tiny Markdown chunker and
two documents shaped for it (as in ``tests/index``)."""

from __future__ import annotations

import pytest

from rag_core.types import Document
from tests.fakes.chunker import AUTH, BILLING, fake_chunker, make_doc
from tests.fakes.embedder import WordHashEmbedder


@pytest.fixture
def embedder() -> WordHashEmbedder:
    return WordHashEmbedder()


@pytest.fixture
def auth_doc() -> Document:
    return make_doc("auth.md", AUTH)


@pytest.fixture
def billing_doc() -> Document:
    return make_doc("billing.md", BILLING)


@pytest.fixture(name="fake_chunker")
def fake_chunker_fixture():
    return fake_chunker
