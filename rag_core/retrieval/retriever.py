"""The ``Retriever``: rewrite → intent → route → confidence-gated search → de-dup → format, all traced.

Dynamic retrieval starts small (``initial_k``) and searches again only while the result's calibrated confidence
is below ``min_confidence``: each new pass doubles k (up to ``max_k``) and relaxes one filter, first dropping the
chunk-type filter (the intent's guess), then widening granularity (paragraph → paragraph + section → any; not for
a hybrid passage search, which already ranks passages with their sections). Under
the ``auto`` strategy a vector or keyword route that is not confident also escalates to hybrid on the next pass.
The last pass is the result; every pass is recorded with its decision and timing.
"""

from __future__ import annotations

import copy
import itertools
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rag_core.config import RetrievalConfig, Settings
from rag_core.errors import EmbeddingError, IndexError_
from rag_core.index import Filters
from rag_core.index.protocol import SearchIndex
from rag_core.retrieval.confidence import calibrate_confidence, result_confidence
from rag_core.retrieval.dedup import DedupReport, dedup_hits
from rag_core.retrieval.formatting import format_context
from rag_core.retrieval.fusion import Fused, hybrid_weights, order_fused, rrf_fuse, weighted_fuse
from rag_core.retrieval.intent import classify_intent
from rag_core.retrieval.rewrite import check_query, rewrite_query
from rag_core.retrieval.router import Route, route_query
from rag_core.retrieval.terms import content_terms, term_coverage
from rag_core.retrieval.trace import DroppedHit, IterationTrace, RetrievalResult
from rag_core.retrieval.web import web_search
from rag_core.stores.hot import chunk_allowed
from rag_core.types import Chunk, Hit

SEARCH_STRATEGIES: tuple[str, ...] = ("vector", "keyword", "hybrid")
# Each retriever's candidate depth in hybrid search: fusion needs more than k candidates per list to work.
HYBRID_MIN_DEPTH = 30
HYBRID_DEPTH_FACTOR = 3
# Passages ranked with their sections (``section_weight``): sections searched, and how many top sections bring
# their passages in as candidates.
SECTION_DEPTH = 30
SECTION_EXPAND = 10
# Hits fetched per hit returned, so that k distinct places remain once overlapping granularities collapse.
OVERFETCH = 2
# Share of the smaller of two spans that must overlap for them to count as one place.
SAME_PLACE_OVERLAP = 0.5
# Said in a route reason when the vector store or embedding endpoint failed and keyword search answered instead.
VECTORS_DOWN = "vector search unavailable"
# Granularity widening: the next, larger set of granularities searched when confidence stays low.
WIDER_GRANULARITY: dict[str, list[str] | None] = {
    "paragraph": ["paragraph", "section"],
    "row": ["row", "paragraph"],
    "section": ["section", "document"],
    "document": None,
}


@dataclass(slots=True)
class _Plan:
    """Filters of one pass."""

    granularity: list[str] | None
    chunk_types: list[str] | None

    def filters(self) -> Filters:
        return Filters(granularity=self.granularity, chunk_types=self.chunk_types)

    def describe(self) -> dict[str, Any]:
        return {"granularity": self.granularity or "any", "chunk_types": self.chunk_types or "any"}


def _relax(plan: _Plan, sections_ranked: bool = False) -> tuple[_Plan, str] | None:
    """The next, looser filters and what changed; None when nothing is left to relax.

    ``sections_ranked``: passages are already ranked with their sections (hybrid, ``section_weight`` > 0), so a
    passage search is not widened to sections: that would only put larger chunks of the same places first.
    """
    if plan.chunk_types:
        return _Plan(plan.granularity, None), f"dropped the chunk-type filter {plan.chunk_types}"
    if plan.granularity == ["paragraph"] and sections_ranked:
        return None
    if plan.granularity:
        # One granularity widens to its neighbours; an already widened set widens to any.
        wider = WIDER_GRANULARITY.get(plan.granularity[0]) if len(plan.granularity) == 1 else None
        return _Plan(wider, None), f"widened granularity {plan.granularity} → {wider or 'any'}"
    return None


