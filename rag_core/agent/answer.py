"""Extractive answering: the best-supported passages of the context, quoted with their chunk ids.

Used by the offline policy (no model to write prose) and as the fallback when an LLM never calls ``done``.
A passage is a sentence of prose, one list item, or a whole small code block or table (cutting those would
make them useless). Passages are scored by how many of the question's terms they hold, with a prior for the
retriever's confidence in their chunk; each sub-question gets its best passage before the rest are filled in.

A table row is quoted under its table's header. When the caller knows each part's evidence (the chunks
``coverage.score_parts`` judged to cover it), a part that asks how to do something is answered by the steps of
its best evidence: a numbered list there is also a passage, whole (else "how do I rotate a key?" got an error
table's "past its rotation grace period" row, never the steps and their command).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rag_core.chunking.markdown_blocks import FENCE_LINE, HEADING_LINE, LIST_MARKER, TABLE_DELIMITER_ROW
from rag_core.chunking.sentences import sentence_spans
from rag_core.retrieval.intent import classify_intent
from rag_core.retrieval.terms import content_terms
from rag_core.tokens import count_tokens
from rag_core.types import Hit

if TYPE_CHECKING:
    import numpy as np

EXTRACTIVE_NOTE = (
    "Extractive answer (offline policy): passages quoted verbatim from the documents, not written by a model."
)
NOT_FOUND = "I could not find this in the indexed documents. (Offline policy: answers are quoted, never guessed.)"
# Code blocks and tables up to this many tokens are quoted whole.
WHOLE_BLOCK_TOKENS = 220
# A numbered list up to this many tokens is also a passage whole (the steps of a procedure, with their commands).
STEPS_TOKENS = 320
# Source code is quoted in blocks of about this many tokens at most (blank-line separated blocks joined).
CODE_UNIT_TOKENS = 120
# A how-to query's score for a whole numbered list over a sentence holding as many of its words: it asks for steps.
STEPS_BONUS = 0.2
# Most passages quoted: one per part of the question and one more, never fewer than 3.
MAX_QUOTED = 5


@dataclass(slots=True)
class Passage:
    text: str
    chunk_id: str
    score: float
    order: tuple[int, int]
    # "unit": a sentence, list item or small block; "row": a table row under its header; "steps": a whole numbered
    # list (offered to how-to parts only).
    kind: str = "unit"
    # A table row's share of a query's terms, each weighted by its rarity among the candidates (a tie-break).
    rarity: float = 0.0


@dataclass(slots=True)
class ExtractiveAnswer:
    """The answer text, the chunk ids it cites (in order) and the passages chosen."""

    text: str
    citations: list[str]
    passages: list[Passage] = field(default_factory=list)
    # The chunks quoted as a part's closest passages, under the threshold (``part_answer``): shown as such.
    closest: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        passages = [{"text": p.text, "chunk_id": p.chunk_id, "score": round(p.score, 4)} for p in self.passages]
        return {"text": self.text, "citations": list(self.citations), "passages": passages}


def passages_of(hit: Hit, rank: int, *, whole_tables: bool = True) -> list[Passage]:
    """Candidate passages of one hit's chunk. ``whole_tables``: a small table is one passage (else its rows are,
    each under its header)."""
    chunk = hit.chunk
    text = chunk.text.strip()
    if not text:
        return []
    if chunk.chunk_type == "code" and not any(FENCE_LINE.match(line) for line in text.splitlines()):
        # Source code (a chunk of a code file; a page's code chunk holds its fence, and may open with a heading and
        # prose): its passages are its blocks.
        return [Passage(block, chunk.id, 0.0, (rank, i), kind="code") for i, block in enumerate(code_blocks(text))]
    if chunk.chunk_type in ("code", "table") and chunk.tokens <= WHOLE_BLOCK_TOKENS and (
            whole_tables or chunk.chunk_type == "code"):
        # Quote the block whole, without the heading lines that open a section chunk.
        body = "\n".join(line for line in text.splitlines() if not HEADING_LINE.match(line)).strip()
        return [Passage(body or text, chunk.id, 0.0, (rank, 0))]
    units: list[str] = []
    fence = False
    block: list[str] = []
    lines = text.splitlines()
    header = ""
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            block.append(line)
            if fence:
                units.append("\n".join(block))
                block = []
            fence = not fence
            continue
        if fence:
            block.append(line)
        elif line.lstrip().startswith("|"):
            # A table row is quoted under its header (a row of bare values says nothing on its own); the header
            # and its rule line are no passage of their own.
            following = lines[number + 1].strip() if number + 1 < len(lines) else ""
            if "|" in following and TABLE_DELIMITER_ROW.match(following):
                header = f"{line.strip()}\n{following}"
            elif not TABLE_DELIMITER_ROW.match(line.strip()):
                units.append(f"{header}\n{line.strip()}" if header else line.strip())
        elif LIST_MARKER.match(line):
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
        if unit and not unit.startswith(("```", "|")) and not LIST_MARKER.match(unit):
            paragraph.append(unit)
            continue
        if paragraph:
            joined = " ".join(paragraph)
            passages += [joined[s:e] for s, e in sentence_spans(joined, 0, len(joined))]
            paragraph = []
        if unit:
            passages.append(unit)
    # A short lead-in ("The flow is:") says nothing on its own.
    units_out = [Passage(p, chunk.id, 0.0, (rank, i), kind="row" if p.startswith("|") else "unit")
                 for i, p in enumerate(passages)
                 if re.search(r"\w", p) and not (p.rstrip().endswith(":") and len(p.split()) < 8)]
    steps = [Passage(block, chunk.id, 0.0, (rank, -1), kind="steps") for block in numbered_lists(text)]
    return units_out + steps


def code_blocks(code: str, limit: int | None = None) -> list[str]:
    """``code`` cut at blank lines into blocks (a function, a group of statements: where its author paused),
    consecutive blocks joined while they fit ``limit`` tokens (``CODE_UNIT_TOKENS``); a block is never cut."""
    limit = limit or CODE_UNIT_TOKENS
    blocks: list[str] = []
    sizes: list[int] = []
    for piece in re.split(r"\n(?:[ \t]*\n)+", code.strip("\n")):
        piece = piece.strip("\n")
        if not piece.strip():
            continue
        size = count_tokens(piece)
        if blocks and sizes[-1] + size <= limit:
            blocks[-1] += "\n\n" + piece
            sizes[-1] += size
        else:
            blocks.append(piece)
            sizes.append(size)
    return blocks


def _numbered(line: str) -> bool:
    """A numbered list item's line, its number indented at most three blanks (deeper, it continues a step)."""
    item = LIST_MARKER.match(line)
    return item is not None and len(item.group(1)) <= 3 and item.group(2)[0].isdigit()


