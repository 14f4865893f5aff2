"""Retrieval (layers 2–4): query construction, routing, fusion, confidence-gated search, de-dup, formatting.

Pure functions are re-exported here, with ``Retriever`` (``retriever``), which searches an index.
"""

from rag_core.retrieval.confidence import calibrate_confidence, result_confidence, vector_confidence
from rag_core.retrieval.dedup import DedupReport, dedup_hits
from rag_core.retrieval.formatting import FormattedContext, format_context
from rag_core.retrieval.fusion import Fused, rrf_fuse, weighted_fuse
from rag_core.retrieval.intent import Intent, classify_intent
from rag_core.retrieval.retriever import Retriever
from rag_core.retrieval.rewrite import MAX_QUERY_CHARS, Rewrite, check_query, rewrite_query
from rag_core.retrieval.router import Route, route_query
from rag_core.retrieval.trace import IterationTrace, RetrievalResult
from rag_core.retrieval.web import web_search

__all__ = [
    "DedupReport",
    "FormattedContext",
    "Fused",
    "Intent",
    "IterationTrace",
    "RetrievalResult",
    "Retriever",
    "Rewrite",
    "Route",
    "calibrate_confidence",
    "classify_intent",
    "dedup_hits",
    "format_context",
    "result_confidence",
    "rewrite_query",
    "check_query",
    "MAX_QUERY_CHARS",
    "route_query",
    "rrf_fuse",
    "vector_confidence",
    "web_search",
    "weighted_fuse",
]
