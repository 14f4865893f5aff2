"""The offline policy: a deterministic planner that drives the same tools as the LLM, without any network.

Plan: split the question into sub-queries (comparisons and multi-part questions) and search each at section
granularity first (breadth first, so every part gets a search before any is refined); zoom into a section
that is too broad, out of a paragraph too small to stand alone; for data questions (and comparisons) also
look for the exact table row, for code questions the code block when the sections were unsure; retry a
low-confidence search with a rewritten query at paragraph granularity; skip a search whose terms the
context already holds; stop when every part is answered with confidence or one step is left; then answer
extractively (and say so).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from rag_core.agent.answer import extractive_answer
from rag_core.agent.loop import Action, AgentRun
from rag_core.agent.tools import ToolOutcome
from rag_core.retrieval.intent import classify_intent
from rag_core.retrieval.text import content_terms, term_coverage

# Sections above this many tokens are zoomed into (their most relevant paragraphs kept).
ZOOM_IN_TOKENS = 120
# Paragraphs or rows under this many tokens lack context: zoom out to their section.
ZOOM_OUT_TOKENS = 24
# How many top section hits of a search may be zoomed into.
ZOOM_TOP = 2
# Intents that also get a precise search after the section search: (granularity, focus area).
PRECISE: dict[str, tuple[str, str]] = {"data": ("row", "data"), "code": ("paragraph", "code")}
PRECISE_RESULTS = 2
# Order of pending work: first searches of every sub-query, then zooms and precise searches, then retries.
PRIORITY: dict[str, int] = {"section": 0, "zoom": 1, "precise": 1, "retry": 2}
# Share of a follow-up's terms the carried-over context must hold to skip retrieval.
COVERAGE_TO_SKIP = 0.8

_PAIR = re.compile(
    r"(?:between|compare|comparing|contrast)\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)\s*(?:[?.!]|$)"
    r"|^(?P<c>.+?)\s+(?:vs\.?|versus|compared (?:to|with))\s+(?P<d>.+?)\s*(?:[?.!]|$)"
    r"|^(?:how|in what way)\s+(?:do|does|did)\s+(?P<e>.+?)\s+and\s+(?P<f>.+?)\s+(?:differ|compare)\b",
    re.IGNORECASE,
)
_PARTS = re.compile(
    r"\?\s+|;\s+|\s+and also\s+|,?\s+and (?=(?:what|how|which|where|when|why|who|is|are|does|do|can)\b)",
    re.IGNORECASE,
)
# "create a job from TypeScript and from Go": one sub-query per alternative after the same preposition.
_ALTERNATIVES = re.compile(
    r"^(?P<pre>.*?\b(?P<prep>from|in|with|using|for|on))\s+(?P<g>[\w.+#-]+)\s+(?:and|or)\s+(?:(?P=prep)\s+)?"
    r"(?P<h>[\w.+#-]+)\s*[?.!]?$",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?:they|them|it|its|their|those|these)\b", re.IGNORECASE)
_FRAME_WORDS = frozenset({"differ", "compare", "comparison", "versus", "vs", "vs.", "in", "how", "long"})
_LEAD = re.compile(r"^(?:what(?:'s| is| are)?|how (?:do|does|is|are)|which|is|are|the)\s+", re.IGNORECASE)


def decompose(question: str) -> list[str]:
    """Sub-queries of a comparison (one per side) or a multi-part question (one per part); else the question."""
    text = question.strip()
    match = _PAIR.search(text)
    if match:
        a = (match.group("a") or match.group("c") or match.group("e")).strip(" ,")
        b = (match.group("b") or match.group("d") or match.group("f")).strip(" ,")
        a = _LEAD.sub("", a)
        a_words, b_words = a.split(), b.split()
        # "the Basic and Pro plans": the shared head noun ("plans") belongs to both sides.
        if len(a_words) == 1 and len(b_words) > 1:
            a = f"{a} {' '.join(b_words[1:])}"
        frame = _PAIR.sub("", text).strip(" ,?.!")
        frame_terms = " ".join(w for w in frame.split() if content_terms(w) and w.lower() not in _FRAME_WORDS)[:80]
        return [f"{side} {frame_terms}".strip() for side in (a, b)]
    alternatives = _ALTERNATIVES.match(text)
    if alternatives:
        pre = alternatives.group("pre")
        return [f"{pre} {alternatives.group(side)}" for side in ("g", "h")]
    parts = [p.strip(" ,?.!") for p in _PARTS.split(text) if p and len(content_terms(p)) >= 1]
    if len(parts) > 1:
        # "…, and what PostgreSQL do they need": the pronoun refers to the first part's subject.
        subject = " ".join(w for w in re.findall(r"[\w.\-]+", parts[0]) if content_terms(w))
        parts = [parts[0]] + [f"{p} {subject}" if _PRONOUN.search(p) else p for p in parts[1:]]
        return parts[:3]
    return [text]


def rewritten(query: str) -> str:
    """A keyword form of ``query`` for the retry: its meaningful words as written, framing dropped."""
    from rag_core.retrieval.rewrite import rewrite_query

    stripped = rewrite_query(query).query
    kept = [w for w in re.findall(r"[\w.\-/`]+", stripped) if content_terms(w)]
    return " ".join(kept) or stripped


@dataclass(slots=True)
class _Task:
    tool: str
    args: dict
    reason: str
    sub_query: str
    kind: str = "section"


class OfflinePolicy:
    """Deterministic planner over the agent tools (see module docstring)."""

    name = "offline"

    def __init__(self) -> None:
        self.tasks: deque[_Task] = deque()
        self.answered: set[str] = set()
        self.skip_reason: str | None = None
        self.skipped: list[str] = []
        self.current: _Task | None = None
        self.comparison = False

    def begin(self, run: AgentRun) -> None:
        self.tasks.clear()
        self.skipped = []
        run.sub_queries = decompose(run.question)
        held = run.context.hits
        if run.state.turns and held:
            coverage = term_coverage(content_terms(run.question), "\n".join(h.chunk.text for h in held))
            if coverage >= COVERAGE_TO_SKIP:
                self.skip_reason = (f"conditional retrieval: the context from the previous turn already holds "
                                    f"{coverage:.0%} of the question's terms, so no new search")
                return
        self.skip_reason = None
        already = {q.lower() for q in run.queries}
        split = len(run.sub_queries) > 1
        kind = "comparison" if _PAIR.search(run.question) else "multi-part"
        for number, sub in enumerate(run.sub_queries, start=1):
            if sub.lower() in already:
                continue
            why = f"sub-query {number} of {len(run.sub_queries)} ({kind} question)" if split else "search the question"
            self.tasks.append(_Task("search", {"query": sub, "granularity": "section", "max_results": 3},
                                    f"{why}, at section granularity first for context", sub))
        self.comparison = split and kind == "comparison"

    def next_action(self, run: AgentRun) -> Action:
        if self.skip_reason:
            return self._done(run, self.skip_reason)
        # Keep the last step for done so the answer is always the policy's own decision.
        while self.tasks and run.steps_left > 1:
            # Breadth first: every sub-query's first search, then zooms and precise searches, then retries.
            task = min(self.tasks, key=lambda t: PRIORITY[t.kind])
            self.tasks.remove(task)
            if task.tool == "search" and run.retrievals >= run.config.agent.max_retrievals:
                continue
            if task.tool == "search" and task.kind == "section" and self._covered(run, task.sub_query):
                self.answered.add(task.sub_query)
                self.skipped.append(task.sub_query)
                continue
            run.current_query = task.sub_query
            self.current = task
            return Action(task.tool, task.args, task.reason)
        if self.tasks:
            return self._done(run, f"one step left of {run.max_steps}: answer from what was found")
        unanswered = [q for q in run.sub_queries if q not in self.answered]
        if unanswered:
            return self._done(run, "searches exhausted; some parts stayed below the confidence threshold: "
                                   + "; ".join(unanswered))
        reason = f"every sub-query found with confidence ≥ {run.threshold:.2f}"
        if self.skipped:
            reason += "; no search needed for " + ", ".join(repr(q) for q in self.skipped) + " (already in the context)"
        return self._done(run, reason)

    def observe(self, run: AgentRun, action: Action, outcome: ToolOutcome) -> None:
        task = self.current
        if task is None or action.tool != "search":
            return
        sub = task.sub_query
        confidence = outcome.retrieval.confidence if outcome.ok and outcome.retrieval is not None else 0.0
        if outcome.ok and outcome.hits and confidence >= run.threshold:
            self.answered.add(sub)
        follow: list[_Task] = self._zooms(run, outcome, sub) if outcome.ok else []
        if task.kind == "section":
            intent = classify_intent(sub).name
            if intent not in PRECISE and self.comparison:
                intent = "data"  # the two sides of a comparison are often rows of the same table
            # Rows are small: always worth a look for data; code blocks are big: only when the sections were unsure.
            if intent in PRECISE and (intent == "data" or confidence < run.threshold):
                granularity, focus = PRECISE[intent]
                follow.append(_Task("search", {"query": sub, "granularity": granularity, "focus_area": focus,
                                               "max_results": PRECISE_RESULTS},
                                    f"{intent} question: look for the exact {granularity} ({focus}) as well", sub,
                                    kind="precise"))
            elif confidence < run.threshold:
                follow.append(self._retry(sub, "no results" if not outcome.hits else
                                          f"confidence {confidence:.2f} < {run.threshold:.2f}"))
        elif task.kind == "precise" and confidence < run.threshold and sub not in self.answered:
            follow.append(self._retry(sub, f"confidence still {confidence:.2f} < {run.threshold:.2f}"))
        self.tasks.extend(follow)

    @staticmethod
    def _retry(sub: str, why: str) -> _Task:
        query = rewritten(sub)
        if query.lower() == sub.lower():
            query = f"{query} details"
        return _Task("search", {"query": query, "granularity": "paragraph", "max_results": 2},
                     f"{why}: retry with the rewritten query {query!r} at paragraph granularity", sub, kind="retry")

    @staticmethod
    def _zooms(run: AgentRun, outcome: ToolOutcome, sub: str) -> list[_Task]:
        """Zoom into broad top sections; zoom out of paragraphs too small to stand alone."""
        held = set(run.context.ids)
        zooms = []
        for hit in outcome.hits[:ZOOM_TOP]:
            chunk = hit.chunk
            if chunk.id not in held:
                continue
            if chunk.granularity in ("section", "document") and chunk.tokens > ZOOM_IN_TOKENS and chunk.child_ids:
                zooms.append(_Task("zoom_in", {"section_id": chunk.id},
                                   f"{chunk.granularity} {chunk.heading or chunk.id!r} is broad ({chunk.tokens} "
                                   f"tokens > {ZOOM_IN_TOKENS}): zoom in to its most relevant parts", sub, kind="zoom"))
            elif chunk.granularity in ("paragraph", "row") and chunk.tokens < ZOOM_OUT_TOKENS and chunk.parent_id:
                zooms.append(_Task("zoom_out", {"chunk_id": chunk.id},
                                   f"{chunk.granularity} {chunk.id} is only {chunk.tokens} tokens: zoom out to its "
                                   "section for context", sub, kind="zoom"))
        return zooms

    @staticmethod
    def _covered(run: AgentRun, query: str) -> bool:
        """True when every term of ``query`` is already in the held context (conditional retrieval)."""
        if not run.context.hits:
            return False
        return term_coverage(content_terms(query), "\n".join(h.chunk.text for h in run.context.hits)) >= 1.0

    def _done(self, run: AgentRun, reason: str) -> Action:
        answer = extractive_answer(run.question, run.context.hits, run.sub_queries)
        return Action("done", {"answer": answer.text, "citations": answer.citations}, reason)