def numbered_lists(text: str) -> list[str]:
    """Each numbered list of ``text`` of at least two items and at most ``STEPS_TOKENS``, verbatim: its items
    with their indented continuation lines and nested code blocks (a step's command belongs to the step)."""
    lists: list[str] = []
    current: list[str] = []
    items = 0
    fence = False

    def close() -> None:
        nonlocal current, items
        while current and not current[-1].strip():
            current.pop()
        block = "\n".join(current)
        if items >= 2 and count_tokens(block) <= STEPS_TOKENS:
            lists.append(block)
        current, items = [], 0

    for line in text.splitlines():
        if fence:
            current.append(line)
            fence = not line.lstrip().startswith("```")
            continue
        if _numbered(line):
            current.append(line)
            items += 1
        elif current and (not line.strip() or line[:1].isspace()):
            current.append(line)  # a blank line or an indented continuation (or a nested code fence) of the step
            fence = line.lstrip().startswith("```")
        elif current:
            close()
    if current:
        close()
    return lists


def extractive_answer(question: str, hits: Sequence[Hit], sub_queries: Sequence[str] = (),
                      max_passages: int = 3, min_score: float = 0.25,
                      steps_from: Mapping[str, Collection[str]] | None = None) -> ExtractiveAnswer:
    """Quote the best-supported passages of ``hits`` for ``question`` (and each of its ``sub_queries``).

    A part's best passage is quoted when its score (term coverage plus a quarter of its chunk's confidence) is
    above ``min_score``; with 0 the best passage is quoted whatever its words (the caller has judged from the
    evidence that the context answers: a paraphrased question may share no word with its answer).

    ``steps_from``: for a how-to sub-query (or question), the ids of its best evidence, whose numbered lists it is
    then offered whole and prefers (``STEPS_BONUS``). Only the steps: quotes are not taken from a part's evidence
    first, since the passage holding most of its words, wherever it is, quoted more gold spans (the agent's
    answers, FastAPI at 1,500 tokens 0.131 against 0.121, multi-part at 3,000 0.082 against 0.075). A question of
    several parts gets up to one quote a part plus one (``max_passages`` at least, ``MAX_QUOTED`` at most)."""
    candidates = [p for rank, hit in enumerate(hits) for p in passages_of(hit, rank)]
    if not candidates:
        return ExtractiveAnswer(text=NOT_FOUND, citations=[])
    confidence = {hit.chunk.id: hit.confidence for hit in hits}
    queries = [q for q in [*sub_queries, question] if q.strip()] or [question]
    steps_from = steps_from or {}
    if len(queries) > 2:
        max_passages = min(MAX_QUOTED, max(max_passages, len(queries)))
    chosen: list[Passage] = []

    # A term in every passage (a table header's words, under each row) tells passages apart less than one in few
    # (the "429" of the row asked about): between rows of one table that hold as many of a query's terms, the one
    # holding the rarer ones wins. Only there: weighting the coverage itself by rarity quoted fewer gold spans
    # (one-shot answers at 1,500 tokens: FastAPI 0.061 -> 0.051, code 0.212 -> 0.193, multi-part 0.063 -> 0.025),
    # and as a tie-break between any passages of a chunk, 0.063 -> 0.050 on the multi-part set.
    passage_terms = [set(content_terms(p.text)) for p in candidates]
    frequency = Counter(t for terms in passage_terms for t in terms)
    total = len(candidates)

    def score(query: str, steps_of: Collection[str] = ()) -> list[Passage]:
        """``candidates`` scored for ``query``; whole numbered lists only those of the chunks ``steps_of``."""
        query_terms = content_terms(query)
        weights = {t: math.log(1 + total / (1 + frequency[t])) for t in query_terms}
        whole = sum(weights.values())
        offered = []
        for passage, terms in zip(candidates, passage_terms, strict=True):
            if passage.kind == "steps" and passage.chunk_id not in steps_of:
                continue
            held = [t for t in query_terms if t in terms]
            passage.score = len(held) / len(query_terms) if query_terms else 0.0
            passage.score += 0.25 * confidence.get(passage.chunk_id, 0.0)
            if passage.kind == "row":
                passage.rarity = sum(weights[t] for t in held) / whole if whole else 0.0
            offered.append(passage)
            if passage.kind == "steps":
                passage.score += STEPS_BONUS
        return offered

    def best_of(passages: Sequence[Passage]) -> Passage | None:
        return max((p for p in passages if p not in chosen and not _overlapping(p, chosen)),
                   key=lambda p: (p.score, p.kind == "steps", -p.order[0], p.rarity, -p.order[1]), default=None)

    for query in queries:
        # A how-to part is offered the steps of its own best evidence only: a numbered list elsewhere is as often
        # a code example's annotations as a procedure (quoting those lost gold spans on the multi-part set).
        offered = score(query, steps_from.get(query, ()) if _how_to(query) else ())
        best = best_of(offered)
        if best is not None and best.score > min_score and len(chosen) < max_passages:
            chosen.append(best)
    # Fill up with the next best for the whole question, if they hold at least half its terms.
    for passage in sorted(score(question), key=lambda p: (-p.score, p.order[0], -p.rarity, p.order[1])):
        if len(chosen) >= max_passages:
            break
        if passage not in chosen and passage.score >= 0.5 and not _overlapping(passage, chosen):
            chosen.append(passage)
    if not chosen:
        return ExtractiveAnswer(text=NOT_FOUND, citations=[])
    lines = [EXTRACTIVE_NOTE, "", *_quoted_lines(chosen)]
    citations = list(dict.fromkeys(p.chunk_id for p in chosen))
    return ExtractiveAnswer(text="\n".join(lines), citations=citations, passages=chosen)