def routed(config: RetrievalConfig) -> bool:
    """Whether each query's strategy is chosen by the router (``auto``): only then is an LLM router consulted."""
    return config.strategy == "auto"


class Retriever:
    """Confidence-gated retrieval over an index (see the module docstring)."""

    def __init__(self, index: SearchIndex, config: RetrievalConfig, settings: Settings | None = None, llm=None):
        self.index = index
        self.config = config
        self.settings = settings
        self.llm = llm
        self.embedder_id = str(index.embedder.id)

    @classmethod
    def for_config(cls, index: SearchIndex, config: RetrievalConfig, settings: Settings | None = None,
                   llm=None) -> Retriever:
        """The retriever of ``config``, holding ``llm`` as its router only when ``config`` is routed (``auto``).

        The one place of that rule, for the Retrieval Lab and ``search`` (through ``rag_core.services``), the agent
        and Evaluate alike: ``auto`` with a model configured is routed the same way wherever it is searched.
        """
        return cls(index, config, settings, llm if routed(config) else None)

    def with_llm(self, llm) -> Retriever:
        """This retriever with ``llm`` as its router, sharing the index, configuration and settings: the agent
        gives each question its own, the router bounded by the question's deadline (or dropped when the endpoint
        failed), and never changes the retriever it was handed."""
        other = copy.copy(self)
        other.llm = llm
        return other

    # --- configuration ------------------------------------------------------------------------------
    def effective_config(self, overrides: dict | None = None) -> RetrievalConfig:
        """The configuration with ``overrides`` applied and validated (unknown keys name the allowed ones)."""
        if not overrides:
            return self.config
        unknown = sorted(set(overrides) - set(RetrievalConfig.model_fields))
        if unknown:
            raise ValueError(f"unknown retrieval setting(s) {unknown}; allowed: {sorted(RetrievalConfig.model_fields)}")
        return RetrievalConfig.model_validate({**self.config.model_dump(), **overrides})

    @property
    def web_available(self) -> bool:
        return bool(self.settings is not None and self.settings.web_configured)

    # --- one search ----------------------------------------------------------------------------------
    def source_name(self, chunk: Chunk) -> str:
        name = chunk.metadata.get("source_name") if chunk.metadata else None
        if not name:
            name = self.index.doc_name(chunk.doc_id)
        return name or chunk.doc_id

    def _hit(self, chunk: Chunk, score: float, ranks: dict[str, int], scores: dict[str, float]) -> Hit:
        return Hit(chunk=chunk, score=float(score), ranks=ranks, scores=scores, source_name=self.source_name(chunk))

    def search(self, strategy: str, query: str, k: int, filters: Filters, exclude_ids: Iterable[str] = (),
               config: RetrievalConfig | None = None) -> list[Hit]:
        """One search with ``strategy`` (vector, keyword or hybrid): up to ``k`` hits with calibrated confidence,
        each a distinct place (a hit overlapping a better one of the same document is left out)."""
        if strategy not in SEARCH_STRATEGIES:
            raise ValueError(f"unknown search strategy {strategy!r}; choose from {list(SEARCH_STRATEGIES)}")
        config = config or self.config
        return collapse_overlaps(self.ranked(strategy, query, OVERFETCH * k, filters, exclude_ids, config))[:k]

    def ranked(self, strategy: str, query: str, k: int, filters: Filters, exclude_ids: Iterable[str] = (),
               config: RetrievalConfig | None = None, *, candidates: int | None = None,
               calibrate: bool = True) -> list[Hit]:
        """The top ``k`` of one search as ranked, overlapping places included (``search`` collapses them).

        ``candidates``: how deep each retriever's list goes into hybrid fusion (default ``max(k, HYBRID_MIN_DEPTH,
        HYBRID_DEPTH_FACTOR * k)``); BEIR fuses its two 100-deep lists, "Why not retrieved?" its two diagnosis lists.
        ``calibrate=False`` leaves each hit's confidence at 0 for callers that use the ranks alone (BEIR): measuring
        the query terms' coverage stems every hit's text, 30 times BM25's own time on SciFact.
        """
        config = config or self.config
        exclude = list(exclude_ids)
        terms = content_terms(query)
        if strategy == "vector":
            pairs = self.index.vector_search(query, k, filters, exclude)
            hits = [self._hit(c, s, {"vector": r}, {"vector": float(s)}) for r, (c, s) in enumerate(pairs, start=1)]
            for hit in hits if calibrate else ():
                hit.confidence = calibrate_confidence("vector", cosine=hit.score, embedder_id=self.embedder_id)
            return hits
        if strategy == "keyword":
            pairs = self.index.keyword_search(query, k, filters, exclude)
            hits = [self._hit(c, s, {"keyword": r}, {"keyword": float(s)}) for r, (c, s) in enumerate(pairs, start=1)]
            for hit in hits if calibrate else ():
                hit.confidence = calibrate_confidence("keyword", coverage=term_coverage(terms, hit.chunk.text))
            return hits
        depth = candidates if candidates is not None else max(k, HYBRID_MIN_DEPTH, HYBRID_DEPTH_FACTOR * k)
        vector_pairs = self.index.vector_search(query, depth, filters, exclude)
        keyword_pairs = self.index.keyword_search(query, depth, filters, exclude)
        chunks = {c.id: c for c, _ in [*vector_pairs, *keyword_pairs]}
        rankings = {"vector": [(c.id, s) for c, s in vector_pairs], "keyword": [(c.id, s) for c, s in keyword_pairs]}
        if config.fusion == "rrf":
            fused = rrf_fuse(rankings, k=config.rrf_k)
            if config.section_weight > 0 and filters.granularity == ["paragraph"]:
                fused = self._with_sections(query, fused, chunks, filters, exclude, config)
        else:
            fused = weighted_fuse(rankings, hybrid_weights(config.hybrid_weight))
        # A chunk missing from the exhaustive vector list has a cosine at most the last one listed.
        cosine_bound = float(vector_pairs[-1][1]) if vector_pairs else 0.0
        hits = []
        for rank, item in enumerate(fused[:k], start=1):
            ranks = {**item.ranks, "fused": rank}
            hit = self._hit(chunks[item.id], item.score, ranks, {**item.scores, "fused": item.score})
            if calibrate:
                hit.confidence = calibrate_confidence(
                    "hybrid", cosine=item.scores.get("vector", cosine_bound),
                    coverage=term_coverage(terms, hit.chunk.text), embedder_id=self.embedder_id,
                    fusion=config.fusion, hybrid_weight=config.hybrid_weight,
                )
            hits.append(hit)
        return hits

    def _with_sections(self, query: str, fused: list[Fused], chunks: dict[str, Chunk], filters: Filters,
                       exclude: list[str], config: RetrievalConfig) -> list[Fused]:
        """Passages ranked with their section: each passage also gets the fused score of its best-ranked enclosing
        section or document part (hybrid search over both, times ``section_weight``), and the passages of the top
        ones join the candidates. A section's vector and BM25 text cover all of it, so the section that answers is
        often found where no single passage of it ranks well (bench docsqa)."""
        # Document parts count as the container of the passages outside any section (a CSV's table, text before
        # the first heading), so that no passage is left without the signal; they are searched apart, so that they
        # take no place among the sections, and lift only those passages (a whole document lifting all of its
        # passages, or taking sections' places, lost on real docs: 0.697 -> 0.677).
        containers: list[tuple[int, Fused, bool]] = []
        for granularity, depth, expand in (("section", SECTION_DEPTH, SECTION_EXPAND),
                                           ("document", SECTION_DEPTH, SECTION_EXPAND // 2)):
            where = Filters(granularity=[granularity], chunk_types=filters.chunk_types, doc_ids=filters.doc_ids)
            ranked = rrf_fuse({
                "vector": [(c.id, s) for c, s in self.index.vector_search(query, depth, where)],
                "keyword": [(c.id, s) for c, s in self.index.keyword_search(query, depth, where)],
            }, k=config.rrf_k)
            containers += [(rank, item, granularity == "document")
                           for rank, item in enumerate(ranked[:expand], start=1)]
        if not containers:
            return fused
        excluded = set(exclude)
        by_id = {f.id: f for f in fused}
        for rank, section, whole_document in sorted(containers, key=lambda c: -c[1].score):
            for passage in self._passages_in(section.id):
                if passage.id in excluded or not chunk_allowed(passage, ["paragraph"], filters.chunk_types,
                                                               filters.doc_ids):
                    continue
                if whole_document and passage.heading_path:
                    continue  # a document part stands in only for passages outside any section
                chunks.setdefault(passage.id, passage)
                item = by_id.setdefault(passage.id, Fused(passage.id, 0.0))
                if "section" not in item.ranks:
                    contribution = config.section_weight * section.score
                    item.ranks["section"] = rank
                    item.scores["section"] = section.score
                    item.contributions["section"] = contribution
                    item.score += contribution
        return order_fused(by_id)

    def _passages_in(self, section_id: str) -> list[Chunk]:
        """The paragraph-level chunks inside a section or document part (children, then their children)."""
        found: list[Chunk] = []
        seen: set[str] = set()
        pending = [section_id]
        while pending:
            seen.update(pending)
            deeper: list[str] = []
            for chunk in self.index.get_many(pending):
                if chunk.granularity == "paragraph":
                    found.append(chunk)
                elif chunk.granularity in ("section", "document"):
                    deeper += [c for c in chunk.child_ids if c not in seen]
            pending = deeper
        return found

    # --- the pipeline --------------------------------------------------------------------------------
    def choose_route(self, query: str, config: RetrievalConfig, intent: str | None = None) -> Route:
        if not routed(config):
            return Route(config.strategy, f"strategy set to {config.strategy} in the configuration", "config")
        return route_query(query, llm=self.llm, web_available=self.web_available, intent=intent)

    def initial_plan(self, config: RetrievalConfig, intent_chunk_types: list[str] | None) -> _Plan:
        granularity = None if config.granularity == "any" else [config.granularity]
        chunk_types = list(config.chunk_types) if config.chunk_types else None
        if chunk_types is None and config.use_intent_filter:
            chunk_types = intent_chunk_types
        return _Plan(granularity, chunk_types)

    def retrieve(self, query: str, *, exclude_ids: Sequence[str] = (), previous_queries: Sequence[str] = (),
                 overrides: dict | None = None, config: RetrievalConfig | None = None,
                 context_only: bool = False) -> RetrievalResult:
        """Retrieve context for ``query``, skipping ``exclude_ids`` (chunks the caller already holds).

        ``config`` replaces the retriever's own settings for this search (the agent's per-search choices, already a
        typed ``RetrievalConfig``); ``overrides`` are changes to them given as a dict, validated here.
        ``context_only``: de-duplicate only the hits the context can hold (``dedup_within_budget``): the same
        context, without embedding the hits the budget leaves out; ``hits``, the de-dup report and the context's
        ``dropped`` list then end where the context does. For callers that read the context alone (the tuner).
        """
        started = time.perf_counter()
        if config is not None and overrides:
            raise ValueError("give the search's settings as a config or as overrides, not both")
        config = config if config is not None else self.effective_config(overrides)
        query = check_query(query)
        rewrite = rewrite_query(query, previous_queries)
        search_query = rewrite.query
        intent = classify_intent(search_query)
        route = self.choose_route(search_query, config, intent.name)
        exclude = [i for i in dict.fromkeys(exclude_ids) if i]
        iterations: list[IterationTrace] = []
        strategy = route.strategy
        strategy_reason = route.reason
        if strategy == "web":
            try:
                iterations.append(self._web_pass(search_query, config, strategy_reason, exclude))
            except Exception as e:  # any web failure falls back to the index, with the cause in the trace
                strategy = "hybrid"
                strategy_reason = f"{route.reason}; web search failed ({e}), fell back to hybrid"
        if not iterations:
            iterations = self._gated(strategy, strategy_reason, search_query, config, intent.chunk_types, exclude)
        hits = iterations[-1].hits
        previous = list(self.index.get_many(exclude)) if exclude else []
        if context_only:
            kept, report = dedup_within_budget(hits, self.index, config.dedup_threshold, previous,
                                               config.token_budget)
        else:
            kept, report = _dedup(hits, self.index, config.dedup_threshold, previous)
        context = format_context(kept, budget=config.token_budget)
        return RetrievalResult(
            query=query, rewritten_query=search_query, intent=intent.name, intent_reason=intent.reason,
            route=iterations[-1].strategy, route_reason=iterations[-1].strategy_reason, hits=kept,
            confidence=iterations[-1].confidence, iterations=iterations, dedup=report, context=context,
            elapsed_ms=(time.perf_counter() - started) * 1000, rewrite_notes=list(rewrite.notes),
            config=config,
        )

    def _gated(self, strategy: str, reason: str, query: str, config: RetrievalConfig,
               intent_chunk_types: list[str] | None, exclude: list[str]) -> list[IterationTrace]:
        plan = self.initial_plan(config, intent_chunk_types)
        k = min(config.initial_k, config.max_k)
        iterations: list[IterationTrace] = []
        vectors_down = False
        for number in range(1, config.max_iterations + 1):
            tick = time.perf_counter()
            try:
                found = self.search(strategy, query, k, plan.filters(), exclude, config)
            except (IndexError_, EmbeddingError) as e:
                if strategy == "keyword":
                    raise
                # The vector store or the embedding endpoint is unreachable (a Chroma server or an embedding
                # server down): BM25 and the chunks are local, so the question is still answered, by keyword
                # search, and the trace says why.
                strategy, reason = "keyword", f"{reason}; {VECTORS_DOWN} ({e}), answered by keyword search"
                vectors_down = True
                found = self.search(strategy, query, k, plan.filters(), exclude, config)
            kept = [h for h in found if h.confidence >= config.min_score]
            below = _below_min_score(found, config.min_score)
            confidence = result_confidence(kept)
            trace = IterationTrace(number, strategy, reason, query, k, plan.describe(), kept, confidence,
                                   below_min_score=below)
            iterations.append(trace)
            relaxed = _relax(plan, strategy == "hybrid" and config.fusion == "rrf" and config.section_weight > 0)
            # Under ``auto`` the router's single-retriever guess is itself a filter: a low-confidence pass
            # escalates to hybrid, which holds both retrievers' evidence.
            escalate = config.strategy == "auto" and strategy in ("vector", "keyword") and not vectors_down
            if confidence >= config.min_confidence:
                trace.decision, trace.decision_reason = "stop", (
                    f"confidence {confidence:.3f} ≥ min_confidence {config.min_confidence}")
            elif number == config.max_iterations:
                trace.decision, trace.decision_reason = "stop", (
                    f"max_iterations ({config.max_iterations}) reached with confidence {confidence:.3f}")
            elif relaxed is not None or escalate:
                new_k = min(2 * k, config.max_k)
                changes = []
                if escalate:
                    changes.append(f"switched {strategy} → hybrid")
                    reason = f"escalated from {strategy} ({reason}): confidence {confidence:.3f} was too low"
                    strategy = "hybrid"
                if relaxed is not None:
                    plan, change = relaxed
                    changes.append(change)
                trace.decision, trace.decision_reason = "relax", (
                    f"confidence {confidence:.3f} < {config.min_confidence}: {'; '.join(changes)}, k {k} → {new_k}")
                k = new_k
            elif k < config.max_k:
                new_k = min(2 * k, config.max_k)
                trace.decision, trace.decision_reason = "widen", (
                    f"confidence {confidence:.3f} < {config.min_confidence}: k {k} → {new_k}")
                k = new_k
            else:
                trace.decision, trace.decision_reason = "stop", (
                    f"confidence {confidence:.3f} < {config.min_confidence} but k is at max_k ({config.max_k}) "
                    "and no filter is left to relax")
            trace.elapsed_ms = (time.perf_counter() - tick) * 1000
            if trace.decision == "stop":
                break
        return iterations

    def _web_pass(self, query: str, config: RetrievalConfig, reason: str, exclude: list[str]) -> IterationTrace:
        """One web search pass (raises when the endpoint fails)."""
        tick = time.perf_counter()
        found = web_search(self.settings.web_search_url, query, k=config.max_k,
                           timeout_s=min(10.0, self.settings.llm_timeout_s))
        terms = content_terms(query)
        excluded = set(exclude)
        found = [h for h in found if h.chunk.id not in excluded]
        for hit in found:
            hit.confidence = calibrate_confidence("web", coverage=term_coverage(terms, hit.chunk.text))
        kept = [h for h in found if h.confidence >= config.min_score]
        below = _below_min_score(found, config.min_score)
        trace = IterationTrace(1, "web", reason, query, config.max_k, {"source": self.settings.web_search_url}, kept,
                               result_confidence(kept), "stop", "web results are taken in one pass",
                               below_min_score=below)
        trace.elapsed_ms = (time.perf_counter() - tick) * 1000
        return trace


def collapse_overlaps(hits: list[Hit]) -> list[Hit]:
    """``hits`` best first without those that repeat a better hit's place: a passage inside a section already
    listed, the section of a passage already listed, a row of a listed table (overlap ≥ ``SAME_PLACE_OVERLAP``
    of the smaller span, same document)."""
    kept: list[Hit] = []
    for hit in hits:
        if same_place(hit.chunk, [h.chunk for h in kept]) is None:
            kept.append(hit)
    return kept


def same_place(chunk: Chunk, better: Iterable[Chunk]) -> Chunk | None:
    """The first of ``better`` that stands for the same place as ``chunk`` (see ``collapse_overlaps``)."""
    size = max(chunk.end - chunk.start, 1)
    for other in better:
        if other.doc_id == chunk.doc_id and other.id != chunk.id:
            overlap = min(other.end, chunk.end) - max(other.start, chunk.start)
            if overlap >= SAME_PLACE_OVERLAP * min(size, max(other.end - other.start, 1)):
                return other
    return None


def _dedup(hits: list[Hit], index: SearchIndex, threshold: float, previous: list[Chunk],
           ) -> tuple[list[Hit], DedupReport]:
    """De-duplicated hits; with the embedding endpoint down, by containment only (the keyword answer stands)."""
    if not hits:
        return [], DedupReport(threshold=threshold)
    return dedup_hits(hits, index.embed_texts, threshold, previous=previous)


def dedup_within_budget(hits: list[Hit], index: SearchIndex, threshold: float, previous: list[Chunk], budget: int
                        ) -> tuple[list[Hit], DedupReport]:
    """``_dedup`` of the shortest prefix of ``hits`` whose context is complete at ``budget``: the context is the
    one all the hits give, but only the hits it can hold are embedded for the cosine test.

    Exact because de-dup keeps or drops a hit by the hits before it alone, and the context takes kept hits best
    score first until one does not fit whole (truncated or dropped), nothing after it; so once a prefix's context
    has a hit that did not fit whole, later hits cannot change it. Hits not in score order (the context would
    re-order them) are de-duplicated whole. The prefix starts where the hits' own tokens pass the budget and
    doubles while de-dup leaves too few to fill it. A cold study trial embedded every hit's text (135 s for
    105 questions on the FastAPI docs at load 8, against 3 s once cached); now only the ~1,500 tokens it reads."""
    if any(a.score < b.score for a, b in itertools.pairwise(hits)):
        return _dedup(hits, index, threshold, previous)
    total, size = 0, 0
    while size < len(hits) and total <= budget:
        total += hits[size].chunk.tokens
        size += 1
    while True:
        size = min(len(hits), size + 1)
        kept, report = _dedup(hits[:size], index, threshold, previous)
        if size == len(hits):
            return kept, report
        context = format_context(kept, budget=budget)
        if context.truncated or len(context.included) < len(kept):
            return kept, report
        size *= 2


def _below_min_score(hits: list[Hit], min_score: float) -> list[DroppedHit]:
    return [DroppedHit(h.chunk.id, "threshold", f"confidence {h.confidence:.3f} < min_score {min_score}", h.confidence)
            for h in hits if h.confidence < min_score]
