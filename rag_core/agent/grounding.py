"""Whether an answer is grounded: every sentence supported by a passage it cites, checked, not assumed.

A sentence is **supported** when one passage it cites (or, citing none, the one passage holding most of its
words, labelled as *attributed by overlap*) holds at least ``SUPPORT_COVERAGE`` of its content terms (one passage,
not the union of several), and every specific it states (a code span, an identifier, a command-line option, a
number, a URL, a quoted string) appears verbatim in the passages it rests on (case and whitespace aside). A code
block is supported when each of its lines is in a passage. A sentence that states nothing checkable (a lead-in,
"The documents do not say.") is neither supported nor unsupported.

A sentence, list item, table row or table **copied verbatim** (whitespace, case and Markdown ticks aside) from the
passage it cites (citing none: from a passage that holds it) is supported, numbers and all; the checks above are
for what is not a copy. A table, a code block and a list item are one unit with their citation, and a citation
written on its own line (how the extractive answer cites a quoted block) belongs to every unit of the block above
it: the header and rows of a quoted table are never attributed by word overlap to another chunk.

An answer is **grounded** when no sentence is unsupported and at least one is supported. An empty answer and a
cut-off one (``[answer cut off ...]``) are never grounded. An extractive answer (quoted passages) is grounded
only when the documents answer the question (the loop's "found" decision) and every quote answers a part of it:
it comes from covered evidence (a passage relevant enough to a covered part, ``rag_core.agent.coverage``), or
the quote itself is that relevant to a part, scored the way the plan scored the part's evidence.

Why: small local models write confident sentences with invented method names, wrong numbers and runaway strings,
and attributing citations by word overlap made every such answer look grounded.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.agent.coverage import PART_COVERED, PartCoverage, quote_relevance
from rag_core.chunking.markdown_blocks import FENCE_LINE, HEADING_LINE, LIST_MARKER
from rag_core.chunking.sentences import sentence_spans
from rag_core.retrieval.terms import content_terms, term_coverage
from rag_core.types import Hit

# One passage must hold at least this share of a sentence's content terms for it to support the sentence.
SUPPORT_COVERAGE = 0.6
# A sentence with fewer content terms than this and no specifics states nothing checkable.
MIN_TERMS = 2
# What the loop and the llm-answer policy append to an answer cut off by max_tokens or the time budget.
CUT_OFF_MARK = re.compile(r"\[answer cut off\b", re.IGNORECASE)
# Notes the loop and the extractive answerer add around quoted passages (not claims about the documents).
NOTE_LINES = (re.compile(r"^Extractive answer \("), re.compile(r"^No passage found covers:"))
_MARKER = re.compile(r"(?<!!)\[([^\[\]\n]{1,200})\](?!\()")
# A fence opened and closed on one line ("```Python from x import y```"): a small model's one-line code block. Tried
# before markdown_blocks.FENCE_LINE, which would read its line as a block's opening.
_ONE_LINE_FENCE = re.compile(r"^\s*```(?:([A-Za-z]+)\s+)?([^`]+?)```(.*)$")
_LEAD_MARKERS = re.compile(r"(?:\s*\[[^\[\]\n]{1,200}\])*")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_URL = re.compile(r"https?://[^\s)\]>\"'`]+")
_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
_QUOTED = re.compile(r"\"([^\"\n]{2,120})\"|\u201c([^\u201d\n]{2,120})\u201d")
_IDENTIFIER = re.compile(r"(?<![\w.])(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:\(\))?(?![\w(])")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
_CAMEL = re.compile(r"[a-z][A-Z]|[A-Z]{2}[a-z]")
# A bracketed word that names no held chunk ("[nope]", "[9]"): a citation gone wrong, not a claim's words.
_STRAY_MARKER = re.compile(r"\[[^\[\]\s]{1,40}\]")
# Words an answer wraps around the documents' own ("use X", "see Y", "the documents say"): not evidence either way.
ANSWER_WORDS = frozenset(content_terms("use uses used using see also run set need call example documents document "
                                       "docs say says said mention mentions"))


@dataclass(slots=True)
class SentenceSupport:
    """One sentence (or list item, or code block) of an answer and whether the passages it rests on support it.

    ``supported`` is None when the sentence states nothing checkable; ``chunk_ids`` are the passages it cites or,
    when ``attributed``, the passage found for it by word overlap (not a citation of the model's own)."""

    sentence: str
    supported: bool | None
    reason: str
    chunk_ids: list[str] = field(default_factory=list)
    attributed: bool = False


@dataclass(slots=True)
class Grounding:
    """The verdict on one answer: ``grounded``, why (``reason``) and each sentence's support."""

    grounded: bool
    reason: str
    sentences: list[SentenceSupport] = field(default_factory=list)

    @property
    def unsupported(self) -> list[dict[str, str]]:
        """``[{sentence, reason}]`` of every unsupported sentence (what ``ask --json`` lists)."""
        return [{"sentence": s.sentence, "reason": s.reason} for s in self.sentences if s.supported is False]

    @property
    def attributed(self) -> list[str]:
        """Chunk ids the check attributed sentences to by word overlap (the model cited none for them)."""
        return list(dict.fromkeys(c for s in self.sentences if s.attributed for c in s.chunk_ids))


def normalise(text: str) -> str:
    """Lower-cased text with Markdown emphasis and code ticks removed and whitespace collapsed (for verbatim checks)."""
    return " ".join(re.sub(r"[`*]", "", text).lower().split())


def specifics(claim: str) -> list[tuple[str, str]]:
    """(kind, text) of what ``claim`` states exactly: code spans, URLs, options, quoted strings, identifiers
    (snake_case, dotted names, calls, CamelCase) and numbers."""
    found: list[tuple[str, str]] = []
    spans = [m.group(1).strip() for m in _CODE_SPAN.finditer(claim)]
    found += [("code", s) for s in spans if s]
    rest = _CODE_SPAN.sub(" ", claim)
    urls = [u.rstrip(".,;:!?") for u in _URL.findall(rest)]
    found += [("URL", u) for u in urls]
    rest = _URL.sub(" ", rest)
    found += [("quoted string", next(g for g in m.groups() if g)) for m in _QUOTED.finditer(rest)]
    found += [("option", o) for o in _OPTION.findall(rest)]
    rest = _OPTION.sub(" ", rest)
    for match in _IDENTIFIER.finditer(rest):
        word = match.group(0)
        parts = word.rstrip("()").split(".")
        if word.endswith("()") or "_" in word.strip("_") or (len(parts) > 1 and all(len(p) > 1 for p in parts)):
            found.append(("identifier", word))
        elif _CAMEL.search(word):
            found.append(("name", word))
    rest = _IDENTIFIER.sub(" ", rest)
    found += [("number", n) for n in _NUMBER.findall(rest)]
    return list(dict.fromkeys(found))


def _holds(haystack: str, kind: str, value: str) -> bool:
    """Whether normalised ``haystack`` holds ``value`` verbatim (a number not as part of a longer number)."""
    needle = normalise(value)
    if not needle:
        return True
    if kind == "number":
        forms = {needle, needle.replace(",", "")}
        return any(re.search(rf"(?<![\d.,]){re.escape(form)}(?![\d]|[.,]\d)", haystack) for form in forms)
    if kind == "identifier" and needle.endswith("()"):
        return needle[:-2] in haystack
    return needle in haystack


def _units(answer: str) -> list[tuple[str, str]]:
    """(kind, text) of the answer's claims in order: ``code`` blocks, ``table`` blocks (consecutive table lines),
    ``line`` items and ``prose`` sentences; ``note`` for headings, lead-ins and the answerer's own notes. Each
    carries the citation markers written for it (``_attach_citations``)."""
    units: list[tuple[str, str]] = []
    paragraph: list[str] = []
    block: list[str] | None = None
    table_closed = True  # the next table line starts a new table

    def flush() -> None:
        if paragraph:
            joined = " ".join(paragraph)
            units.extend(("prose", joined[s:e]) for s, e in sentence_spans(joined, 0, len(joined)))
            paragraph.clear()

    for line in answer.splitlines():
        if block is not None:
            block.append(line)
            if FENCE_LINE.match(line):
                units.append(("code", "\n".join(block)))
                block = None
            continue
        one_line = _ONE_LINE_FENCE.match(line)
        if one_line:
            flush()
            markers = _LEAD_MARKERS.match(one_line.group(3))
            units.append(("code", f"```\n{one_line.group(2).strip()}\n``` {markers.group(0).strip()}"))
            rest = one_line.group(3)[markers.end():].lstrip(" .;,")
            if rest.strip():
                paragraph.append(rest.strip())
        elif FENCE_LINE.match(line):
            flush()
            block = [line]
        elif not line.strip() or HEADING_LINE.match(line) or any(p.match(line.strip()) for p in NOTE_LINES):
            flush()
            if line.strip():
                units.append(("note", line.strip()))
        elif line.lstrip().startswith("|"):
            flush()
            if units and units[-1][0] == "table" and not table_closed:
                units[-1] = ("table", f"{units[-1][1]}\n{line.strip()}")
            else:
                units.append(("table", line.strip()))
            table_closed = False
            continue
        elif LIST_MARKER.match(line):
            flush()
            units.append(("line", LIST_MARKER.sub("", line).strip()))
        elif _LEAD_MARKERS.fullmatch(line.strip()):
            flush()
            units.append(("cite", line.strip()))
        else:
            paragraph.append(line.strip())
        table_closed = True
    flush()
    if block is not None:
        units.append(("code", "\n".join(block)))
    return _attach_citations(units)


def _attach_citations(units: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Units with the citations written after them moved onto them: one after a sentence's full stop ("... key.
    [1] Next ...") belongs to that sentence; one on its own line (how the extractive answer cites a quoted table,
    code block or list) to every unit since the last citation or note, so a block is checked with its citation."""
    merged: list[tuple[str, str]] = []
    since = 0  # the first unit the next citation on its own line applies to
    for kind, text in units:
        if kind == "cite":
            for i in range(since, len(merged)):
                merged[i] = (merged[i][0], f"{merged[i][1]} {text}")
            since = len(merged)
            continue
        lead = _LEAD_MARKERS.match(text)
        if lead.group(0) and merged and merged[-1][0] != "note":
            merged[-1] = (merged[-1][0], f"{merged[-1][1]} {lead.group(0).strip()}")
            text = text[lead.end():].strip()
            since = len(merged)
            if not text:
                continue
        merged.append((kind, text))
        if kind == "note" or _MARKER.search(text):
            since = len(merged)
    return merged


def _quoted_lines(claim: str) -> list[str]:
    """The normalised lines of ``claim`` (citation markers already removed) a verbatim copy must hold: its lines
    with two or more word characters, fences and a list item's marker aside, a space before punctuation closed
    (what is left of "the key [1].")."""
    lines = []
    for line in claim.splitlines():
        if FENCE_LINE.match(line):
            continue
        line = re.sub(r"\s+([.,;:!?])", r"\1", LIST_MARKER.sub("", line.strip()))
        if len(re.findall(r"\w", line)) >= 2:
            lines.append(normalise(line))
    return lines


def quoted_verbatim(claim: str, passage: str) -> bool:
    """Whether ``claim`` (a sentence, list item, table row, table or code block, without its citation markers)
    is copied verbatim from normalised ``passage``: each of its lines (``_quoted_lines``) stands in the passage
    as whole words (a table row quoted under its header need not follow the header there)."""
    lines = _quoted_lines(claim)
    return bool(lines) and all(_holds_words(passage, line) for line in lines)


def _holds_words(haystack: str, needle: str) -> bool:
    """Whether ``needle`` stands in ``haystack`` not inside a longer word or number ("4625", not in "14625")."""
    start = haystack.find(needle)
    while start >= 0:
        end = start + len(needle)
        before = haystack[start - 1:start]
        after = haystack[end:end + 1]
        if not (needle[0].isalnum() and (before.isalnum() or before == "_")) \
                and not (needle[-1].isalnum() and (after.isalnum() or after == "_")):
            return True
        start = haystack.find(needle, start + 1)
    return False


def is_verbatim_quote(text: str, hits: Sequence[Hit]) -> bool:
    """Whether ``text`` (an answer's unit, citation markers and all) is a verbatim copy of one passage of ``hits``."""
    texts = {h.chunk.id: normalise(h.chunk.text) for h in hits}
    _, claim = _cited(text, texts)
    return any(quoted_verbatim(claim, passage) for passage in texts.values())


def _cited(text: str, held: Collection[str]) -> tuple[list[str], str]:
    """Chunk ids ``text`` cites (``[id]`` or ``[id, id]`` of held chunks) and the text without those markers."""
    ids: list[str] = []

    def strip(match: re.Match[str]) -> str:
        names = [n.strip() for n in re.split(r"[,;]", match.group(1)) if n.strip()]
        if names and all(n in held for n in names):
            ids.extend(n for n in names if n not in ids)
            return " "
        return match.group(0)

    return ids, _MARKER.sub(strip, text)


def _check_code(block: str, hits: Sequence[Hit], texts: dict[str, str]) -> SentenceSupport:
    lines = [normalise(line) for line in block.splitlines()[1:] if not FENCE_LINE.match(line)]
    lines = [line for line in lines if len(re.findall(r"\w", line)) >= 2]
    if not lines:
        return SentenceSupport(block, None, "an empty code block")
    best = max(hits, key=lambda h: sum(line in texts[h.chunk.id] for line in lines), default=None)
    missing = [line for line in lines if not any(line in texts[h.chunk.id] for h in hits)]
    if missing:
        return SentenceSupport(block, False, f"code line `{missing[0][:80]}` is in no passage it rests on")
    return SentenceSupport(block, True, "every code line is in a retrieved passage",
                           [best.chunk.id] if best is not None else [], attributed=True)


def check_sentence(text: str, hits: Sequence[Hit], texts: dict[str, str], everything: str,
                   context_terms: dict[str, set[str]]) -> SentenceSupport:
    """The support of one claim ``text`` (see the module docstring)."""
    cited, claim = _cited(text, texts)
    claim = _STRAY_MARKER.sub(" ", claim)
    shown = " ".join(claim.split())
    stated = specifics(claim)
    terms = [t for t in content_terms(claim) if t not in ANSWER_WORDS]
    if len(terms) < MIN_TERMS and not stated:
        return SentenceSupport(shown, None, "states nothing to check", cited)
    copied = [c for c in (cited or texts) if quoted_verbatim(claim, texts[c])]
    if copied:  # a verbatim copy is supported, numbers and all: by the passage it cites, or (citing none) holds it
        where = "the passage it cites" if cited else "a retrieved passage (it cites none)"
        return SentenceSupport(shown, True, f"quoted verbatim from {where}", cited or copied, attributed=not cited)
    attributed = False
    if not cited:
        scored = [(sum(t in context_terms[h.chunk.id] for t in terms) / max(len(terms), 1), h.chunk.id) for h in hits]
        coverage, best = max(scored, default=(0.0, ""))
        if coverage < SUPPORT_COVERAGE:
            return SentenceSupport(shown, False, f"cites no passage, and none holds most of its words (best "
                                   f"{coverage:.0%})")
        cited, attributed = [best], True
    if terms:
        coverage, best = max((term_coverage(terms, texts[c]), c) for c in cited)
        if coverage < SUPPORT_COVERAGE:
            where = "the passage it cites does not say" if len(cited) == 1 else "none of the passages it cites says"
            return SentenceSupport(shown, False, f"{where} this ({coverage:.0%} of its words in "
                                   f"{best}, {SUPPORT_COVERAGE:.0%} needed)", cited, attributed)
    rested = " ".join(texts[c] for c in cited)
    for kind, value in stated:
        haystack = everything if kind == "name" else rested  # a product name may stand anywhere in the context
        if not _holds(haystack, kind, value):
            return SentenceSupport(shown, False, f"states the {kind} {value[:80]!r}, which "
                                   f"{'the passage it rests on' if len(cited) == 1 else 'no passage it rests on'} "
                                   "does not contain", cited, attributed)
    return SentenceSupport(shown, True, "supported", cited, attributed)


def check_grounding(answer: str, hits: Sequence[Hit], *, cut_off: bool = False, extractive: bool = False,
                    covered: Collection[str] | None = None, question: str = "",
                    parts: Sequence[PartCoverage] | None = None) -> Grounding:
    """Check every sentence of ``answer`` against the passages of ``hits`` (see the module docstring).

    ``extractive``: the answer quotes passages; each quote must then answer a part of the question: its passage
    among ``covered`` (the ids of covered evidence), or the quote itself as relevant to one of ``parts`` (default:
    ``covered.parts``, as ``covered_evidence`` returns it) as the plan requires of a part's evidence
    (``_answers_no_part``). ``question``: names it mentions count as stated by the context too."""
    text = answer.strip()
    if not text:
        return Grounding(False, "ungrounded: the answer is empty")
    if cut_off or CUT_OFF_MARK.search(text):
        return Grounding(False, "ungrounded: the answer was cut off before it ended",
                         [SentenceSupport(_last_words(text), False, "the answer was cut off before it ended")])
    if not hits:
        return Grounding(False, "ungrounded: nothing was retrieved, so the answer rests on no document")
    texts = {h.chunk.id: normalise(h.chunk.text) for h in hits}
    everything = " ".join([*texts.values(), normalise(question)])
    context_terms = {h.chunk.id: set(content_terms(h.chunk.text)) for h in hits}
    checks: list[SentenceSupport] = []
    for kind, unit in _units(text):
        if kind == "note":
            continue
        if kind == "code":
            cited, _ = _cited(unit, texts)
            # a cited block must be in the passages it cites; an uncited one in any (attributed to the best)
            check = _check_code(unit, [h for h in hits if h.chunk.id in cited] if cited else hits, texts)
            if cited:
                check.chunk_ids, check.attributed = cited, False
            checks.append(check)
        elif kind == "table":
            checks += _check_table(unit, hits, texts, everything, context_terms)
        else:
            checks.append(check_sentence(unit, hits, texts, everything, context_terms))
    if extractive and covered is not None:
        _answers_no_part(checks, covered, list(parts if parts is not None else getattr(covered, "parts", ())))
    unsupported = [c for c in checks if c.supported is False]
    supported = [c for c in checks if c.supported]
    if unsupported:
        return Grounding(False, f"ungrounded: {len(unsupported)} of {len(unsupported) + len(supported)} sentence(s) "
                         f"not supported by the passages they rest on (first: {unsupported[0].reason})", checks)
    if not supported:
        return Grounding(False, "ungrounded: the answer states nothing a retrieved passage supports", checks)
    attributed = [c for c in supported if c.attributed]
    how = f"; {len(attributed)} attributed by word overlap, not cited" if attributed and not extractive else ""
    return Grounding(True, f"grounded: {len(supported)} sentence(s), each supported by a retrieved passage{how}",
                     checks)


def _check_table(block: str, hits: Sequence[Hit], texts: dict[str, str], everything: str,
                 context_terms: dict[str, set[str]]) -> list[SentenceSupport]:
    """The support of a table block with its citation: one unit when it is copied verbatim (row by row) from the
    passage it cites (or, citing none, from one that holds it); else each row checked as a sentence citing what
    the table cites."""
    cited, claim = _cited(block, texts)
    shown = "\n".join(" ".join(line.split()) for line in claim.strip().splitlines())
    copied = [c for c in (cited or texts) if quoted_verbatim(claim, texts[c])]
    if copied:
        where = "the passage it cites" if cited else "a retrieved passage (it cites none)"
        return [SentenceSupport(shown, True, f"table quoted verbatim from {where}", cited or copied[:1],
                                attributed=not cited)]
    markers = f" [{', '.join(cited)}]" if cited else ""
    return [check_sentence(row.strip() + markers, hits, texts, everything, context_terms)
            for row in claim.strip().splitlines() if row.strip()]


def _answers_no_part(checks: list[SentenceSupport], covered: Collection[str], parts: Sequence[PartCoverage]) -> None:
    """Mark unsupported each supported quote that answers no part of the question: its passages are not among
    ``covered`` and the quote itself scores under ``PART_COVERED`` for every part, by the relevance the plan
    scored the part's evidence with (``coverage.quote_relevance``). A part the plan un-covered although its
    evidence scored (the thing it asks about is named nowhere) is answered by nothing."""
    held = set(covered)
    outside = [c for c in checks if c.supported and not set(c.chunk_ids) & held]
    if not outside:
        return
    eligible = [p for p in parts if p.covered or p.confidence < PART_COVERED]
    quotes = [_MARKER.sub(" ", c.sentence) for c in outside]
    scores = quote_relevance(eligible, quotes)
    for j, check in enumerate(outside):
        best = int(scores[:, j].argmax()) if len(eligible) else -1
        if best >= 0 and float(scores[best, j]) >= PART_COVERED:
            check.reason += (f"; answers the part {' '.join(eligible[best].text.split())[:80]!r} (relevance "
                             f"{float(scores[best, j]):.2f}, {PART_COVERED:.2f} needed)")
            continue
        check.supported = False
        check.reason = "quoted from a passage that answers no part of the question (not covered evidence)"


def _last_words(text: str, limit: int = 160) -> str:
    body = CUT_OFF_MARK.split(text)[0].strip() or text
    return body if len(body) <= limit else "…" + body[-limit:]


def citation_sources(citations: Sequence[str], model_cited: Collection[str], attributed: Collection[str],
                     extractive: bool) -> list[dict[str, Any]]:
    """Each passage an answer rests on and who chose it: ``model`` (cited by the model), ``quote`` (an extractive
    answer's quote) or ``overlap`` (attributed by word overlap: ``attributed`` true, never the model's own)."""
    out: list[dict[str, Any]] = []
    for chunk_id in dict.fromkeys([*citations, *attributed]):
        if extractive:
            source = "quote"
        elif chunk_id in model_cited:
            source = "model"
        else:
            source = "overlap"
        out.append({"chunk_id": chunk_id, "source": source, "attributed": source == "overlap"})
    return out


def covered_evidence(parts: Sequence[Any], hits: Sequence[Hit]) -> set[str]:
    """Ids of the held chunks that are evidence for a covered part of the question: the part's own evidence
    (``PartCoverage.chunk_ids``), any chunk as relevant to it as ``coverage.PART_COVERED`` requires (scored once,
    by ``coverage.score_parts``: ``PartCoverage.supporting``), and the other held chunks of those chunks' sections
    (the command block under the prose that explains it: a code block alone scores low against a question in
    words, yet it is the answer to "how do I rotate a key?")."""
    return CoveredEvidence({c for p in parts if p.covered for tier in part_evidence(p, hits) for c in tier}, parts)


class CoveredEvidence(set):
    """The ids of covered evidence (a set of chunk ids) with the parts they were judged for, so a quote outside
    them can still be scored against each part by the plan's own relevance (``check_grounding``)."""

    def __init__(self, ids: Collection[str] = (), parts: Sequence[Any] = ()) -> None:
        super().__init__(ids)
        self.parts = list(parts)


def part_evidence(part: Any, hits: Sequence[Hit]) -> list[list[str]]:
    """Ids of the held chunks that are evidence for one part (see ``covered_evidence``), in two tiers: its own
    best evidence (``chunk_ids``) with the other held chunks of their sections, then every chunk that supports
    it with theirs."""
    chunks = [h.chunk for h in hits]

    def with_sections(ids: list[str]) -> list[str]:
        sections = {(c.doc_id, tuple(c.heading_path)) for c in chunks if c.id in ids and c.heading_path}
        return list(dict.fromkeys([*ids, *(c.id for c in chunks if (c.doc_id, tuple(c.heading_path)) in sections)]))

    first = with_sections(list(part.chunk_ids))
    return [first, [c for c in with_sections(list(dict.fromkeys([*part.chunk_ids, *part.supporting])))
                    if c not in first]]