def _how_to(query: str) -> bool:
    try:
        return classify_intent(query).name == "procedure"
    except ValueError:
        return False


def _overlapping(passage: Passage, chosen: Sequence[Passage]) -> bool:
    """Whether ``passage`` repeats a chosen one: a list item inside chosen steps, or steps around a chosen item."""
    for other in chosen:
        if other.chunk_id != passage.chunk_id or "steps" not in (other.kind, passage.kind):
            continue
        outer, inner = (other, passage) if other.kind == "steps" else (passage, other)
        if LIST_MARKER.sub("", inner.text.strip()) in outer.text:
            return True
    return False


# The per-part answer (``part_answer``): for each part of the plan, its best evidence chunks by the plan's own
# relevance, and within them the units (sentences, list items, table rows, blocks) that answer the part.
# How many of a part's most relevant chunks its quotes are taken from; how many units a part quotes at most, and
# in how many tokens. Measured on the agent's contexts at 1,500 tokens (share of gold places the answer quotes,
# FastAPI / code): 4 chunks, 5 units, 300 tokens 0.354 / 0.552; 5, 6, 350: 0.384 / 0.592; 5, 7, 400: 0.404 /
# 0.621 with answers a third longer (median 328 tokens against 278 on FastAPI). The middle one: a part reads as
# a paragraph or two, not a page.
PART_CHUNKS = 5
PART_UNITS = 6
PART_TOKENS = 350
# A unit is ranked by its own relevance to the part and its chunk's, half each: the unit alone misses what its
# chunk is about (a sentence saying "it" of the option the section names), the chunk alone cannot tell its units
# apart.
UNIT_WEIGHT = 0.5
UNIT_MARGIN = 0.3
ROW_MARGIN = 0.1
Relevance = Callable[[Sequence[str], Sequence[str]], "np.ndarray"]


