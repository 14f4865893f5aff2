"""Coverage of a question's parts: filling the context part by part, and deciding whether anything answers.

* ``fill_by_parts``: the final context of a question with several parts. Every part's best evidence goes in
  before any part gets its second best (round robin over the ranked lists of the whole question and of each
  part), a chunk already held (or inside / around one held) is not taken twice, and a list prefers a section not
  yet represented, so an enumeration spreads across documents and sections instead of piling up in one.
* ``score_parts``: how well the held context supports each part: for each part, the held chunk with the highest
  calibrated relevance to the part's query (the hybrid confidence of ``rag_core.retrieval.confidence``: the mean
  of the MiniLM cosine's calibrated probability and the part's term coverage).
* ``decide_found``: whether the documents answer the question at all. A question is answered when its best
  evidence is strong enough, and not when the thing it asks about is named nowhere in the documents (a product,
  format or library name that no indexed chunk contains), which is how most unanswerable questions look: they
  ask about something the documents never mention, in words that otherwise sound like the documents' own. A
  product's name the documents mention only away from the evidence found (``names_only_elsewhere``: Redis in a
  changelog, asked about as a session store) decides the same way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rag_core.budget import fit_in_order, hit_tokens
from rag_core.errors import EmbeddingError
from rag_core.retrieval.confidence import calibrate_confidence
from rag_core.retrieval.terms import content_terms
from rag_core.types import Chunk, Hit

# A part is covered when its best held chunk has at least this hybrid confidence.
PART_COVERED = 0.45
# Below this best evidence (hybrid confidence) nothing retrieved is relevant at all: "not found".
ANSWER_FLOOR = 0.15
# A name the documents never mention decides "not found" when removing it from the question moves the
# question's embedding at least this far (1 - cosine): the question is about it, not just mentioning it.
NAME_CENTRALITY = 0.05
# How many keyword hits for a name are read to find the name itself (not only its stem).
KNOWN_DEPTH = 5
# The same for a name of several words: each of its words alone also ranks, so the phrase is read deeper.
PHRASE_DEPTH = 20
# How deep each ranked list is read while filling (beyond, a list is exhausted); hits the whole question's list
# offers per round; how far ahead a list looks for a hit from a new section when spreading.
FILL_DEPTH = 12
WHOLE_PER_ROUND = 2
SPREAD_WINDOW = 3
_NAME = re.compile(r"(?<![\w`])(?:[A-Za-z][a-z]*[A-Z]\w*|[A-Z]\w*\d\w*|[A-Z][a-z]+)(?![\w`])")
# Adjacent capitalised words (a name of several words), separated by spaces only.
_NAME_RUN = re.compile(r"(?<![\w`])[A-Z]\w*(?:[ \t]+[A-Z]\w*)+(?![\w`])")
# A name of capitalised pieces joined by hyphens: an HTTP header ("Accept-Version", "X-Request-ID"), a product.
_HYPHEN_NAME = re.compile(r"(?<![\w`/.-])[A-Z][A-Za-z0-9]*(?:-[A-Z][A-Za-z0-9]*)+(?![\w`/-])")
# A capitalised word with no other capital ("Cloud", not "JSON" or "TypeScript").
_TITLE_WORD = re.compile(r"[A-Z][a-z]+")
_QUOTED = re.compile(r"`[^`]*`|'[^'\n]{1,80}'|\"[^\"\n]{1,120}\"|\u201c[^\u201d]*\u201d|\u2018[^\u2019]*\u2019")


@dataclass(slots=True)
class PartCoverage:
    """One part of the question: covered or not, by which chunks, with what confidence."""

    text: str
    query: str
    role: str
    covered: bool = False
    confidence: float = 0.0
    chunk_ids: list[str] = field(default_factory=list)
    # The text of the part this one refers back to (its pronouns name what that part names); "" if none.
    refers_to: str = ""
    # Every chunk scored at least PART_COVERED for this part (its evidence; not in ``to_dict``).
    supporting: list[str] = field(default_factory=list)
    # How the part's evidence was scored (the embedder and its id; not in ``to_dict``), so that a quote from it is
    # scored the same way (``quote_relevance``).
    embed: Callable[[list[str]], np.ndarray] | None = field(default=None, repr=False, compare=False)
    embedder_id: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "query": self.query, "role": self.role, "covered": self.covered,
                "confidence": round(self.confidence, 4), "chunk_ids": list(self.chunk_ids)}


def _overlaps(a: Chunk, b: Chunk) -> bool:
    return a.id == b.id or (a.doc_id == b.doc_id and a.start < b.end and b.start < a.end)


def fill_by_parts(lists: Sequence[Sequence[Hit]], budget: int, cost: Callable[[Hit], int] | None = None,
                  spread: bool = False, lead: int = WHOLE_PER_ROUND) -> list[Hit]:
    """Round robin over ``lists`` (the whole question's first, then each part's; best first) into ``budget``.

    Round ``r`` offers the ``r``-th hit of every list (the first list, the whole question's search, offers
    ``lead`` hits a round: it is the strongest single ranking, and a part's list only adds what it misses). A hit
    already in the context, or overlapping one, is passed over; one too big for what is left is skipped so a
    smaller one can still use the room. ``spread``: a list whose hit lies in a section already in the context
    offers its next hit from a new section instead, if one is among its next ``SPREAD_WINDOW`` (an enumeration's
    items live in different places).
    """
    size = hit_tokens if cost is None else (lambda hit, _: cost(hit))
    return fit_in_order(lambda kept: _offers(lists, lead, spread, kept), budget, size, keep_first=True).kept


def _section(hit: Hit) -> tuple[str, tuple[str, ...]]:
    return hit.chunk.doc_id, tuple(hit.chunk.heading_path)


def _offers(lists: Sequence[Sequence[Hit]], lead: int, spread: bool, kept: Sequence[Hit]) -> Iterator[Hit]:
    """``fill_by_parts``' candidates round by round, given the hits ``kept`` so far (read as they are kept): each
    list's next hit (spread: one from a new section if near), unless it is held already or overlaps a held one."""
    for r in range(FILL_DEPTH):
        offers: list[tuple[Sequence[Hit], int]] = []
        if lists:
            offers += [(lists[0], r * lead + i) for i in range(lead)]
        offers += [(hits, r) for hits in lists[1:]]
        for hits, position in offers:
            if position >= len(hits):
                continue
            hit = hits[position]
            sections = {_section(k) for k in kept} if spread else set()
            if _section(hit) in sections:
                taken = {k.chunk.id for k in kept}
                hit = next((h for h in hits[position:position + SPREAD_WINDOW] if h.chunk.id not in taken
                            and _section(h) not in sections), hit)
            if not any(_overlaps(hit.chunk, k.chunk) for k in kept):  # held already, or inside / around a held one
                yield hit


def embedder_id(index: Any) -> str:
    """The id of ``index``'s embedder (its cosine calibration is chosen by it); "" for an index without one."""
    return str(getattr(getattr(index, "embedder", None), "id", ""))


def _word(text: str, flags: int = 0) -> re.Pattern[str]:
    """``text`` as a whole word (not inside a longer one)."""
    return re.compile(rf"(?<!\w){re.escape(text)}(?!\w)", flags)


def relevance(queries: Sequence[str], chunks: Sequence[Chunk], embed: Callable[[list[str]], np.ndarray] | None,
              embedder_id: str = "") -> np.ndarray:
    """Hybrid confidence of each chunk (columns) for each query (rows), as the retriever calibrates it."""
    return text_relevance(queries, [c.text for c in chunks], embed, embedder_id)


def text_relevance(queries: Sequence[str], texts: Sequence[str], embed: Callable[[list[str]], np.ndarray] | None,
                   embedder_id: str = "") -> np.ndarray:
    """Hybrid confidence of each text (columns) for each query (rows), as the retriever calibrates it."""
    if not queries or not texts:
        return np.zeros((len(queries), len(texts)), dtype=np.float32)
    held = [set(content_terms(t)) for t in texts]  # each text's terms once, not once per query
    coverage = np.zeros((len(queries), len(texts)), dtype=np.float32)
    for i, query in enumerate(queries):
        terms = content_terms(query)
        if terms:
            coverage[i] = [sum(term in present for term in terms) / len(terms) for present in held]
    if embed is None:
        return coverage
    try:
        vectors = np.asarray(embed(list(queries) + list(texts)), dtype=np.float32)
    except EmbeddingError:  # the embedding endpoint is down: term coverage alone, as without an embedder
        return coverage
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    cosines = vectors[: len(queries)] @ vectors[len(queries):].T
    out = np.zeros_like(coverage)
    for i in range(len(queries)):
        for j in range(len(texts)):
            out[i, j] = calibrate_confidence("hybrid", cosine=float(cosines[i, j]), coverage=float(coverage[i, j]),
                                             embedder_id=embedder_id)
    return out


def score_parts(parts: Sequence[Any], hits: Sequence[Hit], embed: Callable[[list[str]], np.ndarray] | None,
                embedder_id: str = "") -> list[PartCoverage]:
    """Each part's best supporting chunks in ``hits`` (see the module docstring)."""
    chunks = [h.chunk for h in hits]
    scores = relevance([p.query for p in parts], chunks, embed, embedder_id)
    out = []
    for i, part in enumerate(parts):
        row = scores[i] if len(chunks) else np.zeros(0)
        order = [int(j) for j in np.argsort(-row)] if len(chunks) else []
        best = float(row[order[0]]) if order else 0.0
        cited = [chunks[j].id for j in order[:2] if float(row[j]) >= max(PART_COVERED, best - 0.05)]
        out.append(PartCoverage(text=part.text, query=part.query, role=getattr(part, "role", "question"),
                                covered=best >= PART_COVERED, confidence=best, chunk_ids=cited,
                                refers_to=getattr(part, "refers_to", ""),
                                supporting=[chunks[j].id for j in order if float(row[j]) >= PART_COVERED],
                                embed=embed, embedder_id=embedder_id))
    return out


def quote_relevance(parts: Sequence[PartCoverage], texts: Sequence[str]) -> np.ndarray:
    """Each text's (columns) relevance to each part's query (rows), scored as ``score_parts`` scored the part's
    chunks (hybrid confidence, with the first part's embedder; term coverage alone when it has none)."""
    if not parts:
        return np.zeros((0, len(texts)), dtype=np.float32)
    return text_relevance([p.query for p in parts], texts, parts[0].embed, parts[0].embedder_id)


def name_candidates(question: str) -> list[str]:
    """Words of ``question`` that look like names of things: CamelCase, acronyms, capitalised words inside a
    sentence, capitalised words with digits. Not: a sentence's first word, a quoted or backticked example (the
    user's own ``'UserResponse'``), a piece of a path, file name or URL."""
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(question)]
    names = []
    for match in _NAME.finditer(question):
        start, end = match.span()
        if any(a <= start < b for a, b in quoted):
            continue
        before = question[:start].rstrip()
        after = question[end:end + 2]
        if not before or before[-1] in ".?!:;\n\"'(" or question[start - 1:start] in "/.-_" \
                or after[:1] in "/_-(" or re.match(r"\.\w", after):
            continue
        names.append((start, match.group(0)))
    for match in _HYPHEN_NAME.finditer(question):  # one name, not pieces ("Accept-Version": the header)
        start = match.start()
        before = question[:start].rstrip()
        if before and before[-1] not in ".?!:;\n\"'(" and not any(a <= start < b for a, b in quoted) \
                and not re.match(r"\.\w", question[match.end():match.end() + 2]):
            names.append((start, match.group(0)))
    return list(dict.fromkeys(name for _, name in sorted(names)))


