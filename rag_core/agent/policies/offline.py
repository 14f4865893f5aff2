"""The offline policy: a deterministic planner that drives the same tools as the LLM, without any network.

Plan: search the question at paragraph granularity first with hybrid retrieval and no content-type filter (the
plain search a one-shot RAG makes); a comparison or multi-part question is then split into sub-queries, each
searched on its own (the sides of a comparison at row granularity first), breadth first so every part gets a
search before any is refined; data questions also look for the exact table row; when a search is unsure, search
at section granularity for context (zooming into a broad section; for code questions also the code blocks), then
retry with a rewritten query; zoom out of a paragraph too small to stand alone when its section is small; skip a
part whose terms the context already holds; stop when every part is answered with confidence or one step is left.

While it works the policy gathers up to ``GATHER_FACTOR`` times the context budget; when it is done, the held
chunks are ranked by reciprocal-rank fusion over all of the run's searches (weighted by each hit's calibrated
confidence; follow-up searches count less than the plain first one, so the first search's best chunks stay
unless something ranked better replaces them) and the best are kept up to the context budget: the extra steps
add evidence where they found it and replace weaker chunks, never push the context past its budget. Each part of
a multi-part question keeps its best-supported chunk. Then the policy answers extractively (and says so).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, replace

from rag_core.agent.agent_types import Action, AgentRun
from rag_core.agent.answer import extractive_answer
from rag_core.agent.compress import compress_hits
from rag_core.agent.coverage import embedder_id, fill_by_parts, relevance, text_relevance
from rag_core.agent.plan import QuestionPlan, decompose, is_comparison, plan_question
from rag_core.agent.tools import TOOL_SPECS, ToolOutcome
from rag_core.retrieval.fusion import PAPER_RRF_K
from rag_core.retrieval.intent import classify_intent
from rag_core.retrieval.rewrite import rewrite_query
from rag_core.retrieval.terms import content_terms, term_coverage

# Sections above this many tokens are zoomed into (their most relevant paragraphs kept).
ZOOM_IN_TOKENS = 120
# Paragraphs or rows under this many tokens lack context: zoom out to their section (when it is not broad).
ZOOM_OUT_TOKENS = 24
# How many top hits of a search may be zoomed into or out of.
ZOOM_TOP = 2
# Results of the first (paragraph) search of the question: enough to fill the budget; and of each part's search.
FIRST_RESULTS = 20
# While working, the context may hold this many times its budget; the final context is the best within the budget.
GATHER_FACTOR = 3
PART_RESULTS = 3
# Results of a section search made for context when the paragraph search was unsure.
CONTEXT_RESULTS = 2
# Intents that also get a precise search: (granularity, focus area). Rows are small, so data questions always
# get one; code blocks are big, so code questions only when the paragraph search was unsure.
PRECISE: dict[str, tuple[str, str]] = {"data": ("row", "data"), "code": ("paragraph", "code")}
PRECISE_RESULTS = 2
# Order of pending work: first searches of every sub-query, then zooms, precise and context searches, then retries.
PRIORITY: dict[str, int] = {"whole": 0, "first": 0, "part": 0, "zoom": 1, "precise": 1, "context": 1, "hop": 1,
                            "retry": 2}
# A question with several parts: each list (the whole question's, each part's) this deep; the context may hold
# this many times its budget plus one budget per part while gathering; a second hop adds at most this many
# names found by the first hop, in at most this many searches.
PARTS_RESULTS = 10
PARTS_GATHER_FACTOR = 2
HOP_ANCHORS = 3
HOP_SEARCHES = 2
# Ranking of the final context: reciprocal-rank fusion over all of the run's searches, each hit weighted by its
# calibrated confidence. The plain first search of the question is the most trusted list; the lists of follow-up
# searches (parts, rows, sections, rewrites) count at this weight. RRF's constant is the paper's (not the
# retriever's 20: that one was tuned for fusing two retrievers' lists, this one merges a run's searches).
RRF_K = PAPER_RRF_K
FOLLOW_UP_WEIGHT = 0.5
# Share of a follow-up's terms the carried-over context must hold to skip retrieval.
COVERAGE_TO_SKIP = 0.8

def rewritten(query: str) -> str:
    """A keyword form of ``query`` for the retry: its meaningful words as written, framing dropped."""
    stripped = rewrite_query(query).query
    kept = [w for w in re.findall(r"[\w.\-/`]+", stripped) if content_terms(w)]
    return " ".join(kept) or stripped


def _best_held(run: AgentRun, query: str) -> float:
    """The highest confidence, as a search would calibrate it, of a held chunk for ``query`` (0 with none)."""
    if not run.context.hits:
        return 0.0
    index = run.toolbox.index
    return float(relevance([query], [h.chunk for h in run.context.hits], index.embed_texts, embedder_id(index)).max())


@dataclass(slots=True)
class _Task:
    tool: str
    args: dict
    reason: str
    sub_query: str
    kind: str = "first"


# The policy's follow-up searches and zooms, and its conditional-retrieval test (pure functions of a run).

def _confident(outcome: ToolOutcome, run: AgentRun, excluded: bool) -> bool:
    """Whether a search found its query at or above the retrieval threshold. With the held chunks left out
    (``excluded``), a confident search can return none: the context holds what it found ('stayed below the
    threshold' was untrue)."""
    result = outcome.retrieval
    if result is None or result.confidence < run.threshold:
        return False
    return bool(outcome.hits) or (excluded and bool(run.retrieved_ids or run.state.retrieved_ids))


def _retry_task(sub: str, why: str) -> _Task:
    query = rewritten(sub)
    if query.lower() == sub.lower():
        query = f"{query} details"
    return _Task("search", {"query": query, "granularity": "paragraph", "max_results": 2},
                 f"{why}: retry with the rewritten query {query!r} at paragraph granularity", sub, kind="retry")


def _zoom_tasks(run: AgentRun, outcome: ToolOutcome, sub: str) -> list[_Task]:
    """Zoom into broad top sections; zoom out of paragraphs too small to stand alone."""
    held = set(run.context.ids)
    index = run.toolbox.index
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
            parent = index.get(chunk.parent_id)
            if parent is None or parent.tokens > ZOOM_IN_TOKENS:
                continue  # a broad section would be zoomed straight back into
            zooms.append(_Task("zoom_out", {"chunk_id": chunk.id},
                               f"{chunk.granularity} {chunk.id} is only {chunk.tokens} tokens: zoom out to its "
                               f"section ({parent.tokens} tokens) for context", sub, kind="zoom"))
    return zooms


def _covered(run: AgentRun, query: str) -> bool:
    """True when every term of ``query`` is already in the held context and a held chunk is relevant to it
    with confidence (conditional retrieval)."""
    if not run.context.hits:
        return False
    held = "\n".join(h.chunk.text for h in run.context.hits)
    return term_coverage(content_terms(query), held) >= 1.0 and _best_held(run, query) >= run.threshold


class OfflinePolicy:
    """Deterministic planner over the agent tools (see module docstring)."""

    name = "offline"

    def __init__(self) -> None:
        self.tasks: deque[_Task] = deque()
        self.answered: set[str] = set()
        self.skip_reason: str | None = None
        self.skipped: list[str] = []
        self.current: _Task | None = None
        # Relevance of each chunk gathered in this turn (reciprocal-rank fusion over the run's result lists).
        self.relevance: dict[str, float] = {}
        self.spans: dict[str, tuple[str, int, int]] = {}
        self.part_best: dict[str, tuple[float, str]] = {}
        self.whole_unsure = False
        # The question's parts (``decompose``), reported on every action for the loop's extractive answer.
        self.sub_queries: list[str] = []
        # The plan of a question with several parts, the ranked list of each of its searches, whether the
        # second hops were planned.
        self.plan: QuestionPlan = plan_question("")
        self.lists: dict[str, list] = {}
        self.hopped = False

    def begin(self, run: AgentRun) -> None:
        self.tasks.clear()
        self.skipped = []
        self.relevance = {}
        self.spans = {}
        self.part_best = {}
        self.whole_unsure = False
        self.plan = run.plan
        self.lists = {}
        self.hopped = False
        run.context.gather(GATHER_FACTOR if not self.plan.split else PARTS_GATHER_FACTOR + len(self.plan.parts))
        self.sub_queries = self.plan.queries if self.plan.split else decompose(run.question)
        held = run.context.hits
        if run.state.turns and held:
            # Holding the question's words is no evidence of holding its answer ("publish a package" after "add a
            # git dependency" shares "package"): the earlier context is reused only when one of its chunks is
            # relevant to the new question with confidence, as a search would judge it.
            coverage = term_coverage(content_terms(run.question), "\n".join(h.chunk.text for h in held))
            index = run.toolbox.index
            scores = relevance([run.question], [h.chunk for h in held], index.embed_texts, embedder_id(index))[0]
            best = float(scores.max())
            if coverage >= COVERAGE_TO_SKIP and best >= run.threshold:
                # The held chunks were ranked for the earlier question: rank them for this one, so the answer
                # quotes what bears on it ("rotate the database password" after "rotate an API key").
                rescored = [replace(h, confidence=float(c)) for h, c in zip(held, scores, strict=True)]
                run.context.hits = sorted(rescored, key=lambda h: -h.confidence)
                self.skip_reason = (f"conditional retrieval: the context from the previous turn already holds "
                                    f"{coverage:.0%} of the question's terms and a chunk relevant to it with "
                                    f"confidence {best:.2f} ≥ {run.threshold:.2f}, so no new search")
                return
        self.skip_reason = None
        if self.plan.split:
            self._begin_parts(run)
            return
        already = {q.lower() for q in run.queries}
        split = len(self.sub_queries) > 1
        kind = "comparison" if is_comparison(run.question) else "multi-part"
        plain = {"granularity": "paragraph", "strategy": "hybrid", "widen": False}
        if split and run.question.lower() not in already:
            self.tasks.append(_Task("search", {"query": run.question, **plain, "max_results": FIRST_RESULTS},
                                    f"{kind} question: search it whole first at paragraph granularity (hybrid, any "
                                    "content type), then each part", run.question, kind="whole"))
        for number, sub in enumerate(self.sub_queries, start=1):
            if sub.lower() in already:
                continue
            why = f"sub-query {number} of {len(self.sub_queries)} ({kind} question)" if split else "search the question"
            if kind == "comparison" and split:
                # The sides of a comparison are often rows of the same table; the retriever widens to paragraphs
                # when no row answers with confidence.
                self.tasks.append(_Task("search", {"query": sub, "granularity": "row", "focus_area": "data",
                                                   "max_results": PART_RESULTS},
                                        f"{why}, at row granularity first (widened when unsure)", sub))
                continue
            results = PART_RESULTS if split else FIRST_RESULTS
            self.tasks.append(_Task("search", {"query": sub, **plain, "max_results": results},
                                    f"{why}, at paragraph granularity first (hybrid, any content type)", sub))

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
            # A part whose terms the context already holds needs no search, unless the whole question's search
            # was unsure: then holding the words is no evidence of holding the answer.
            if task.tool == "search" and task.kind == "first" and not self.whole_unsure \
                    and _covered(run, task.sub_query):
                self.answered.add(task.sub_query)
                self.skipped.append(task.sub_query)
                continue
            self.current = task
            return Action(task.tool, task.args, task.reason, focus_query=task.sub_query,
                          sub_queries=list(self.sub_queries), exclude_retrieved=not self.plan.split)
        if self.tasks:
            return self._done(run, f"one step left of {run.max_steps}: answer from what was found")
        unanswered = [q for q in self.sub_queries if q not in self.answered]
        if unanswered:
            return self._done(run, f"searches exhausted; the searches for some parts stayed below the retrieval "
                                   f"threshold {run.threshold:.2f}: " + "; ".join(unanswered))
        reason = f"every sub-query found with confidence ≥ {run.threshold:.2f}"
        if self.skipped:
            reason += "; no search needed for " + ", ".join(repr(q) for q in self.skipped) + " (already in the context)"
        return self._done(run, reason)

    def observe(self, run: AgentRun, action: Action, outcome: ToolOutcome) -> None:
        task = self.current
        if task is None or not outcome.ok:
            return
        if self.plan.split:
            self._observe_part(run, task, outcome)
            return
        # The plain first search of the whole question is the most trusted list; follow-ups count less.
        trusted = task.kind == "whole" or (task.kind == "first" and len(self.sub_queries) == 1)
        self._rank(outcome, 1.0 if trusted else FOLLOW_UP_WEIGHT)
        if action.tool != "search":
            return
        sub = task.sub_query
        confidence = outcome.retrieval.confidence if outcome.retrieval is not None else 0.0
        if _confident(outcome, run, action.exclude_retrieved):
            self.answered.add(sub)
        if task.kind == "whole":
            self.whole_unsure = confidence < run.threshold
            return  # follow-ups are planned per part
        if len(self.sub_queries) > 1 and sub in self.sub_queries:
            for rank, hit in enumerate(outcome.hits, start=1):
                score = hit.confidence / (RRF_K + rank)
                if score > self.part_best.get(sub, (0.0, ""))[0]:
                    self.part_best[sub] = (score, hit.chunk.id)
        follow: list[_Task] = _zoom_tasks(run, outcome, sub)
        unsure = confidence < run.threshold
        low = "no results" if not outcome.hits else f"confidence {confidence:.2f} < {run.threshold:.2f}"
        if task.kind == "first":
            intent = classify_intent(sub).name
            granularity, focus = PRECISE.get(intent, ("", ""))
            if intent in PRECISE and (intent == "data" or unsure) and granularity != task.args["granularity"]:
                follow.append(_Task("search", {"query": sub, "granularity": granularity, "focus_area": focus,
                                               "max_results": PRECISE_RESULTS},
                                    f"{intent} question: look for the exact {granularity} ({focus}) as well", sub,
                                    kind="precise"))
            if unsure:
                follow.append(_Task("search", {"query": sub, "granularity": "section",
                                               "max_results": CONTEXT_RESULTS},
                                    f"{low}: search at section granularity for context", sub, kind="context"))
        elif task.kind in ("precise", "context") and unsure and sub in self.sub_queries and sub not in self.answered \
                and not any(t.kind == "retry" and t.sub_query == sub for t in self.tasks):
            follow.append(_retry_task(sub, f"confidence still {confidence:.2f} < {run.threshold:.2f}"))
        self.tasks.extend(follow)

    def _rank(self, outcome: ToolOutcome, weight: float) -> None:
        """Fold one tool result into the relevance ranking by its tool's rule (``ToolSpec.relevance``): searches by
        rank, zooms inherit what they replace."""
        for chunk in outcome.chunks:
            self.spans[chunk.id] = (chunk.doc_id, chunk.start, chunk.end)
        rule = TOOL_SPECS[outcome.tool].relevance if outcome.tool in TOOL_SPECS else ""
        if rule == "rank":
            for rank, hit in enumerate(outcome.hits, start=1):
                score = weight * hit.confidence / (RRF_K + rank)
                self.relevance[hit.chunk.id] = self.relevance.get(hit.chunk.id, 0.0) + score
        elif rule == "replaced":
            inherited = max((self.relevance.get(i, 0.0) for i in outcome.replaces), default=0.0)
            for chunk in outcome.chunks:
                self.relevance[chunk.id] = max(self.relevance.get(chunk.id, 0.0), inherited)
        elif rule == "child" and outcome.chunks:
            child = self.relevance.get(str(outcome.args.get("chunk_id")), 0.0)
            parent = outcome.chunks[0].id
            self.relevance[parent] = max(self.relevance.get(parent, 0.0), child)

    def _held_relevance(self, run: AgentRun) -> dict[str, float]:
        """Relevance of each held chunk: its own, or that of the best-ranked chunk found inside its span.

        A section brought in by a zoom or a context search holds the passages the searches ranked; it is at least
        as relevant as the best of them.
        """
        # The best hit of each part of a multi-part question (over all of its searches) counts at full weight,
        # as if the plain search of the question had found it.
        boosted = dict(self.relevance)
        for score, chunk_id in self.part_best.values():
            boosted[chunk_id] = max(boosted.get(chunk_id, 0.0), score)
        relevance = {}
        for hit in run.context.hits:
            chunk = hit.chunk
            best = boosted.get(chunk.id, 0.0)
            for chunk_id, score in boosted.items():
                doc_id, start, end = self.spans.get(chunk_id, ("", 0, 0))
                if score > best and doc_id == chunk.doc_id and chunk.start <= start and end <= chunk.end:
                    best = score
            relevance[chunk.id] = best
        return relevance

    def _part_tops(self, run: AgentRun, relevance: dict[str, float]) -> list[str]:
        """For each part of a multi-part question, the held chunks that best support it (kept whatever the size).

        Two views of "best", since a part's own search never returns what the whole question's search already
        brought in: the holder of the part's best search hit, and the held chunk with the most of the part's terms
        (then the highest relevance).
        """
        if len(self.sub_queries) < 2:
            return []
        tops: list[str] = []
        for sub in self.sub_queries:
            candidates = []
            if sub in self.part_best:
                doc_id, start, end = self.spans.get(self.part_best[sub][1], ("", 0, 0))
                candidates.append(next((h.chunk.id for h in run.context.hits if h.chunk.doc_id == doc_id
                                        and h.chunk.start <= start and end <= h.chunk.end), None))
            terms = content_terms(sub)
            scored = [(term_coverage(terms, h.chunk.text), relevance.get(h.chunk.id, 0.0), h.chunk.id)
                      for h in run.context.hits]
            if scored:
                candidates.append(max(scored)[2])
            tops += [c for c in candidates if c and c not in tops]
        return tops

    # --- questions with several parts -------------------------------------------------------------------------

    def _begin_parts(self, run: AgentRun) -> None:
        """Search the whole question once, then each part on its own (the fill covers every part)."""
        plan = self.plan
        already = {q.lower() for q in run.queries}
        plain = {"granularity": "paragraph", "strategy": "hybrid", "widen": False, "max_results": PARTS_RESULTS}
        if run.question.lower() not in already:
            self.tasks.append(_Task("search", {"query": run.question, **plain},
                                    f"{plan.kind} question ({plan.why}): search it whole first", run.question,
                                    kind="whole"))
        for number, part in enumerate(plan.parts, start=1):
            if part.query.lower() in already:
                continue
            args, where = {"query": part.query, **plain}, ""
            if part.role == "side":
                # The sides of a comparison are often rows of the same table; the retriever widens to paragraphs
                # when no row answers with confidence.
                args = {"query": part.query, "granularity": "row", "focus_area": "data", "max_results": PARTS_RESULTS}
                where = ", at row granularity first (widened when unsure)"
            self.tasks.append(_Task("search", args, f"part {number} of {len(plan.parts)} ({part.role}): "
                                    f"{part.text!r}{where}", part.query, kind="part"))

    def _observe_part(self, run: AgentRun, task: _Task, outcome: ToolOutcome) -> None:
        if outcome.tool != "search":
            return
        key = "whole" if task.kind == "whole" else f"{task.kind}:{task.sub_query}"
        self.lists[key] = list(outcome.hits)
        if _confident(outcome, run, excluded=False):  # a plan's searches leave nothing out
            self.answered.add(task.sub_query)
        if not self.hopped and not any(t.kind == "part" for t in self.tasks):
            self.hopped = True
            self.tasks.extend(self._hops(run))

    def _hops(self, run: AgentRun) -> list[_Task]:
        """Second hops: a part searched again with what the first hop found (identifiers, headings).

        In a bridge question the story ("fails with an error we never saw") finds a place that names what to look
        up next (the error's name, the option, the page's heading); the question's other parts are searched again
        with those names added, which is how a person would follow the trail.
        """
        if self.plan.kind not in ("bridge", "multi-part", "procedure", "comparison"):
            return []
        story = [p for p in self.plan.parts if p.role == "context"] or self.plan.parts[:1]
        anchors: list[str] = []
        asked = self.plan.question.lower()
        for part in story:
            hits = self.lists.get(f"part:{part.query}", [])[:1] + self.lists.get("whole", [])[:1]
            for hit in hits:
                names = re.findall(r"`([^`\n]{3,40})`", hit.chunk.text) + hit.chunk.heading_path[-1:]
                for name in names:
                    name = name.strip("` ")
                    if name and name.lower() not in asked and name not in anchors:
                        anchors.append(name)
        anchors = anchors[:HOP_ANCHORS]
        if not anchors:
            return []
        tasks = []
        for part in self.plan.parts:
            if part in story:
                continue
            # A model's plan gives each part search words in the documents' vocabulary: the hop adds to those.
            words = part.query if self.plan.by == "model" else part.text
            query = f"{words} {' '.join(anchors)}"
            tasks.append(_Task("search", {"query": query, "granularity": "paragraph", "strategy": "hybrid",
                                          "widen": False, "max_results": PARTS_RESULTS},
                               f"second hop for {part.text!r}: with what the first hop found "
                               f"({', '.join(anchors)})", part.query, kind="hop"))
        return tasks[:HOP_SEARCHES]

    def _done_parts(self, run: AgentRun, reason: str) -> str:
        """Fill the final context part by part (``fill_by_parts``); returns the reason with what was kept."""
        held = {h.chunk.id: h for h in run.context.hits}
        order = ["whole"] + [f"part:{p.query}" for p in self.plan.parts] + [f"hop:{p.query}" for p in self.plan.parts]
        lists = [[held[h.chunk.id] for h in self.lists[key] if h.chunk.id in held] for key in order
                 if key in self.lists]
        before = len(run.context.hits)
        if run.config.agent.trim_chunks:
            # Every gathered chunk in fill order, then as many of each one's best sentences as the budget holds.
            ranked = fill_by_parts(lists, sum(h.chunk.tokens for h in held.values()),
                                   spread=self.plan.kind == "enumeration")
            index = run.toolbox.index
            embed = getattr(index, "embed_texts", None)
            queries = [self.plan.question] + [p.query for p in self.plan.parts]
            run.context.hits = compress_hits(ranked, queries, run.context.budget,
                                             lambda q, t: text_relevance(q, t, embed, embedder_id(index)))
        else:
            kept = fill_by_parts(lists, run.context.budget, spread=self.plan.kind == "enumeration")
            run.context.select([h.chunk.id for h in kept], run.context.budget)
            run.context.remove([i for i in run.context.ids if i not in {h.chunk.id for h in kept}])
        trimmed = [h for h in run.context.hits if "trimmed_from" in h.chunk.metadata]
        if trimmed:
            saved = sum(h.chunk.metadata["trimmed_from"] - h.chunk.tokens for h in trimmed)
            reason += (f"; {len(trimmed)} chunk(s) trimmed to their most relevant sentences ({saved} tokens left out "
                       "so more places fit)")
        return (f"{reason}; final context filled part by part: {len(run.context.hits)} chunk(s) within the "
                f"{run.context.budget}-token budget (each part's best first), {before - len(run.context.hits)} "
                "left out")

    def _done(self, run: AgentRun, reason: str) -> Action:
        run.context.end_gathering()
        if self.plan.split and self.lists:
            reason = self._done_parts(run, reason)
        elif self.relevance:
            relevance = self._held_relevance(run)
            ranked = sorted(relevance, key=relevance.get, reverse=True)
            part_tops = self._part_tops(run, relevance)
            trimmed = run.context.select(ranked, run.context.budget, keep=part_tops)
            if trimmed:
                reason += (f"; final context: the {len(run.context.hits)} best chunk(s) over all searches within "
                           f"the {run.context.budget}-token budget ({len(trimmed)} weaker chunk(s), "
                           f"{sum(t['tokens'] for t in trimmed)} tokens left out)")
        elif run.context.tokens > run.context.budget:
            run.context.select(run.context.ids, run.context.budget)
        answer = extractive_answer(run.question, run.context.hits, self.sub_queries)
        return Action("done", {"answer": answer.text, "citations": answer.citations}, reason,
                      sub_queries=list(self.sub_queries))