@dataclass(slots=True)
class PartQuote:
    """What the answer says for one part: its quoted passages, or why it quotes none."""

    text: str
    confidence: float
    covered: bool
    passages: list[Passage] = field(default_factory=list)
    named_out: bool = False  # relevant evidence, but the part names what no evidence mentions


def part_answer(question: str, parts: Sequence[Any], hits: Sequence[Hit], relevance: Relevance, *,
                threshold: float, weak_single: bool = True) -> ExtractiveAnswer:
    """Quote, part by part in the plan's order, the units of each part's best evidence that answer it.

    ``parts``: the plan's parts as ``coverage.score_parts`` judged them (``text``, ``query``, ``confidence``);
    ``relevance(queries, texts)``: the hybrid confidence the plan used (rows queries, columns texts). A part below
    ``threshold`` quotes nothing and the answer says so, unless no part reaches it (``weak_single``): then each
    part quotes its closest passages under a heading that says they are below the threshold."""
    hits = [h for h in hits if h.chunk.text.strip()]
    # A part of the story ("our API sits behind a proxy that strips /api/v1.") is what the question is about, not
    # a question: its words are in the question parts' queries already (``plan``), and it gets no answer of its own.
    parts = [p for p in parts if getattr(p, "role", "question") != "context"] or list(parts)
    if not hits or not parts:
        return ExtractiveAnswer(text=NOT_FOUND, citations=[])
    queries = [p.query or p.text for p in parts]
    chunk_scores = relevance(queries, [h.chunk.text for h in hits])
    chosen: list[Passage] = []
    quotes: list[PartQuote] = []
    # When no part reaches the threshold, each shows its closest passages under a heading that says so (the
    # documents were judged to answer the question; the closest passages are what a reader checks that by).
    # When one does, a part under it quotes nothing and says so.
    # A part the plan's judge un-covered (it names what no evidence mentions: ``coverage.decide_found``) quotes
    # nothing, whatever its evidence scored.
    judged = [bool(getattr(p, "covered", True)) and float(p.confidence) >= threshold for p in parts]
    named_out = [float(p.confidence) >= threshold and not ok for p, ok in zip(parts, judged, strict=True)]
    weak = weak_single and not any(judged) and not any(named_out)
    for i, part in enumerate(parts):
        confidence = float(part.confidence)
        quote = PartQuote(part.text, confidence, judged[i], named_out=named_out[i])
        quotes.append(quote)
        if not quote.covered and not weak:
            continue
        row = [float(x) for x in chunk_scores[i]]
        if quote.covered:
            # A covered part quotes its evidence only: the chunks as relevant to it as ``threshold`` requires (the
            # place quoted under a covered part is one the plan's check counts; FastAPI 0.384 -> 0.394 of places
            # quoted, code 0.592 -> 0.578).
            row = [x if x >= threshold else -1.0 for x in row]
        quote.passages = _part_units(queries[i], part.text, hits, row, relevance, chosen)
        chosen += quote.passages
    if not chosen and len(parts) == 1:
        return ExtractiveAnswer(text=NOT_FOUND, citations=[])
    lines = [EXTRACTIVE_NOTE]
    several = len(parts) > 1
    for number, quote in enumerate(quotes, 1):
        if several:
            lines += ["", f"#### {number}. {' '.join(quote.text.split())}"]
        if not quote.passages:
            why = ("it asks about a name no evidence found mentions" if quote.named_out else
                   f"best evidence {quote.confidence:.2f}, under the {threshold:.2f} a part needs")
            lines.append(f"No passage found covers: {' '.join(quote.text.split())} ({why})")
            continue
        if not quote.covered:
            lines += ["", f"#### Closest passages: best evidence {quote.confidence:.2f}, under the {threshold:.2f} a "
                      "part needs to count as covered; check them before relying on them"]
        lines.append("")
        lines += _quoted_lines(quote.passages)
    citations = list(dict.fromkeys(p.chunk_id for p in chosen))
    closest = list(dict.fromkeys(p.chunk_id for q in quotes if not q.covered for p in q.passages))
    return ExtractiveAnswer(text="\n".join(lines).strip(), citations=citations, passages=chosen, closest=closest)