def spelled_out(acronym: str, texts: Sequence[str]) -> bool:
    """True when one of ``texts`` holds words whose initials spell ``acronym`` ("Django REST Framework": DRF)."""
    letters = acronym.upper()
    if not (2 <= len(letters) <= 6 and letters.isalpha()):
        return False
    words = r"\W+".join(rf"{letter}[\w-]*" for letter in letters)
    pattern = re.compile(rf"(?<!\w){words}(?!\w)")
    return any(pattern.search(text) for text in texts)


def name_phrases(question: str, names: Sequence[str]) -> list[str]:
    """Runs of two or more adjacent ``names`` in ``question`` ("AWS Secrets Manager", "Protocol Buffers"): the
    name of one thing, which the documents may not hold even when they hold each of its words."""
    wanted = set(names)
    phrases = []
    for match in _NAME_RUN.finditer(question):
        words = match.group(0).split()
        if len(words) >= 2 and all(w in wanted for w in words):
            phrases.append(" ".join(words))
    return list(dict.fromkeys(phrases))


def _shifts(embed: Callable[[list[str]], np.ndarray], pairs: Sequence[tuple[str, str]]) -> list[float]:
    """For each ``(text, name)``: how far removing ``name`` moves ``text``'s embedding (1 − cosine)."""
    if not pairs:
        return []
    texts = [t for text, name in pairs for t in (text, _word(name).sub(" ", text))]
    vectors = np.asarray(embed(texts), dtype=np.float32)
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    return [float(1.0 - vectors[2 * i] @ vectors[2 * i + 1]) for i in range(len(pairs))]


