"""Fixtures of the tuner's tests: the tiny literal corpus of ``tests.fakes.tiny_corpus``, indexed or not."""

from __future__ import annotations

import pytest

from tests.fakes.tiny_corpus import ingest_tiny_collection, write_tiny_corpus


@pytest.fixture
def tiny_corpus(tmp_path):
    """(folder of the six documents, questions JSONL path, QuestionSet)."""
    return write_tiny_corpus(tmp_path)


@pytest.fixture
def tiny_collection(tmp_path):
    """The tiny corpus ingested as collection ``tiny`` (hash embedder), and its question set."""
    return ingest_tiny_collection(tmp_path)
