"""The strategy table is the one place a chunking strategy is named: the configuration, ``chunk_document`` and the
command line read it."""

from __future__ import annotations

from typing import get_args

import pytest

from rag_core.chunking import chunk_document, strategies
from rag_core.chunking.strategies import STRATEGIES, STRATEGY_NAMES, Strategy
from rag_core.cli import main
from rag_core.config import ChunkingConfig
from rag_core.types import Chunk, ChunkingStrategy, Document

TEXT = "# Keys\n\nRotate the key.\n\n## More\n\nText.\n"
DOC = Document(id="d" * 16, name="guide.md", doc_type="markdown", size=len(TEXT), created="2026-01-01T00:00:00",
               text=TEXT)


def test_the_configuration_names_exactly_the_table_s_strategies():
    assert get_args(ChunkingStrategy) == STRATEGY_NAMES == tuple(row.name for row in STRATEGIES.values())
    assert ChunkingConfig.model_fields["strategy"].default in STRATEGIES


def _scratch(doc: Document, config: ChunkingConfig) -> list[Chunk]:
    """One chunk per line that has text: a strategy no module has, to show the table is what is read."""
    chunks, start = [], 0
    for line in doc.text.splitlines(keepends=True):
        if line.strip():
            chunks.append(Chunk(id=f"{start:016x}", doc_id=doc.id, granularity="paragraph", chunk_type="prose",
                                text=line.strip(), start=start, end=start + len(line.rstrip("\n")),
                                tokens=config.max_tokens))
        start += len(line)
    return chunks


def test_chunk_document_uses_a_row_added_to_the_table(monkeypatch):
    monkeypatch.setitem(strategies.STRATEGIES, "scratch", Strategy("scratch", _scratch, ("paragraph",), False,
                                                                  "one chunk per line"))
    config = ChunkingConfig.model_construct(strategy="scratch", max_tokens=64, overlap=0)  # not in the Literal yet
    chunks = chunk_document(DOC, config)
    assert [c.text for c in chunks] == ["# Keys", "Rotate the key.", "## More", "Text."]
    assert all(c.tokens == 64 for c in chunks)  # the row got the configuration
    assert chunk_document(DOC, config, "paragraph") == chunks
    assert chunk_document(DOC, config, "section") == []  # a granularity the row does not make


def test_an_unknown_strategy_names_the_table_s():
    config = ChunkingConfig.model_construct(strategy="semantic", max_tokens=64, overlap=0)
    with pytest.raises(ValueError, match="unknown chunking strategy 'semantic'; allowed: structure, fixed"):
        chunk_document(DOC, config)


@pytest.mark.parametrize("name", STRATEGY_NAMES)
def test_each_row_chunks_as_chunk_document_does(name):
    config = ChunkingConfig(strategy=name, max_tokens=64, overlap=8)
    made = STRATEGIES[name].chunk(DOC, config)
    assert made and made == chunk_document(DOC, config)
    assert {c.granularity for c in made} <= set(STRATEGIES[name].granularities)
    assert all(c.metadata["strategy"] == name for c in made)
    assert any(c.parent_id for c in made) == STRATEGIES[name].hierarchy


def test_the_command_line_offers_the_table_s_strategies(capsys):
    with pytest.raises(SystemExit):
        main(["chunk", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--strategy {structure,fixed}" in help_text
    assert "structure-aware chunker or the fixed-window baseline (default: structure)" in help_text
