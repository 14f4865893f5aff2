"""A stand-in for ``rag_core.retrieval.Retriever`` over a ``FakeIndex``, so agent tests script what search finds."""

from __future__ import annotations

import copy

from rag_core.retrieval.dedup import DedupReport
from rag_core.retrieval.formatting import format_context
from rag_core.retrieval.terms import content_terms, term_coverage
from rag_core.retrieval.trace import IterationTrace, RetrievalResult
from rag_core.types import Hit
from tests.fakes.index import FakeIndex


class FakeRetriever:
    """Ranks chunks of the requested granularity by query-term coverage; confidence is the best coverage."""

    def __init__(self, index: FakeIndex, config, llm=None) -> None:
        self.index = index
        self.config = config
        self.llm = llm
        self.calls: list[dict] = []

    def with_llm(self, llm) -> FakeRetriever:
        """A copy routed by ``llm``, recording its calls in the same list (as ``Retriever.with_llm``)."""
        other = copy.copy(self)
        other.llm = llm
        return other

    def retrieve(self, query, *, exclude_ids=(), previous_queries=(), overrides=None, config=None):
        config = config if config is not None else self.config.model_copy(update=overrides or {})
        self.calls.append({"query": query, "exclude_ids": list(exclude_ids), "config": config, "llm": self.llm})
        granularity = config.granularity
        k = config.initial_k
        terms = content_terms(query)
        scored = [(term_coverage(terms, c.text), c) for c in self.index.by_id.values()
                  if c.granularity == granularity and c.id not in set(exclude_ids)]
        scored = [(s, c) for s, c in sorted(scored, key=lambda p: -p[0]) if s > 0][:k]
        hits = [Hit(chunk=c, score=s, confidence=s, source_name=f"{c.doc_id}.md") for s, c in scored]
        confidence = hits[0].confidence if hits else 0.0
        trace = IterationTrace(1, "keyword", "fake", query, k, {"granularity": [granularity]}, hits, confidence)
        return RetrievalResult(query=query, rewritten_query=query, intent="fact", route="keyword",
                               route_reason="fake route", hits=hits, confidence=confidence, iterations=[trace],
                               dedup=DedupReport(threshold=0.85), context=format_context(hits), elapsed_ms=1.0)
