"""A plan for the question: the parts a complete answer needs, found by rules over the question's structure.

A question a user types into a support chat is rarely one clean query. It tells a story ("Since upgrading,
passing 10.5 fails with an error we never saw"), then asks one or more things ("What is that error, and what is
the rule now?"). One search of the whole text finds the place that matches most of it; the other places a
complete answer needs are left out. The plan names each part so each can be searched on its own:

* **sentences**: each sentence is a part; a sentence too thin to search on its own ("How?", "Show the code.")
  joins the one before it. A statement (the story) is a part too: it is where the first hop of a bridge question
  lives (the error, the symptom), and what the question's pronouns refer to.
* **coordinated questions**: "…, and what …" / "…; how …" inside one sentence are two parts.
* **comparisons**: "Should I X or Y?", "X vs Y", "the difference between X and Y" are one part per side.
* **enumerations**: "per attribute, per class, per custom type, and for the whole process" is one part per item,
  each carrying the sentence's head ("How can I change the JSON Schema … per class").

A part that refers back ("it", "them", "that option") or is too short to stand alone carries the terms of the
sentence it refers to. The plan's kind (comparison, bridge, enumeration, procedure, multi-part, single) is what
the Playground shows and what the agent uses to decide how to search (a bridge searches again with what its
first hop found, an enumeration spreads across documents).

Written by hand: what is needed is a handful of rules over sentences and coordination, which no parsing library
offers without a language model (spaCy's parsers need downloaded weights, which this product cannot fetch).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from rag_core.retrieval.terms import content_terms

PlanKind = Literal["single", "comparison", "bridge", "enumeration", "procedure", "multi-part"]
PartRole = Literal["question", "context", "side", "item"]

# Most parts a plan searches (beyond them, the whole-question search still covers the rest).
MAX_PARTS = 4
# A sentence with fewer content terms than this cannot be searched on its own: it joins its neighbour.
MIN_PART_TERMS = 3
# Terms a part borrows from the sentence it refers to.
TOPIC_TERMS = 8

_ABBREVIATIONS = frozenset({"e.g", "i.e", "etc", "vs", "cf", "approx", "mr", "mrs", "dr", "no", "fig", "v"})
_HOW_TO = re.compile(r"\s*(?:and\s+|but\s+|also\s+)?how\s+(?:do|can|should)\s+(?:i|we|you)\b|\s*how\s+to\b",
                     re.IGNORECASE)
_BOUNDARY = re.compile(r"[?!.]+[\"')\]]*\s+")
# A question's fenced code, inline or over lines, is kept whole when it is cut into parts (not
# markdown_blocks.FENCE_LINE: a question is one paragraph, its fences anywhere in a line).
_FENCE = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_QUESTION_START = re.compile(
    r"^(?:how|what|what's|which|why|where|when|who|whose|is|are|was|were|can|could|do|does|did|should|shall|will|"
    r"would|may|might|must|has|have|any|walk|show|explain|tell|give|list|describe|compare)\b", re.IGNORECASE)
_COORDINATED = re.compile(
    r"(?:;\s+|,?\s+(?:and|or|but)\s+(?:also\s+)?(?=(?:what|what's|how|which|where|when|why|who|whether|is|are|does|"
    r"do|did|can|could|should|will|would|has|have)\b)|,\s+(?=(?:what|how|which|why|where|when|whether)\b))",
    re.IGNORECASE)
_PREPOSITIONS = r"(?:for|in|on|at|by|with|to|from|of|about)\b"
_PAIR = re.compile(
    r"\bbetween\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*(?:[?.!]|$)"
    r"|\b(?:compare|comparing|contrast)\s+(?!" + _PREPOSITIONS + r")(?P<a2>.+?)\s+(?:and|with|to|(?-i:vs)\.?|versus)\s+"
    r"(?P<b2>.+?)\s*(?:[?.!]|$)"
    r"|^(?P<c>.+?)\s+(?:(?-i:vs)\.?|versus|compared (?:to|with))\s+(?P<d>.+?)\s*(?:[?.!]|$)"
    r"|^(?:how|in what way)\s+(?:do|does|did)\s+(?P<e>.+?)\s+and\s+(?P<f>.+?)\s+(?:differ|compare)\b",
    re.IGNORECASE,
)
# "Should I X or Y?", "Is it better to X, or to Y?", "Would X or Y fit better?"
_CHOICE = re.compile(
    r"^(?:should\s+(?:I|we)|is\s+it\s+better\s+to|would\s+it\s+be\s+better\s+to|do\s+(?:I|we)|whether\s+to|"
    r"can\s+(?:I|we)|is\s+it\s+(?:best|wiser)\s+to)\s+(?P<a>.+?),?\s+or\s+(?:to\s+|should\s+(?:I|we)\s+|"
    r"(?:I|we)\s+should\s+)?(?P<b>.+?)\s*[?.!]*$",
    re.IGNORECASE)
# "create a job from TypeScript and from Go": one part per alternative after the same preposition.
ALTERNATIVES = re.compile(
    r"^(?P<pre>.*?\b(?P<prep>from|in|with|using|for|on))\s+(?P<g>[\w.+#-]+)\s+(?:and|or)\s+(?:(?P=prep)\s+)?"
    r"(?P<h>[\w.+#-]+)\s*[?.!]?$",
    re.IGNORECASE,
)
# An enumeration: "head: a, b, c, or d" / "head a, b, and c" with at least three items.
_ENUM_SPLIT = re.compile(r",\s+(?:(?:and|or)\s+)?(?![^()]*\))|\s+(?:and|or)\s+(?=for\b|per\b|in\b|on\b|at\b|with\b)")
_REFERS_BACK = re.compile(r"\b(?:it|its|they|them|their|those|these|this|that|such|either|both|each|one)\b",
                          re.IGNORECASE)
_PROCEDURE = re.compile(r"\b(?:step[- ]by[- ]step|walk me through|set(?:ting)? (?:it |this |that )?up|configure|"
                        r"install|migrate|steps?|first\b.*\bthen)\b", re.IGNORECASE)
_SYMPTOM = re.compile(r"\b(?:error|errors|fails?|failing|failed|raises?|raising|throws?|crash(?:es|ed)?|"
                      r"exception|rejects?|rejected|complain(?:s|ing)?|broke|breaks|warning)\b", re.IGNORECASE)


@dataclass(slots=True)
class Part:
    """One thing a complete answer needs: its text as written and the query searched for it."""

    text: str
    query: str
    role: PartRole = "question"
    # The text of the part it refers back to ("how fast is it there?"), whose topic its query borrows; "" if none.
    refers_to: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"text": self.text, "query": self.query, "role": self.role}


@dataclass(slots=True)
class QuestionPlan:
    """The question's parts and what kind of question it is (``single``: one part, the question itself)."""

    question: str
    kind: PlanKind
    parts: list[Part] = field(default_factory=list)
    why: str = ""
    # Who made the plan: these rules, or the configured model (``plan_model.plan_with_model``).
    by: Literal["rules", "model"] = "rules"

    @property
    def queries(self) -> list[str]:
        return [p.query for p in self.parts]

    @property
    def split(self) -> bool:
        return len(self.parts) > 1

    def to_dict(self) -> dict:
        return {"kind": self.kind, "why": self.why, "by": self.by, "parts": [p.to_dict() for p in self.parts]}


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences; code (fenced or inline) and abbreviations such as "e.g." are not cut."""
    protected = [(m.start(), m.end()) for m in _FENCE.finditer(text)]
    protected += [(m.start(), m.end()) for m in re.finditer(r"`[^`\n]*`", text)]
    pieces, start = [], 0
    for match in _BOUNDARY.finditer(text):
        cut = match.end()
        if any(a <= match.start() < b for a, b in protected):
            continue
        word = re.search(r"([\w.]+)[?!.]*$", text[start:match.start() + 1])
        if word and text[match.start()] == "." and word.group(1).rstrip(".").lower() in _ABBREVIATIONS:
            continue
        if text[match.start()] == "." and re.match(r"\s+[a-z]", text[match.end() - 1:]):
            continue  # "json.loads. then" or a lower-case word after a dot: not a sentence end
        pieces.append(text[start:cut].strip())
        start = cut
    pieces.append(text[start:].strip())
    return [p for p in pieces if p]


def _is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?") or bool(_QUESTION_START.match(sentence.strip()))


def _topic(text: str) -> str:
    """The words of ``text`` that carry its topic (content words, as written), at most ``TOPIC_TERMS``."""
    words = [w.strip(".'") for w in re.findall(r"[\w.\-`']+", text) if content_terms(w)]
    return " ".join(list(dict.fromkeys(words))[:TOPIC_TERMS])


def _choice(sentence: str) -> list[str] | None:
    match = _CHOICE.match(sentence.strip())
    if not match:
        return None
    a, b = match.group("a").strip(" ,"), match.group("b").strip(" ,")
    if len(content_terms(a)) < 2 or len(content_terms(b)) < 2:
        return None
    return [a, b]


def _pair(sentence: str) -> list[str] | None:
    match = _PAIR.search(sentence)
    if not match:
        return None
    a = next(match.group(g) for g in ("a", "a2", "c", "e") if match.group(g)).strip(" ,")
    b = next(match.group(g) for g in ("b", "b2", "d", "f") if match.group(g)).strip(" ,")
    a = re.sub(r"^(?:what(?:'s| is| are)?|how (?:do|does|is|are)|which|is|are|the)\s+", "", a, flags=re.IGNORECASE)
    a_words, b_words = a.split(), b.split()
    if not content_terms(a) or not content_terms(b):
        return None
    # "the Basic and Pro plans": the shared head noun ("plans") belongs to both sides.
    if len(a_words) == 1 and len(b_words) > 1:
        a = f"{a} {' '.join(b_words[1:])}"
    frame = _PAIR.sub("", sentence).strip(" ,?.!")
    frame_terms = " ".join(w for w in frame.split() if content_terms(w) and w.lower() not in
                           {"differ", "compare", "comparison", "versus", "vs", "vs."})[:80]
    return [f"{side} {frame_terms}".strip() for side in (a, b)]


def _enumeration(sentence: str) -> list[str] | None:
    """``head item`` per item of a list of three or more in ``sentence``; None when there is no such list."""
    body = sentence.strip().rstrip("?.!")
    colon = body.find(":")
    if colon > 0:
        head, tail = body[:colon], body[colon + 1:]
    else:
        # The list is the run of comma-separated phrases at the end: "… per attribute, per class, and for …".
        first = body.find(",")
        if first < 0:
            return None
        head_words = body[:first].split()
        # The first item is the last words before the first comma, starting at its preposition when it has one.
        cut = next((i for i in range(len(head_words) - 1, max(-1, len(head_words) - 5), -1)
                    if head_words[i].lower() in {"per", "for", "in", "on", "at", "with", "by", "from", "to"}), None)
        if cut is None or cut == 0:
            return None
        head, tail = " ".join(head_words[:cut]), " ".join(head_words[cut:]) + body[first:]
    items = [i.strip(" ,") for i in _ENUM_SPLIT.split(tail) if i and i.strip(" ,")]
    if len(items) < 3 or any(len(i.split()) > 8 for i in items) or not content_terms(head):
        return None
    if colon < 0:
        # Without a colon, only a list whose items share their opening preposition ("per attribute, per class").
        openers = [i.split()[0].lower() for i in items]
        if sum(o == openers[0] for o in openers) < 2:
            return None
    return [f"{head.strip()} {item}" for item in items]


def _coordinated(sentence: str) -> list[str]:
    pieces = [p.strip(" ,;") for p in _COORDINATED.split(sentence) if p and p.strip(" ,;")]
    merged: list[str] = []
    carry = ""  # an opening phrase too thin to stand alone ("For custom checks,") joins the next piece
    for piece in pieces:
        piece = f"{carry}, {piece}" if carry else piece
        carry = ""
        if len(content_terms(piece)) < MIN_PART_TERMS:
            if merged:
                merged[-1] = f"{merged[-1]}, {piece}"
            else:
                carry = piece
            continue
        merged.append(piece)
    if carry:
        merged.append(carry)
    return merged or [sentence]


def plan_question(question: str) -> QuestionPlan:
    """The question's parts (see the module docstring); a plain question is one part, itself."""
    text = " ".join(question.split()) if "```" not in question else question.strip()
    whole = QuestionPlan(question=question, kind="single", parts=[Part(text, text)], why="one question, searched whole")
    # Sentences; a thin one ("How?", "Show the code.") joins its neighbour.
    units: list[str] = []
    for sentence in sentences(text):
        if units and (len(content_terms(sentence)) < MIN_PART_TERMS or len(content_terms(units[-1])) < MIN_PART_TERMS):
            units[-1] = f"{units[-1]} {sentence}"
        else:
            units.append(sentence)
    parts: list[Part] = []
    kinds: list[str] = []
    for unit in units:
        if not _is_question(unit):
            parts.append(Part(unit, unit, "context"))
            continue
        sides = _choice(unit)
        if sides:
            parts += [Part(s, s, "side") for s in sides]
            kinds.append("comparison")
            continue
        alternatives = ALTERNATIVES.match(unit)
        if alternatives:
            pre = alternatives.group("pre")
            parts += [Part(f"{pre} {alternatives.group(s)}", f"{pre} {alternatives.group(s)}", "side")
                      for s in ("g", "h")]
            kinds.append("comparison")
            continue
        # Coordinated questions first, then a comparison within one of them: in "How do the Team and Enterprise
        # plans differ in retention, and how do I rotate a key?" the key is a question of its own, not a side.
        for piece in _coordinated(unit):
            sides = _pair(piece)
            if sides:
                parts += [Part(s, s, "side") for s in sides]
                kinds.append("comparison")
                continue
            items = _enumeration(piece)
            if items:
                parts += [Part(i, i, "item") for i in items]
                kinds.append("enumeration")
            else:
                parts.append(Part(piece, piece, "question"))
    if len(parts) < 2:
        return whole
    # A part that refers back, or is too thin to stand alone, borrows the topic of the part before it.
    for number, part in enumerate(parts):
        if number == 0:
            continue
        # A part of MIN_PART_TERMS terms is thin, unless it asks how to do something: "how do I rotate an API key?"
        # names its task whole, and searched with the previous part's topic ("run history retention") it found
        # that topic instead. (Every 3-term part standing alone lost place recall: FastAPI 0.758 -> 0.727.)
        terms = len(content_terms(part.text))
        thin = terms < MIN_PART_TERMS or (terms == MIN_PART_TERMS and not _HOW_TO.match(part.text))
        if thin or _REFERS_BACK.search(part.text):
            story = next((p.text for p in reversed(parts[:number]) if p.role == "context"), None)
            # A side or an item carries its sentence's frame already: it borrows only from the story.
            source = story if story is not None or part.role in ("side", "item") else parts[number - 1].text
            if source is None:
                continue
            extra = [w for w in _topic(source).split() if w.lower() not in part.text.lower()]
            if extra:
                part.query = f"{part.text} ({' '.join(extra)})"
            if _REFERS_BACK.search(part.text):
                part.refers_to = source
    # Parts with the same terms are one part.
    unique: list[Part] = []
    for part in parts:
        if not any(set(content_terms(part.query)) <= set(content_terms(u.query)) for u in unique):
            unique.append(part)
    parts = unique[:MAX_PARTS]
    if len(parts) < 2:
        return whole
    story = [p for p in parts if p.role == "context"]
    if "comparison" in kinds:
        kind: PlanKind = "comparison"
        why = "a choice between alternatives: each side is searched on its own"
    elif "enumeration" in kinds:
        kind, why = "enumeration", "a list of cases: each is searched on its own, spread across documents"
    elif story and any(_SYMPTOM.search(p.text) for p in story):
        kind = "bridge"
        why = ("a symptom, then a question about it: the symptom is searched first, then what it names (errors, "
               "identifiers, headings) is searched with the question")
    elif _PROCEDURE.search(question):
        kind, why = "procedure", "a task in several steps: each step is searched on its own"
    else:
        kind, why = "multi-part", "several questions in one: each is searched on its own"
    return QuestionPlan(question=question, kind=kind, parts=parts, why=why)


