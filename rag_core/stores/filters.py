"""``Filters``: what a search may return, the one filter value every store takes.

Callers never write a store's own filter syntax: the Chroma store turns ``Filters`` into a ``where`` clause
(``rag_core.stores.vector``), the exact and keyword searches into masks, the hot tier into a test per chunk, all
with the same meaning: a chunk passes when its granularity, one of the chunk types it is or contains, and its
document are among those asked for (an empty field asks for nothing in particular).
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_core.types import CHUNK_TYPES, GRANULARITIES


def as_list(value, allowed: tuple[str, ...], what: str) -> list[str] | None:
    """``value`` (one name or several) as a list, checked against ``allowed``; None for no restriction."""
    if value is None or value == "any" or value == []:
        return None
    values = [value] if isinstance(value, str) else list(value)
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {what} {bad}; allowed: {', '.join(allowed)}")
    return values


@dataclass(frozen=True, slots=True)
class Filters:
    """What a search may return; None (or ``"any"`` for granularity) means no restriction."""

    granularity: list[str] | None = None
    chunk_types: list[str] | None = None
    doc_ids: list[str] | None = None

    def __post_init__(self) -> None:
        # Normalised once here (frozen afterwards), so every store reads the same lists.
        object.__setattr__(self, "granularity", as_list(self.granularity, GRANULARITIES, "granularity"))
        object.__setattr__(self, "chunk_types", as_list(self.chunk_types, CHUNK_TYPES, "chunk type"))
        if self.doc_ids is not None:
            doc_ids = [self.doc_ids] if isinstance(self.doc_ids, str) else list(self.doc_ids) or None
            object.__setattr__(self, "doc_ids", doc_ids)
