"""Token-budgeted context formatting: the text an LLM reads, plus an account of what made it in and why not.

Hits go in by score, best first, each as a block::

    --- Document N ---
    [Source: guide.md › Install › Linux]
    <chunk text>

Blocks are added while they fit the budget (counted in cl100k tokens, as the LLM will see them). The first
block that does not fit is truncated to the remaining budget and marked, if at least ``min_fragment_tokens``
of its text would show; every later hit is dropped with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.budget import fit_in_order
from rag_core.tokens import count_tokens, decode, encode
from rag_core.types import HEADING_SEPARATOR, Hit

BLOCK_SEPARATOR = "\n\n"
TRUNCATION_MARK = "[… truncated: {shown} of {total} tokens shown]"


@dataclass(slots=True)
class FormattedContext:
    """The context text, its token count, and which hits were included, truncated or dropped (with reasons)."""

    text: str
    tokens: int
    budget: int
    included: list[dict[str, Any]] = field(default_factory=list)
    truncated: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tokens": self.tokens,
            "budget": self.budget,
            "included": list(self.included),
            "truncated": list(self.truncated),
            "dropped": list(self.dropped),
        }


def source_label(hit: Hit) -> str:
    """``name › heading path`` of a hit (the document id when the name is unknown)."""
    name = hit.source_name or hit.chunk.metadata.get("source_name") or hit.chunk.doc_id
    return HEADING_SEPARATOR.join([name, *hit.chunk.heading_path])


def _header(number: int, hit: Hit) -> str:
    return f"--- Document {number} ---\n[Source: {source_label(hit)}]\n"


def format_context(hits: Sequence[Hit], budget: int = 4000, min_fragment_tokens: int = 40) -> FormattedContext:
    """Format ``hits`` into at most ``budget`` tokens, best score first."""
    if budget < 1:
        raise ValueError(f"token budget must be at least 1, got {budget}")
    ordered = sorted(hits, key=lambda h: -h.score)  # stable: equal scores keep the retriever's order
    separator_tokens = count_tokens(BLOCK_SEPARATOR)

    def cost(hit: Hit, kept: Sequence[Hit]) -> int:
        return count_tokens(_header(len(kept) + 1, hit) + hit.chunk.text) + (separator_tokens if kept else 0)

    # Whole blocks while they fit; the first that does not is truncated or dropped, and nothing follows it.
    fit = fit_in_order(ordered, budget, cost, stop=True)
    blocks = [_header(number, hit) + hit.chunk.text for number, hit in enumerate(fit.kept, start=1)]
    result = FormattedContext(text="", tokens=0, budget=budget)
    result.included = [{"chunk_id": hit.chunk.id, "document": number, "source": source_label(hit), "tokens": size}
                       for number, (hit, size) in enumerate(zip(fit.kept, fit.sizes, strict=True), start=1)]
    for hit in fit.refused:
        _truncate(hit, blocks, budget - fit.used, min_fragment_tokens, result)
    result.dropped += [{"chunk_id": hit.chunk.id, "tokens": hit.chunk.tokens,
                        "reason": f"token budget of {budget} exhausted"} for hit in fit.rest]
    result.text = BLOCK_SEPARATOR.join(blocks)
    result.tokens = count_tokens(result.text)
    return result


def _truncate(hit: Hit, blocks: list[str], room: int, min_fragment_tokens: int, result: FormattedContext) -> None:
    """Add ``hit``'s block cut to the ``room`` tokens left (marked), or drop it if too little of its text would
    show; records which in ``result``."""
    chunk = hit.chunk
    budget = result.budget
    separator_tokens = count_tokens(BLOCK_SEPARATOR) if blocks else 0
    number = len(blocks) + 1
    header = _header(number, hit)
    remaining = room - count_tokens(header) - separator_tokens
    text_ids = encode(chunk.text)
    mark_tokens = count_tokens("\n" + TRUNCATION_MARK.format(shown=len(text_ids), total=len(text_ids)))
    shown = remaining - mark_tokens
    if shown < min_fragment_tokens:
        result.dropped.append(
            {"chunk_id": chunk.id, "tokens": chunk.tokens,
             "reason": f"token budget: only {max(remaining, 0)} of {budget} tokens left"}
        )
        return
    # Decoding a token prefix can end mid-character or mid-word; re-count so the budget holds exactly.
    fragment = decode(text_ids[:shown]).rstrip()
    while shown > 0 and count_tokens(header + fragment + "\n" + TRUNCATION_MARK.format(
            shown=shown, total=len(text_ids))) + separator_tokens > room:
        shown -= 1
        fragment = decode(text_ids[:shown]).rstrip()
    block = header + fragment + "\n" + TRUNCATION_MARK.format(shown=shown, total=len(text_ids))
    blocks.append(block)
    result.included.append({"chunk_id": chunk.id, "document": number, "source": source_label(hit),
                            "tokens": count_tokens(block) + separator_tokens})
    result.truncated.append({"chunk_id": chunk.id, "shown_tokens": shown, "total_tokens": len(text_ids)})