def unknown_names(question: str, known: Callable[[str], bool],
                  embed: Callable[[list[str]], np.ndarray] | None = None, texts: Sequence[str] = (),
                  parts: Sequence[Any] = ()) -> list[str]:
    """Names in ``question`` (``name_candidates``) that no indexed chunk holds and that carry its meaning.

    ``known(word)`` says whether the index holds ``word`` (a keyword search for it finds something); a plural or
    verb form of a known word ("POSTs") is known, and so is an acronym whose words ``texts`` (the retrieved
    chunks) spell out. A missing word inside a run of names ("AWS Secrets *Manager*") makes the whole run the
    missing name. A missing name counts only when the question is about it: removing it moves the question's
    embedding by at least ``NAME_CENTRALITY`` (1 − cosine), or moves that much the one asking part of ``parts``
    (role "question" or "side") that names it: in "Does it run on PyPy, and how fast is it there compared with
    CPython?" the first question is about PyPy even if the whole is about speed. A passing mention ("building on
    my Mac", a statement setting the scene) decides nothing.
    """
    names = name_candidates(question)

    def missing_word(name: str) -> bool:
        if known(name) or (name.isupper() and spelled_out(name, texts)):
            return False
        return not (len(name) > 3 and name.endswith("s") and known(name[:-1]))

    absent = {n for n in names if missing_word(n)}
    missing: list[str] = []
    for phrase in name_phrases(question, names):
        words = phrase.split()
        # A run of three capitalised words, or of two plain capitalised words ("Apache Avro", "Cloud Run"), names
        # one thing even when each word is known; a run with an acronym or a CamelCase word ("JSON Schema",
        # "ASGI API") is as often two names side by side, so only a missing word makes it missing.
        one_thing = len(words) >= 3 or all(_TITLE_WORD.fullmatch(w) for w in words)
        if absent & set(words) or (one_thing and not known(phrase)):
            missing.append(phrase)
    if not missing and not absent:
        return []
    in_phrases = {w for phrase in missing for w in phrase.split()}
    missing += [n for n in names if n in absent and n not in in_phrases]
    return _central(question, missing, embed, parts)


