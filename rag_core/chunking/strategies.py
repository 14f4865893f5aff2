"""The chunking strategies: one row each, read by ``chunk_document``, the command line and the Chunk Explorer.

A new strategy is its module in ``rag_core/chunking/`` and its row here, and its name in
``rag_core.types.ChunkingStrategy`` (the configuration's field; ``tests/chunking/test_strategies.py`` holds the
two equal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rag_core.chunking.fixed import fixed_strategy_chunks
from rag_core.chunking.structure import structure_chunks
from rag_core.config import ChunkingConfig
from rag_core.types import GRANULARITIES, Chunk, Document


@dataclass(frozen=True, slots=True)
class Strategy:
    """One chunking strategy: what it is called, how it chunks a document and what its chunks are."""

    name: str
    chunk: Callable[[Document, ChunkingConfig], list[Chunk]]  # every granularity it makes, in document order
    granularities: tuple[str, ...]  # the granularities it makes (the Explorer offers the others only when it has them)
    hierarchy: bool  # its chunks link parent to children (document → section → passage → row): the treemap draws them
    description: str  # the command line's help names it by this


STRATEGIES: dict[str, Strategy] = {
    row.name: row
    for row in (
        Strategy("structure", structure_chunks, GRANULARITIES, True, "structure-aware chunker"),
        Strategy("fixed", fixed_strategy_chunks, ("paragraph",), False, "the fixed-window baseline"),
    )
}
STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGIES)


def strategy(name: str) -> Strategy:
    """The row of ``name``; a ValueError naming the allowed ones when there is none."""
    row = STRATEGIES.get(name)
    if row is None:
        raise ValueError(f"unknown chunking strategy {name!r}; allowed: {', '.join(STRATEGIES)}")
    return row
