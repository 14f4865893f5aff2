"""Slow: the structure chunker on the real pydantic and FastAPI docs — exact offsets and zero violations."""

import pytest

from rag_core.chunking import chunk_document, lint
from rag_core.chunking.structure import size_limit
from rag_core.config import ChunkingConfig
from rag_core.types import Document


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["pydantic_docs", "fastapi_docs"])
@pytest.mark.parametrize("max_tokens", [256, 512])
def test_real_docs_have_no_integrity_violations(shared_dir, corpus, max_tokens):
    files = sorted((shared_dir / "corpora" / corpus).rglob("*.md"))
    assert files, f"no Markdown files under ../shared/corpora/{corpus}"
    config = ChunkingConfig(max_tokens=max_tokens)
    totals: dict[str, int] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        doc = Document(path.name, path.name, "markdown", len(text), "", text)
        chunks = chunk_document(doc, config)
        for chunk in chunks:
            if chunk.verbatim:
                assert text[chunk.start : chunk.end] == chunk.text
            if not chunk.oversized:
                assert chunk.tokens <= size_limit(chunk.granularity, max_tokens), (path, chunk.start)
        for kind, n in lint(doc, chunks, max_tokens=max_tokens).counts.items():
            totals[kind] = totals.get(kind, 0) + n
    violations = {kind: n for kind, n in totals.items() if n and kind != "oversized_atomic"}
    assert violations == {}