def _central(question: str, names: Sequence[str], embed: Callable[[list[str]], np.ndarray] | None,
             parts: Sequence[Any]) -> list[str]:
    """The ``names`` the question (or one asking part that names it) is about: removing the name moves its
    embedding at least ``NAME_CENTRALITY``. Without an embedder every name counts."""
    if embed is None or not names:
        return list(names)
    asking = [p for p in parts if getattr(p, "role", "question") in ("question", "side")]
    pairs = [(question, n) for n in names]
    pairs += [(p.text, n) for n in names for p in asking if p.text != question and _word(n).search(p.text)]
    try:
        shifts = _shifts(embed, pairs)
    except EmbeddingError:  # the embedding endpoint is down: every name counts, as without an embedder
        return list(names)
    central = {name for (_, name), shift in zip(pairs, shifts, strict=True) if shift >= NAME_CENTRALITY}
    return [n for n in names if n in central]


def names_only_elsewhere(question: str, known: Callable[[str], bool], texts: Sequence[str],
                         embed: Callable[[list[str]], np.ndarray] | None = None,
                         parts: Sequence[Any] = ()) -> list[str]:
    """Names the question is about that the documents mention, but none of the evidence found for it does.

    Only plain capitalised words count ("Redis", "Rust": a product or language), and only when ``texts`` (the
    evidence) is not empty: the documents name Redis beside Celery or in a changelog, and a question about
    storing sessions in Redis finds session evidence that never names it. Acronyms ("SDK", "IDE") and code names
    ("AuthProperty") are left out: questions use them in passing, or they are spelled differently in the
    evidence, so their absence from it is no sign. A plural in the evidence counts as the name.
    """
    if not texts:
        return []
    candidates = []
    for name in name_candidates(question):
        if not _TITLE_WORD.fullmatch(name) or not known(name):
            continue
        held = re.compile(rf"(?<!\w){re.escape(name)}(?:s|es)?(?!\w)", re.IGNORECASE)
        if not any(held.search(text) for text in texts):
            candidates.append(name)
    return _central(question, candidates, embed, parts)


