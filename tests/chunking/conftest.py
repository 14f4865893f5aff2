"""Fixtures for chunking tests: a literal-document factory and a granularity filter."""

from __future__ import annotations

import pytest

from rag_core.types import Chunk, Document


def _make_doc(text: str, doc_type: str = "markdown", language: str | None = None, name: str = "doc.md",
              metadata: dict | None = None) -> Document:
    return Document(id="doc1", name=name, doc_type=doc_type, size=len(text.encode()), created="2026-01-01T00:00:00",
                    text=text, language=language, metadata=metadata or {})


def _at(chunks: list[Chunk], granularity: str) -> list[Chunk]:
    return [c for c in chunks if c.granularity == granularity]


@pytest.fixture
def make_doc():
    return _make_doc


@pytest.fixture
def at():
    return _at