def _part_units(query: str, text: str, hits: Sequence[Hit], chunk_row: Any, relevance: Relevance,
                chosen: Sequence[Passage]) -> list[Passage]:
    """The units of one part's ``PART_CHUNKS`` most relevant chunks (by ``chunk_row``; a negative score is no
    candidate) that answer it best, at most ``PART_UNITS`` within ``PART_TOKENS``."""
    order = [j for j in sorted(range(len(hits)), key=lambda j: -float(chunk_row[j]))[:PART_CHUNKS]
             if float(chunk_row[j]) >= 0]
    how_to = _how_to(text) or _how_to(query)
    pool: list[Passage] = []
    for rank, j in enumerate(order):
        # A table's rows compete (a question about one plan's limit is answered by its row, not the table).
        units = [p for p in passages_of(hits[j], rank, whole_tables=False) if how_to or p.kind != "steps"]
        pool += units
        chunk_score = float(chunk_row[j])
        for unit in units:
            unit.score = (1 - UNIT_WEIGHT) * chunk_score  # the unit's own share is added below
    if not pool:
        return []
    # A table row is judged by its own cells: the header it is quoted under is every row's, and holding the
    # question's words ("error") it made every row of an error table as relevant as the one asked about.
    unit_scores = [float(x) for x in relevance([query], [_own_text(p) for p in pool])[0]]
    for unit, score in zip(pool, unit_scores, strict=True):
        unit.score += UNIT_WEIGHT * score + (STEPS_BONUS if unit.kind == "steps" else 0.0)
    # Rows of one table compete with each other: a question about the 429 row is not answered by the 413 row,
    # however relevant their table is. A row well under its table's best row is no candidate.
    best_row: dict[str, float] = {}
    for unit, score in zip(pool, unit_scores, strict=True):
        if unit.kind == "row":
            best_row[unit.chunk_id] = max(score, best_row.get(unit.chunk_id, score))
    pool = [unit for unit, score in zip(pool, unit_scores, strict=True)
            if unit.kind != "row" or score >= best_row[unit.chunk_id] - ROW_MARGIN]
    picked: list[Passage] = []
    used = 0
    taken = {p.text for p in chosen}
    ranked = sorted(pool, key=lambda p: (-p.score, p.order))
    floor = ranked[0].score - UNIT_MARGIN
    for unit in ranked:
        if len(picked) >= PART_UNITS or unit.score < floor:
            break
        if unit.text in taken or _overlapping(unit, [*chosen, *picked]):
            continue
        cost = count_tokens(unit.text)
        if picked and used + cost > PART_TOKENS:
            continue
        picked.append(unit)
        taken.add(unit.text)
        used += cost
    # Shown chunk by chunk (the most relevant first), each chunk's quotes in the order its document has them: an
    # excerpt reads as the document does, not as a list of scores.
    return sorted(picked, key=lambda p: p.order)


