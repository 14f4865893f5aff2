"""The offline policy: a deterministic planner that drives the same tools as the LLM, without any network.

Plan: split the question into sub-queries (comparisons and multi-part questions), search each at section
granularity; zoom into a section that is too broad for the budget, out of a paragraph too small to stand
alone; retry a low-confidence search once with a rewritten query at paragraph granularity; stop when every
sub-query is answered with confidence, or steps run out; then answer extractively (and say so).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from rag_core.agent.answer import extractive_answer
from rag_core.agent.loop import Action, AgentRun
from rag_core.agent.tools import ToolOutcome
from rag_core.retrieval.text import content_terms, term_coverage

# Sections above this many tokens are zoomed into (their most relevant paragraphs kept).
ZOOM_IN_TOKENS = 160
# Paragraphs or rows under this many tokens lack context: zoom out to their section.
ZOOM_OUT_TOKENS = 24
# How many top section hits of a search may be zoomed into.
ZOOM_TOP = 2
# Share of a follow-up's terms the carried-over context must hold to skip retrieval.
COVERAGE_TO_SKIP = 0.8

_PAIR = re.compile(
    r"(?:between|compare|comparing|contrast)\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)\s*(?:[?.!]|$)"
    r"|^(?P<c>.+?)\s+(?:vs\.?|versus|compared (?:to|with))\s+(?P<d>.+?)\s*(?:[?.!]|$)",
    re.IGNORECASE,
)
_PARTS = re.compile(
    r"\?\s+|;\s+|\s+and also\s+|,?\s+and (?=(?:what|how|which|where|when|why|who|is|are|does|do|can)\b)",
    re.IGNORECASE,
)
_LEAD = re.compile(r"^(?:what(?:'s| is| are)?|how (?:do|does|is|are)|which|is|are|the)\s+", re.IGNORECASE)


def decompose(question: str) -> list[str]:
    """Sub-queries of a comparison (one per side) or a multi-part question (one per part); else the question."""
    text = question.strip()
    match = _PAIR.search(text)
    if match:
        a = (match.group("a") or match.group("c")).strip(" ,")
        b = (match.group("b") or match.group("d")).strip(" ,")
        a = _LEAD.sub("", a)
        a_words, b_words = a.split(), b.split()
        # "the Basic and Pro plans": the shared head noun ("plans") belongs to both sides.
        if len(a_words) == 1 and len(b_words) > 1:
            a = f"{a} {' '.join(b_words[1:])}"
        frame = _PAIR.sub("", text).strip(" ,?.!")
        frame_terms = " ".join(w for w in frame.split() if content_terms(w))[:80]
        return [f"{side} {frame_terms}".strip() for side in (a, b)]
    parts = [p.strip(" ,?.!") for p in _PARTS.split(text) if p and len(content_terms(p)) >= 1]
    if len(parts) > 1:
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
    attempt: int = 0


class OfflinePolicy:
    """Deterministic planner over the agent tools (see module docstring)."""

    name = "offline"

    def __init__(self) -> None:
        self.tasks: deque[_Task] = deque()
        self.answered: set[str] = set()
        self.skip_reason: str | None = None
        self.skipped: list[str] = []

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

    def next_action(self, run: AgentRun) -> Action:
        if self.skip_reason:
            return self._done(run, self.skip_reason)
        # Keep the last step for done so the answer is always the policy's own decision.
        while self.tasks and run.steps_left > 1:
            task = self.tasks.popleft()
            if task.tool == "search" and run.retrievals >= run.config.agent.max_retrievals:
                continue
            if task.tool == "search" and task.attempt == 0 and self._covered(run, task.sub_query):
                self.answered.add(task.sub_query)
                self.skipped.append(task.sub_query)
                continue
            run.current_query = task.sub_query
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
        if action.tool != "search":
            return
        sub = run.current_query
        task_attempt = 1 if action.args.get("granularity") == "paragraph" else 0
        confidence = outcome.retrieval.confidence if outcome.ok and outcome.retrieval is not None else 0.0
        if not outcome.ok or not outcome.hits or confidence < run.threshold:
            if task_attempt == 0:
                query = rewritten(sub)
                if query.lower() == sub.lower():
                    query = f"{query} details"
                why = ("no results" if not outcome.ok or not outcome.hits else
                       f"confidence {confidence:.2f} < {run.threshold:.2f}")
                self.tasks.appendleft(_Task("search", {"query": query, "granularity": "paragraph", "max_results": 4},
                                            f"{why}: retry with the rewritten query {query!r} at paragraph "
                                            "granularity", sub, attempt=1))
                return
        if outcome.ok and outcome.hits:
            if confidence >= run.threshold:
                self.answered.add(sub)
            held = set(run.context.ids)
            zooms = []
            for hit in outcome.hits[:ZOOM_TOP]:
                chunk = hit.chunk
                if chunk.id not in held:
                    continue
                if chunk.granularity in ("section", "document") and chunk.tokens > ZOOM_IN_TOKENS and chunk.child_ids:
                    zooms.append(_Task("zoom_in", {"section_id": chunk.id},
                                       f"section {chunk.heading or chunk.id!r} is broad ({chunk.tokens} tokens > "
                                       f"{ZOOM_IN_TOKENS}): zoom in to its most relevant paragraphs", sub))
                elif chunk.granularity in ("paragraph", "row") and chunk.tokens < ZOOM_OUT_TOKENS and chunk.parent_id:
                    zooms.append(_Task("zoom_out", {"chunk_id": chunk.id},
                                       f"{chunk.granularity} {chunk.id} is only {chunk.tokens} tokens: zoom out to "
                                       "its section for context", sub))
            for task in reversed(zooms):
                self.tasks.appendleft(task)

    @staticmethod
    def _covered(run: AgentRun, query: str) -> bool:
        """True when every term of ``query`` is already in the held context (conditional retrieval)."""
        if not run.context.hits:
            return False
        return term_coverage(content_terms(query), "\n".join(h.chunk.text for h in run.context.hits)) >= 1.0

    def _done(self, run: AgentRun, reason: str) -> Action:
        answer = extractive_answer(run.question, run.context.hits, run.sub_queries)
        return Action("done", {"answer": answer.text, "citations": answer.citations}, reason)