# --- the offline policy's sub-queries ---------------------------------------------------------------------

_SIDES = re.compile(
    r"(?:between|compare|comparing|contrast)\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)\s*(?:[?.!]|$)"
    r"|^(?P<c>.+?)\s+(?:vs\.?|versus|compared (?:to|with))\s+(?P<d>.+?)\s*(?:[?.!]|$)"
    r"|^(?:how|in what way)\s+(?:do|does|did)\s+(?P<e>.+?)\s+and\s+(?P<f>.+?)\s+(?:differ|compare)\b",
    re.IGNORECASE,
)
_SUB_PARTS = re.compile(
    r"\?\s+|;\s+|\s+and also\s+|,?\s+and (?=(?:what|how|which|where|when|why|who|is|are|does|do|can)\b)",
    re.IGNORECASE,
)
_SUB_PRONOUN = re.compile(r"\b(?:they|them|it|its|their|those|these)\b", re.IGNORECASE)
_SIDE_FRAME_WORDS = frozenset({"differ", "compare", "comparison", "versus", "vs", "vs.", "in", "how", "long"})
_SIDE_LEAD = re.compile(r"^(?:what(?:'s| is| are)?|how (?:do|does|is|are)|which|is|are|the)\s+", re.IGNORECASE)


def is_comparison(question: str) -> bool:
    """Whether ``question`` compares two things ("between A and B", "A vs B", "how do A and B differ")."""
    return bool(_SIDES.search(question))