def _rows_joined(passages: Sequence[Passage]) -> list[Passage]:
    """``passages`` with consecutive rows of one table (same chunk, same header) joined into one table: its header
    once, the rows in their order (each row is still a verbatim line of its chunk)."""
    out: list[Passage] = []
    for passage in passages:
        last = out[-1] if out else None
        if (last is not None and passage.kind == last.kind == "row" and passage.chunk_id == last.chunk_id
                and passage.text.rsplit("\n", 1)[0] == last.text.split("\n")[0] + "\n" + last.text.split("\n")[1]):
            out[-1] = Passage(f"{last.text}\n{passage.text.rsplit(chr(10), 1)[1]}", last.chunk_id, last.score,
                              last.order, kind="row")
        else:
            out.append(passage)
    return out


def _own_text(passage: Passage) -> str:
    """A passage's own words: a table row without the header it is quoted under."""
    return passage.text.splitlines()[-1] if passage.kind == "row" else passage.text


def _quoted_lines(passages: Sequence[Passage]) -> list[str]:
    """The answer's lines quoting ``passages``: a block (code, table, steps) whole with its citation under it, a
    list item with its own marker (verbatim: the item as the document wrote it, which a reader or a check matching
    it against the source finds word for word), a sentence as a bullet; each with its chunk id."""
    lines: list[str] = []
    for passage in _rows_joined(passages):
        if passage.kind == "code":  # source code: fenced, so it reads (and is checked) as code
            lines += ["", "```", passage.text, "```", f"[{passage.chunk_id}]", ""]
        elif "\n" in passage.text:
            block = passage.text
            if sum(bool(FENCE_LINE.match(line)) for line in block.splitlines()) % 2:
                block += "\n```"  # cut inside a code fence (a trimmed chunk): closed, so its citation is no code
            lines += ["", block, "", f"[{passage.chunk_id}]", ""]
        elif LIST_MARKER.match(passage.text):
            lines.append(f"{passage.text.strip()} [{passage.chunk_id}]")
        else:
            lines.append(f"- {passage.text} [{passage.chunk_id}]")
    return lines
