"""Slow: every file of the shared documentation corpora loads, with the type its extension implies."""

from __future__ import annotations

import pytest

from rag_core.loaders import iter_paths, load_many

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("corpus", ["pydantic_docs", "fastapi_docs"])
def test_shared_corpus_loads_without_errors(shared_dir, corpus):
    paths = iter_paths([shared_dir / "corpora" / corpus])
    assert len(paths) > 100
    docs, errors = load_many(paths)
    assert errors == []
    by_suffix = {p.suffix: d.doc_type for p, d in zip(paths, docs, strict=True)}
    assert by_suffix[".md"] == "markdown"
    assert all(d.text.strip() and "\r" not in d.text for d in docs)
    assert len({d.id for d in docs}) == len(docs)
