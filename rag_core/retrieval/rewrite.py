"""Query rewriting: strip conversational framing, keep technical terms, and use the previous queries.

A search engine scores every word it gets, so "hi, could you please tell me how X works? thanks" spends
weight on "please" and "thanks". The rewrite removes only framing at the start and end of the query; the core
(identifiers, quoted strings, code, numbers) is never touched. A short follow-up such as "and its default?"
borrows the subject terms of the latest previous query, so it can be searched on its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_core.retrieval.terms import content_terms

_LEADING_FRAMING = re.compile(
    r"^(?:(?:hi|hello|hey|ok(?:ay)?|so|well|um+|quick question)\b[\s,.!:;-]*"
    r"|(?:please|kindly)\b[\s,]*"
    r"|(?:could|can|would|will) you(?: please)?"
    r"(?: (?:tell|show|explain to|help) me| explain| find| look up| check)?\b\s*"
    r"|(?:i (?:want|would like|'d like|need) to (?:know|understand|learn|find out)|i(?:'m| am) (?:wondering|curious)"
    r"|i was wondering|do you know|tell me|show me|help me (?:understand|find)|explain(?: to me)?)\b[\s,:]*"
    r"|(?:about|whether|if)\s+(?=\w))",
    re.IGNORECASE,
)
# One trailing phrase, matched only on a short tail: the old single pattern
# r"(?:[\s,.;!]*(?:please|...))+[\s.!]*$" retried every run of separators from each position (quadratic).
_TRAILING_PHRASE = re.compile(
    r"(?:please|thanks?(?: you)?(?: (?:so|very) much)?|thx|cheers|for me|if possible)$", re.IGNORECASE
)
_TRAILING_TAIL_CHARS = 32  # longer than the longest phrase ("thanks you very much")
_FOLLOW_UP_START = re.compile(r"^(?:and|also|what about|how about|same for|and what about|what of)\b", re.IGNORECASE)
_PRONOUN = re.compile(r"\b(?:it|its|it's|that|this|these|those|they|them|their|one)\b", re.IGNORECASE)
_SPACES = re.compile(r"\s+")
# A follow-up is short: a long question carries its own subject.
_FOLLOW_UP_MAX_TERMS = 4


@dataclass(slots=True)
class Rewrite:
    """The search query, the original, and notes on each change (empty notes: unchanged)."""

    original: str
    query: str
    notes: list[str] = field(default_factory=list)
    follow_up_of: str | None = None
    repeats: str | None = None


MAX_QUERY_CHARS = 4000


def check_query(text: str, noun: str = "query") -> str:
    """The stripped ``text``, or ``ValueError`` when it is empty, has no word, or is over ``MAX_QUERY_CHARS``.

    Checked where a query enters, before any pattern runs on it: rule regexes are linear on normal input but a
    100 KB single "word" makes some of them quadratic.
    """
    text = (text or "").strip()
    if not text:
        raise ValueError(f"the {noun} is empty: type what you are looking for")
    if len(text) > MAX_QUERY_CHARS:
        raise ValueError(f"the {noun} is {len(text):,} characters long; keep it under {MAX_QUERY_CHARS:,}")
    if not re.search(r"\w", text):
        raise ValueError(f"the {noun} has no words: use terms that appear in the documents")
    surrogate = _SURROGATE.search(text)  # a Python str holds astral characters whole: any surrogate is lone
    if surrogate:
        raise ValueError(f"the {noun} is not valid text: a lone surrogate (U+{ord(surrogate.group()):04X}) at "
                         f"character {surrogate.start() + 1} (bytes that are not UTF-8?); retype it")
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def _normalise(text: str) -> str:
    return _SPACES.sub(" ", text).strip().lower().rstrip("?.! ")


def strip_framing(query: str) -> str:
    """Remove greetings, politeness and "can you tell me" framing at the ends of ``query``."""
    text = _SPACES.sub(" ", query).strip()
    while True:
        stripped = _LEADING_FRAMING.sub("", text, count=1).lstrip(" ,")
        if stripped == text or not stripped:
            break
        text = stripped
    text = _strip_trailing_framing(text).strip()
    return text or _SPACES.sub(" ", query).strip()


def _strip_trailing_framing(text: str) -> str:
    """``text`` without politeness phrases at its end, in linear time (each phrase is looked for in a short tail)."""
    end = _before(text, len(text), " \t\n.!")
    cut = None
    while True:
        match = _TRAILING_PHRASE.search(text, max(0, end - _TRAILING_TAIL_CHARS), end)
        if not match:
            break
        end = cut = _before(text, match.start(), " \t\n,.;!")
    return text if cut is None else text[:cut]


def _before(text: str, end: int, chars: str) -> int:
    """Where a run of ``chars`` ending at ``end`` starts (a scan, not ``rstrip`` on a copy of each prefix)."""
    while end > 0 and text[end - 1] in chars:
        end -= 1
    return end


def rewrite_query(query: str, previous_queries: Sequence[str] = ()) -> Rewrite:
    """Rewrite ``query`` for search, aware of ``previous_queries`` (oldest first)."""
    original = query.strip()
    if not original:
        raise ValueError("the query is empty: type what you are looking for")
    notes: list[str] = []
    text = strip_framing(original)
    if _normalise(text) != _normalise(original):
        notes.append(f"stripped conversational framing: {original!r} → {text!r}")
    result = Rewrite(original=original, query=text, notes=notes)
    previous = [p.strip() for p in previous_queries if p and p.strip()]
    for number, earlier in enumerate(previous, 1):
        if len(earlier) > MAX_QUERY_CHARS:  # checked before any rule runs on it
            raise ValueError(f"previous query {number} is {len(earlier):,} characters long; "
                             f"keep it under {MAX_QUERY_CHARS:,}")
    if not previous:
        return result
    last = strip_framing(previous[-1])
    own_terms = content_terms(text)
    is_follow_up = bool(_FOLLOW_UP_START.match(text)) or (
        len(own_terms) <= _FOLLOW_UP_MAX_TERMS and bool(_PRONOUN.search(text))
    )
    if is_follow_up:
        own_surface = {t.lower() for t in _surface_terms(text)}
        borrowed = [term for term in _surface_terms(last) if term.lower() not in own_surface]
        if borrowed:
            result.query = f"{' '.join(borrowed)} {text}"
            result.follow_up_of = previous[-1]
            notes.append(f"follow-up of {previous[-1]!r}: added its terms {' '.join(borrowed)!r}")
    for earlier in reversed(previous):
        if _normalise(earlier) == _normalise(result.query) or _normalise(strip_framing(earlier)) == _normalise(
            result.query
        ):
            result.repeats = earlier
            notes.append("repeats an earlier query: chunks already retrieved are excluded, so new ones come back")
            break
    return result


def _surface_terms(text: str) -> list[str]:
    """Words of ``text`` that carry meaning, in order, as written (identifiers and numbers kept whole)."""
    wanted = set(content_terms(text))
    seen: set[str] = set()
    terms = []
    for word in re.findall(r"[\w.\-]+", text):
        word = word.strip(".-")
        key = word.lower()
        if word and key not in seen and (content_terms(word) and set(content_terms(word)) <= wanted):
            seen.add(key)
            terms.append(word)
    return terms
