"""Extractive answering: the best-supported passages of the context, quoted with their chunk ids.

Used by the offline policy (no model to write prose) and as the fallback when an LLM never calls ``done``.
A passage is a sentence of prose, one list item, or a whole small code block or table (cutting those would
make them useless). Passages are scored by how many of the question's terms they hold, with a prior for the
retriever's confidence in their chunk; each sub-question gets its best passage before the rest are filled in.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.chunking.sentences import sentence_spans
from rag_core.retrieval.text import content_terms, term_coverage
from rag_core.types import Hit

EXTRACTIVE_NOTE = (
    "Extractive answer (offline policy): passages quoted verbatim from the documents, not written by a model."
)
NOT_FOUND = "I could not find this in the indexed documents. (Offline policy: answers are quoted, never guessed.)"
# Code blocks and tables up to this many tokens are quoted whole.
WHOLE_BLOCK_TOKENS = 220
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


@dataclass(slots=True)
class Passage:
    text: str
    chunk_id: str
    score: float
    order: tuple[int, int]


@dataclass(slots=True)
class ExtractiveAnswer:
    """The answer text, the chunk ids it cites (in order) and the passages chosen."""

    text: str
    citations: list[str]
    passages: list[Passage] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        passages = [{"text": p.text, "chunk_id": p.chunk_id, "score": round(p.score, 4)} for p in self.passages]
        return {"text": self.text, "citations": list(self.citations), "passages": passages}


def passages_of(hit: Hit, rank: int) -> list[Passage]:
    """Candidate passages of one hit's chunk."""
    chunk = hit.chunk
    text = chunk.text.strip()
    if not text:
        return []
    if chunk.chunk_type in ("code", "table") and chunk.tokens <= WHOLE_BLOCK_TOKENS:
        # Quote the block whole, without the heading lines that open a section chunk.
        body = "\n".join(line for line in text.splitlines() if not re.match(r"\s{0,3}#{1,6}\s", line)).strip()
        return [Passage(body or text, chunk.id, 0.0, (rank, 0))]
    units: list[str] = []
    fence = False
    block: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            block.append(line)
            if fence:
                units.append("\n".join(block))
                block = []
            fence = not fence
            continue
        if fence:
            block.append(line)
        elif _LIST_ITEM.match(line) or line.lstrip().startswith("|"):
            units.append(line.strip())
        elif line.strip() and not line.lstrip().startswith("#"):
            units.append(line.strip())
        else:
            units.append("")  # blank or heading line: a boundary
    if block:
        units.append("\n".join(block))
    # Join consecutive prose lines back into paragraphs, then cut paragraphs into sentences.
    passages: list[str] = []
    paragraph: list[str] = []
    for unit in units + [""]:
        if unit and not unit.startswith(("```", "|")) and not _LIST_ITEM.match(unit):
            paragraph.append(unit)
            continue
        if paragraph:
            joined = " ".join(paragraph)
            passages += [joined[s:e] for s, e in sentence_spans(joined, 0, len(joined))]
            paragraph = []
        if unit:
            passages.append(unit)
    # A short lead-in ("The flow is:") says nothing on its own.
    return [Passage(p, chunk.id, 0.0, (rank, i)) for i, p in enumerate(passages)
            if re.search(r"\w", p) and not (p.rstrip().endswith(":") and len(p.split()) < 8)]


def extractive_answer(question: str, hits: Sequence[Hit], sub_queries: Sequence[str] = (),
                      max_passages: int = 3, min_score: float = 0.25) -> ExtractiveAnswer:
    """Quote the best-supported passages of ``hits`` for ``question`` (and each of its ``sub_queries``).

    A part's best passage is quoted when its score (term coverage plus a quarter of its chunk's confidence) is
    above ``min_score``; with 0 the best passage is quoted whatever its words (the caller has judged from the
    evidence that the context answers: a paraphrased question may share no word with its answer)."""
    candidates = [p for rank, hit in enumerate(hits) for p in passages_of(hit, rank)]
    if not candidates:
        return ExtractiveAnswer(text=NOT_FOUND, citations=[])
    confidence = {hit.chunk.id: hit.confidence for hit in hits}
    queries = [q for q in [*sub_queries, question] if q.strip()] or [question]
    chosen: list[Passage] = []
    for query in queries:
        terms = content_terms(query)
        for passage in candidates:
            passage.score = term_coverage(terms, passage.text) + 0.25 * confidence.get(passage.chunk_id, 0.0)
        best = max((p for p in candidates if p not in chosen), key=lambda p: (p.score, -p.order[0], -p.order[1]),
                   default=None)
        if best is not None and best.score > min_score and len(chosen) < max_passages:
            chosen.append(best)
    # Fill up with the next best for the whole question, if they hold at least half its terms.
    terms = content_terms(question)
    for passage in candidates:
        passage.score = term_coverage(terms, passage.text) + 0.25 * confidence.get(passage.chunk_id, 0.0)
    for passage in sorted(candidates, key=lambda p: (-p.score, p.order)):
        if len(chosen) >= max_passages:
            break
        if passage not in chosen and passage.score >= 0.5:
            chosen.append(passage)
    if not chosen:
        return ExtractiveAnswer(text=NOT_FOUND, citations=[])
    lines = [EXTRACTIVE_NOTE, ""]
    for passage in chosen:
        if "\n" in passage.text:  # a code block or table: quoted as a block, its citation after it
            lines += ["", passage.text, "", f"[{passage.chunk_id}]", ""]
        else:
            lines.append(f"- {_LIST_ITEM.sub('', passage.text)} [{passage.chunk_id}]")
    citations = list(dict.fromkeys(p.chunk_id for p in chosen))
    return ExtractiveAnswer(text="\n".join(lines), citations=citations, passages=chosen)