def decompose(question: str) -> list[str]:
    """Sub-queries of a comparison (one per side) or a multi-part question (one per part); else the question.

    The offline policy's sub-queries of a question its plan (``plan_question``) does not split: they steer its
    follow-up searches and its extractive answer. Both splittings live here, in the one module that splits
    questions; they differ on purpose (the plan splits only where each part is a question of its own)."""
    text = question.strip()
    match = _SIDES.search(text)
    if match:
        a = (match.group("a") or match.group("c") or match.group("e")).strip(" ,")
        b = (match.group("b") or match.group("d") or match.group("f")).strip(" ,")
        a = _SIDE_LEAD.sub("", a)
        a_words, b_words = a.split(), b.split()
        # "the Basic and Pro plans": the shared head noun ("plans") belongs to both sides.
        if len(a_words) == 1 and len(b_words) > 1:
            a = f"{a} {' '.join(b_words[1:])}"
        frame = _SIDES.sub("", text).strip(" ,?.!")
        frame_terms = " ".join(w for w in frame.split() if content_terms(w) and w.lower() not in _SIDE_FRAME_WORDS)[:80]
        return [f"{side} {frame_terms}".strip() for side in (a, b)]
    alternatives = ALTERNATIVES.match(text)
    if alternatives:
        pre = alternatives.group("pre")
        return [f"{pre} {alternatives.group(side)}" for side in ("g", "h")]
    parts = [p.strip(" ,?.!") for p in _SUB_PARTS.split(text) if p and len(content_terms(p)) >= 1]
    if len(parts) > 1:
        # "…, and what PostgreSQL do they need": the pronoun refers to the first part's subject.
        subject = " ".join(w for w in re.findall(r"[\w.\-]+", parts[0]) if content_terms(w))
        parts = [parts[0]] + [f"{p} {subject}" if _SUB_PRONOUN.search(p) else p for p in parts[1:]]
        return parts[:3]
    return [text]
