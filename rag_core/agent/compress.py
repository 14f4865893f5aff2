"""Trimming the agent's final context to the sentences that bear on the question (contextual compression).

For a question of several parts the agent gathers far more than the context holds: on the multi-part set its
searches held every evidence place of 47% of the questions, but a 3,000-token context of whole chunks kept them
for 22%. Leaving a whole chunk out drops every place it held, while a reader needs the sentences that answer. So
each gathered chunk is cut into *units* (a prose sentence, a list item, a table row with the table's header
lines, a whole code block) and the budget is spent on units: the units of all chunks queue in the order
"chunk's position in the caller's ranking + UNIT_WEIGHT × unit's rank within its chunk" (a unit's rank is by its
relevance to the question or to one of its parts), and each is taken while it fits. The top chunks thus stay
whole or nearly, and the chunks below still bring their best sentences.

A cut chunk's kept units are joined in document order, with the original text between neighbours (a span that
runs over two kept sentences stays verbatim) and ``[…]`` where units were left out; its heading lines are left
out (the context's source line names the heading path). Code chunks are kept whole or not at all, and nothing is
cut when everything fits. Relevance is the retriever's hybrid confidence (``coverage.text_relevance``:
calibrated MiniLM cosine and term coverage), the measure the chunks were ranked by.

Only questions of several parts are trimmed: on single-place questions (FastAPI docs, 1,000 tokens) trimming
lowered place recall from 0.697 to 0.657, since one place wants its chunk whole, not more places.

Hand-written: the compressors of the RAG frameworks (LangChain's ``EmbeddingsFilter`` / ``LLMChainExtractor``,
LlamaIndex's sentence postprocessors) drop whole documents or need a model to rewrite them; none keeps Markdown
structure (a table row with its header, a list item whole) or spends one token budget across chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

import numpy as np

from rag_core.budget import fit_in_order
from rag_core.chunking.markdown_blocks import parse_markdown
from rag_core.chunking.sentences import sentence_spans
from rag_core.tokens import count_tokens
from rag_core.types import Hit

ELISION = "\n[…]\n"
# A chunk's r-th best unit queues with the best unit of the chunk r × UNIT_WEIGHT places below it. Measured on
# the multi-part set (1,500 / 3,000 tokens, place recall): 0 (whole chunks in order, the last one cut) 0.384 /
# 0.522, 1: 0.421 / 0.516, 2: 0.428 / 0.509, 8: – / 0.491; every chunk's best unit first: – / 0.434; units
# ranked on their own across chunks (no chunk order): 0.358 / 0.453.
UNIT_WEIGHT = 1


@dataclass(slots=True)
class _Unit:
    start: int
    end: int
    score: float = 0.0
    # Units that must come with this one (a table row's header and delimiter lines).
    prefix: tuple[tuple[int, int], ...] = ()


@dataclass(slots=True)
class _Plan:
    hit: Hit
    units: list[_Unit]
    whole: bool  # kept whole or not at all (code, or too small to cut)
    order: list[int] = field(default_factory=list)  # unit indices, best first
    kept: set[int] = field(default_factory=set)


def units_of(text: str) -> tuple[list[tuple[int, int, tuple[tuple[int, int], ...]]], list[tuple[int, int]]]:
    """The units of a chunk's ``text`` as ``(start, end, prefix spans)``, and its heading lines' spans."""
    parsed = parse_markdown(text)
    units: list[tuple[int, int, tuple[tuple[int, int], ...]]] = []
    headings: list[tuple[int, int]] = []

    def prose(start: int, end: int, no_cut: list[tuple[int, int]] | None = None) -> None:
        units.extend((s, e, ()) for s, e in sentence_spans(text, start, end, no_cut))

    for block in parsed.blocks:
        if block.kind == "heading":
            headings.append((block.start, block.end))
        elif block.kind == "paragraph":
            prose(block.start, block.end)
        elif block.kind == "table" and block.items and block.header and block.delimiter:
            units.extend((s, e, (block.header, block.delimiter)) for s, e in block.items)
        elif block.kind == "list" and block.items:
            units.extend((s, e, ()) for s, e in block.items)
        elif block.kind in ("blockquote", "admonition") and block.items:
            for s, e in block.items:
                prose(s, e, block.no_cut)
        else:  # code fences, html, anything else: whole
            units.append((block.start, block.end, ()))
    return [u for u in units if text[u[0]:u[1]].strip()], headings


def _plan(hit: Hit) -> _Plan:
    text = hit.chunk.text
    spans, _ = units_of(text)  # heading lines are left out of a cut chunk (see _render)
    units = [_Unit(s, e, prefix=p) for s, e, p in spans]
    whole = hit.chunk.chunk_type == "code" or len(units) <= 1
    return _Plan(hit, units, whole)


def _render(plan: _Plan, kept: AbstractSet[int]) -> str:
    """The ``kept`` units (with their table headers) in document order, `[…]` between units where some were cut.

    Heading lines are left out: the context's source line already names the chunk's heading path."""
    text = plan.hit.chunk.text
    spans: set[tuple[int, int]] = set()
    for i in kept:
        unit = plan.units[i]
        spans.add((unit.start, unit.end))
        spans.update(unit.prefix)
    ordered = sorted(spans)
    # Units of the chunk in order, to tell neighbours (nothing left out between them) from a cut.
    every = sorted({(u.start, u.end) for u in plan.units} | {p for u in plan.units for p in u.prefix})
    position = {span: i for i, span in enumerate(every)}
    out: list[str] = []
    for k, span in enumerate(ordered):
        if k:
            previous = ordered[k - 1]
            if position[span] == position[previous] + 1:
                out.append(text[previous[1]:span[0]])  # neighbours: the text between them as written
            else:
                out.append(ELISION)
        out.append(text[span[0]:span[1]])
    return "".join(out)


def _size(plan: _Plan, kept: AbstractSet[int], exact: bool = False) -> int:
    """Tokens of ``plan``'s ``kept`` units as ``_render`` writes them; the whole chunk's tokens once every unit is
    kept. Not ``exact``: estimated from the characters at the chunk's tokens per character (counting tokens for
    every candidate unit was most of the time taken)."""
    if not kept:
        return 0
    if len(kept) == len(plan.units):
        return plan.hit.chunk.tokens
    text = _render(plan, kept)
    if exact:
        return count_tokens(text)
    return -(-len(text) * plan.hit.chunk.tokens // max(1, len(plan.hit.chunk.text)))


def _queue(plans: Sequence[_Plan]) -> list[tuple[_Plan, int | None]]:
    """Units in the order (chunk's position + UNIT_WEIGHT × unit's rank in its chunk): a chunk's next best
    sentence competes with the best sentences of the chunks ranked below it. A chunk kept whole is one entry
    (unit ``None``)."""
    queue: list[tuple[int, int, _Plan, int | None]] = []
    for p, plan in enumerate(plans):
        if plan.whole:
            queue.append((p, 0, plan, None))
        else:
            queue += [(p + UNIT_WEIGHT * r, r, plan, unit) for r, unit in enumerate(plan.order)]
    queue.sort(key=lambda entry: (entry[0], entry[1]))
    return [(plan, unit) for _, _, plan, unit in queue]


class _UnitCost:
    """The tokens a queued unit adds given the units kept before it: its chunk's estimated size with the unit,
    less without (a whole chunk: its tokens). Sizes are remembered, so each kept set is rendered once."""

    def __init__(self) -> None:
        self.sizes: dict[tuple[int, frozenset[int]], int] = {}

    def size(self, plan: _Plan, units: frozenset[int]) -> int:
        key = (id(plan), units)
        if key not in self.sizes:
            self.sizes[key] = _size(plan, units)
        return self.sizes[key]

    def __call__(self, entry: tuple[_Plan, int | None], kept: Sequence[tuple[_Plan, int | None]]) -> int:
        plan, unit = entry
        if unit is None:
            return plan.hit.chunk.tokens
        units = frozenset(u for p, u in kept if p is plan and u is not None)
        return self.size(plan, units | {unit}) - self.size(plan, units)


def compress_hits(hits: Sequence[Hit], queries: Sequence[str], budget: int,
                  relevance: Callable[[Sequence[str], Sequence[str]], np.ndarray]) -> list[Hit]:
    """``hits`` (best first) fitted into ``budget`` tokens by keeping each chunk's most relevant units.

    ``relevance(queries, texts)`` scores each text (columns) for each query (rows); a unit's score is its best
    over ``queries``. Returns the hits kept, in the given order; a cut chunk is a copy with the
    trimmed text and token count, ``metadata["trimmed_from"]`` its whole size. Whole when everything fits.
    """
    if sum(h.chunk.tokens for h in hits) <= budget:
        return list(hits)
    plans = [_plan(h) for h in hits]
    texts = [p.hit.chunk.text[u.start:u.end] for p in plans for u in p.units]
    matrix = relevance(list(queries), texts) if texts and queries else np.zeros((1, len(texts)))
    scores = np.max(matrix, axis=0)
    k = 0
    for plan in plans:
        for unit in plan.units:
            unit.score = float(scores[k])
            k += 1
        plan.order = sorted(range(len(plan.units)), key=lambda i: -plan.units[i].score)
    cost = _UnitCost()
    fit = fit_in_order(_queue(plans), budget, cost)
    taken: list[tuple[_Plan, int]] = []  # units in the order they were taken
    for plan, unit in fit.kept:
        if unit is None:
            plan.kept = set(range(len(plan.units)))
        else:
            plan.kept.add(unit)
            taken.append((plan, unit))
    used = fit.used
    size = {id(plan): cost.size(plan, frozenset(plan.kept)) for plan, _ in taken}  # each cut chunk's estimate
    # The estimate is per character: count the cut chunks' real tokens and give back the units taken last until
    # the context fits.
    for plan in {id(p): p for p, _ in taken}.values():
        exact = _size(plan, plan.kept, exact=True)
        used += exact - size[id(plan)]
        size[id(plan)] = exact
    while used > budget and taken:
        plan, unit = taken.pop()
        plan.kept.discard(unit)
        now = _size(plan, plan.kept, exact=True)
        used += now - size[id(plan)]
        size[id(plan)] = now
    out = []
    for plan in plans:
        if not plan.kept:
            continue
        if plan.whole or len(plan.kept) == len(plan.units):
            out.append(plan.hit)
            continue
        text = _render(plan, plan.kept)
        chunk = replace(plan.hit.chunk, text=text, tokens=size[id(plan)], verbatim=False,
                        metadata={**plan.hit.chunk.metadata, "trimmed_from": plan.hit.chunk.tokens,
                                  "units_kept": f"{len(plan.kept)} of {len(plan.units)}"})
        out.append(replace(plan.hit, chunk=chunk))
    return out
