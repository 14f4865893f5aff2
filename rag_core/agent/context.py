"""The agent's accumulated context: chunks gathered across steps, de-duplicated, within a token budget.

New material goes through ``rag_core.retrieval.dedup.dedup_hits`` against what is already held (near-duplicates
and chunks whose parent is already held are dropped); zooming replaces chunks (a section by its relevant
paragraphs, or paragraphs by their section); material that would overflow the budget is refused. Every removal
is reported with its reason and tokens, so the trace shows exactly what the model saw and what it was spared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_core.budget import fit_in_order, fits
from rag_core.retrieval.dedup import dedup_hits
from rag_core.retrieval.formatting import FormattedContext, format_context
from rag_core.types import Chunk, Hit


@dataclass(slots=True)
class AddReport:
    """What one addition did: ids added, ids replaced, and what was removed (with reason and tokens)."""

    added: list[str] = field(default_factory=list)
    replaced: list[dict[str, Any]] = field(default_factory=list)
    removed: list[dict[str, Any]] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def dedup_tokens_saved(self) -> int:
        return sum(r["tokens"] for r in self.removed if r["step"] == "dedup")


def _covers(outer: Chunk, inner: Chunk) -> bool:
    if outer.id == inner.id or outer.doc_id != inner.doc_id:
        return False
    return inner.parent_id == outer.id or (
        outer.granularity != inner.granularity and outer.start <= inner.start and inner.end <= outer.end
    )


class AgentContext:
    """Ordered, de-duplicated hits held by the agent; ``tokens`` is the sum of their chunk tokens.

    Two token limits, both explicit: ``budget`` is the final context's (the configuration's, never changed) and
    ``capacity`` what the context may hold now. They are equal unless a policy gathers more than it will keep
    (``gather``: the offline policy holds a few budgets' worth while it works, then picks the best within the
    budget and calls ``end_gathering``).
    """

    def __init__(self, budget: int, dedup_threshold: float = 0.85,
                 embed: Callable[[list[str]], np.ndarray] | None = None) -> None:
        self.budget = budget
        self.capacity = budget
        self.dedup_threshold = dedup_threshold
        self.embed = embed
        self.hits: list[Hit] = []
        self.dedup_saved_tokens = 0
        self.offered_tokens = 0

    @property
    def tokens(self) -> int:
        return sum(h.chunk.tokens for h in self.hits)

    def gather(self, factor: int) -> None:
        """Hold up to ``factor`` budgets while gathering (the final context is still chosen within ``budget``)."""
        self.capacity = factor * self.budget

    def end_gathering(self) -> None:
        self.capacity = self.budget

    @property
    def ids(self) -> list[str]:
        return [h.chunk.id for h in self.hits]

    def chunks(self) -> list[Chunk]:
        return [h.chunk for h in self.hits]

    def add(self, new_hits: Sequence[Hit], replaces: Sequence[str] = (), count_offered: bool = True) -> AddReport:
        """Add ``new_hits`` (best first) after removing ``replaces``; returns what happened.

        ``count_offered=False`` when the caller has already counted these hits as offered material.
        """
        report = AddReport(tokens_before=self.tokens)
        if replaces:
            gone = set(replaces)
            for hit in [h for h in self.hits if h.chunk.id in gone]:
                report.replaced.append({"chunk_id": hit.chunk.id, "tokens": hit.chunk.tokens,
                                        "reason": "replaced by zooming"})
            self.hits = [h for h in self.hits if h.chunk.id not in gone]
        held = set(self.ids)
        fresh = []
        for hit in new_hits:
            if hit.chunk.id in held:
                report.removed.append({"chunk_id": hit.chunk.id, "tokens": hit.chunk.tokens, "step": "repeat",
                                       "reason": "already in the context"})
            else:
                fresh.append(hit)
                held.add(hit.chunk.id)
        if count_offered:
            self.offered_tokens += sum(h.chunk.tokens for h in fresh)
        kept, dedup = dedup_hits(fresh, self.embed, self.dedup_threshold, previous=self.chunks())
        for drop in dedup.dropped:
            report.removed.append({"chunk_id": drop.chunk_id, "tokens": drop.tokens, "step": "dedup",
                                   "reason": drop.reason})
        self.dedup_saved_tokens += dedup.tokens_saved
        for hit in kept:
            # A parent brought in (zoom out, read section) supersedes the children already held.
            covered = [h for h in self.hits if _covers(hit.chunk, h.chunk)]
            for child in covered:
                report.replaced.append({"chunk_id": child.chunk.id, "tokens": child.chunk.tokens,
                                        "reason": f"covered by parent {hit.chunk.id}"})
            self.hits = [h for h in self.hits if h not in covered]
            if not fits(self.tokens, hit.chunk.tokens, self.capacity):
                self.hits.extend(covered)  # refused: put the children back
                for child in covered:
                    report.replaced.remove(next(r for r in report.replaced if r["chunk_id"] == child.chunk.id))
                report.removed.append({"chunk_id": hit.chunk.id, "tokens": hit.chunk.tokens, "step": "budget",
                                       "reason": f"would exceed the context budget of {self.capacity} tokens"})
                continue
            self.hits.append(hit)
            report.added.append(hit.chunk.id)
        report.tokens_after = self.tokens
        return report

    def remove(self, chunk_ids: Sequence[str]) -> None:
        gone = set(chunk_ids)
        self.hits = [h for h in self.hits if h.chunk.id not in gone]

    def select(self, ranked_ids: Sequence[str], target_tokens: int, cost: Callable[[Hit], int] | None = None,
               keep: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Keep the best-ranked chunks that fit ``target_tokens``, in rank order; returns what was trimmed.

        The ``keep`` ids (e.g. the best hit of each part of a question) are taken first, then the others in
        ``ranked_ids`` order (held chunks not listed come last); one that does not fit is skipped so a smaller,
        lower-ranked chunk can still use the room. Only the very first chunk is kept whatever its size.
        ``cost`` is a hit's size in tokens (default: its chunk's tokens; the caller may count formatting too).
        """
        cost = cost or (lambda hit: hit.chunk.tokens)
        order = {chunk_id: rank for rank, chunk_id in enumerate(ranked_ids)}
        must = set(keep)
        ranked = sorted(self.hits, key=lambda h: (h.chunk.id not in must, order.get(h.chunk.id, len(order))))
        fit = fit_in_order(ranked, target_tokens, lambda hit, _: cost(hit), keep_first=True)
        self.hits = sorted(fit.kept, key=lambda h: order.get(h.chunk.id, len(order)))
        return [{"chunk_id": hit.chunk.id, "tokens": hit.chunk.tokens, "step": "trim",
                 "reason": f"less relevant than the chunks kept within {target_tokens} tokens"} for hit in fit.refused]

    def formatted(self, budget: int | None = None) -> FormattedContext:
        """The context as the model reads it (``--- Document N ---`` blocks), highest score first."""
        return format_context(self.hits, budget=budget or self.capacity)

    def dedup_saving_pct(self) -> float:
        """Share of offered new-material tokens that de-dup kept out of the context, in percent."""
        return 100.0 * self.dedup_saved_tokens / self.offered_tokens if self.offered_tokens else 0.0