def decide_found(parts: Sequence[PartCoverage], unknown: Sequence[str],
                 elsewhere: Sequence[str] = ()) -> tuple[bool, str]:
    """Whether the documents answer the question, and why (see the module docstring).

    In a question of several parts, a missing name decides only for the parts that name it: those are not
    covered, and the question is answered when another part is ("the price of the Pro plan, and how do I rotate
    the key?" on documents with no Pro plan still answers the second part). ``elsewhere``: names the documents
    mention, but not in any evidence found for the question (``names_only_elsewhere``); they decide like missing
    names, with their own reason."""
    names = [*unknown, *(n for n in elsewhere if n not in unknown)]
    best = max((p.confidence for p in parts), default=0.0)

    def said(which: Sequence[str]) -> str:
        never = ", ".join(repr(n) for n in which if n not in elsewhere)
        only = ", ".join(repr(n) for n in which if n in elsewhere)
        clauses = [f"the documents never mention {never}"] if never else []
        clauses += [f"no evidence found mentions {only} (the documents name it only elsewhere)"] if only else []
        return " and ".join(clauses)

    if names and len(parts) > 1:
        # A part asks about a name when it names it, or refers back ("its speed there") to a part that does.
        asking = [p for p in parts if any(_word(n).search(p.text) or _word(n).search(p.refers_to) for n in names)]
        for part in asking:
            part.covered, part.chunk_ids = False, []
        others = [p for p in parts if p not in asking]
        # Only when some parts, not all, ask about the missing names can the others answer on their own.
        if asking and others:
            best = max(p.confidence for p in others)
            if any(p.covered for p in others):  # another part has evidence of its own
                return True, (f"{sum(p.covered for p in parts)} of {len(parts)} part(s) covered; {said(names)}, "
                              "which the other part(s) ask about")
    if names:
        return False, f"{said(names)}, which the question is about (best evidence {best:.2f})"
    if best < ANSWER_FLOOR:
        return False, f"nothing retrieved is relevant (best evidence {best:.2f} < {ANSWER_FLOOR:.2f})"
    missing = [p for p in parts if not p.covered]
    if missing:
        return True, f"{len(parts) - len(missing)} of {len(parts)} part(s) covered"
    return True, f"every part covered (best evidence {best:.2f})"


def judge_coverage(question: str, plan: Any, hits: Sequence[Hit], index: Any) -> tuple[list[PartCoverage], bool, str]:
    """Each part's coverage by ``hits`` and whether the documents answer ``question`` (with the reason)."""
    embed = getattr(index, "embed_texts", None)
    coverage = score_parts(plan.parts, hits, embed, embedder_id(index))

    @functools.cache  # both name checks ask about the same words: one keyword search a word per question
    def known(word: str) -> bool:
        # The keyword index matches stems ("PyPy" and "PyPI" share one): the word itself must be in a chunk it finds.
        # A name of several words is read deeper, each of its words being found alone too; a line break may fall
        # between them.
        pieces = word.split()
        exact = re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, pieces)) + r"(?!\w)", re.IGNORECASE)
        depth = KNOWN_DEPTH if len(pieces) == 1 else PHRASE_DEPTH
        return any(exact.search(chunk.text) for chunk, _ in index.keyword_search(word, depth))

    texts = [h.chunk.text for h in hits]
    unknown = unknown_names(question, known, embed, texts, plan.parts)
    elsewhere = [n for n in names_only_elsewhere(question, known, texts, embed, plan.parts) if n not in unknown]
    found, reason = decide_found(coverage, unknown, elsewhere)
    return coverage, found, reason


NOT_FOUND_ANSWER = "The documents do not answer this question."


def not_found_answer(reason: str, hits: Sequence[Hit], closest: int = 3) -> str:
    """The answer of a question the documents do not answer: why, and the closest places (not an answer)."""
    lines = [NOT_FOUND_ANSWER, "", f"Why: {reason}."]
    if hits:
        lines += ["", "Closest places found (not an answer):"]
        for hit in list(hits)[:closest]:
            where = hit.source_name or hit.chunk.doc_id
            if hit.chunk.heading_path:
                where += " › " + " › ".join(hit.chunk.heading_path)
            lines.append(f"- {where} ({hit.chunk.id})")
    return "\n".join(lines)
