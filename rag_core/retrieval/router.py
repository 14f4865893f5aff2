"""The ``auto`` strategy: pick vector, keyword, hybrid (or web) per query, and record why.

Rules first (instant and explainable): exact tokens (identifiers, quoted strings, numbers, code symbols) are
what BM25 matches and embeddings blur, so they go to keyword search; comparisons and multi-part questions
need both exact terms and meaning, so hybrid; so do code and data questions (by intent) without such tokens,
since code and tables hold exact terms that embeddings blur; anything else is a natural-language question, so
vector. When an LLM client is given, it is asked instead (a one-word answer), and any failure falls back to the
rules with the failure in the reason. The ``web`` route exists only when a web-search endpoint is configured.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

log = logging.getLogger(__name__)

ROUTES: tuple[str, ...] = ("vector", "keyword", "hybrid", "web")

_QUOTED = re.compile(r"\"[^\"]{2,}\"|'[^'\s][^']*\s[^']*'|“[^”]{2,}”|`[^`]+`")
_IDENTIFIER = re.compile(
    r"\b(?:[a-z]+_[a-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+|[A-Z]{2,}_[A-Z0-9_]+"
    r"|[A-Za-z_]\w+\.[A-Za-z_]\w*(?:\.\w+)*)\b|(?<!\w)--?[a-z][\w-]+"
)
_CODE_SYMBOL = re.compile(r"\w+\(\)?|\(\)|::|->|=>|==|!=|<[/\w]+>|\{\}|\[\]|@\w+|#include|\bdef\b|\bimport\b")
_NUMBER = re.compile(r"(?<![\w.])(?:v?\d+(?:\.\d+)+|\d{2,}|\d+%|\d+\s?(?:ms|s|mb|gb|kb|px))(?![\w.])", re.IGNORECASE)
_COMPARISON = re.compile(
    r"\b(?:vs\.?|versus|compare[ds]?|comparison|difference(?:s)? between|differ(?:s|ence)?|better than|"
    r"worse than|instead of|rather than|pros and cons|trade-?offs?|similarit(?:y|ies) between)\b",
    re.IGNORECASE,
)
_MULTI_PART = re.compile(r"\?.+\?|;\s*\w|\b(?:and also|as well as|and then|and how|and what|and why|and when)\b",
                         re.IGNORECASE)
_CURRENT = re.compile(
    r"\b(?:latest|today|yesterday|this (?:week|month|year)|current(?:ly)?|news|recent(?:ly)?|right now|"
    r"release(?:d)? (?:date|notes)|20[2-9]\d)\b",
    re.IGNORECASE,
)

_LLM_PROMPT = (
    "You route search queries. Answer with exactly one word from: {routes}.\n"
    "keyword: exact identifiers, quoted strings, numbers, error messages or code symbols.\n"
    "vector: a natural-language question about meaning or concepts.\n"
    "hybrid: comparisons, questions with several parts, or questions about code or tabular data.\n"
    "{web}"
)


@dataclass(frozen=True, slots=True)
class Route:
    """The chosen strategy, why, and who decided (``rules`` or ``llm``)."""

    strategy: str
    reason: str
    decided_by: str = "rules"


def _rule_route(query: str, web_available: bool, intent: str | None = None) -> Route:
    if web_available:
        match = _CURRENT.search(query)
        if match:
            return Route("web", f"asks about something current ({match.group(0)!r}): outside the indexed corpus")
    if _COMPARISON.search(query):
        return Route("hybrid", f"comparison ({_COMPARISON.search(query).group(0)!r}): needs exact terms and meaning")
    if _MULTI_PART.search(query):
        return Route("hybrid", "multi-part question: needs exact terms and meaning")
    for kind, pattern in (("quoted string", _QUOTED), ("code symbol", _CODE_SYMBOL), ("identifier", _IDENTIFIER),
                          ("number", _NUMBER)):
        match = pattern.search(query)
        if match:
            return Route("keyword", f"{kind} {match.group(0)!r}: exact tokens are matched best by BM25")
    if intent in ("code", "data"):
        return Route("hybrid", f"{intent} question: code and tables hold exact terms that embeddings blur")
    return Route("vector", "natural-language question without exact tokens: semantic search")


def _llm_route(query: str, llm, web_available: bool) -> Route:
    routes = [r for r in ROUTES if web_available or r != "web"]
    system = _LLM_PROMPT.format(
        routes=", ".join(routes),
        web="web: current events or anything outside the documentation corpus.\n" if web_available else "",
    )
    reply = llm.chat([{"role": "system", "content": system}, {"role": "user", "content": query}], temperature=0.0,
                     purpose="router")  # a one-word reply: RAG_LLM_MAX_TOKENS_ROUTER bounds it
    content = (getattr(reply, "content", None) or "").strip().lower()
    words = re.findall(r"[a-z]+", content)
    chosen = next((w for w in words if w in routes), None)
    if chosen is None:
        raise ValueError(f"the LLM answered {content[:60]!r}, not one of {routes}")
    return Route(chosen, f"LLM router chose {chosen}", decided_by="llm")


def route_query(query: str, *, llm=None, web_available: bool = False, intent: str | None = None) -> Route:
    """Choose the strategy for ``query``: the LLM when given (falling back to rules on failure), else rules."""
    if not query.strip():
        raise ValueError("the query is empty: type what you are looking for")
    if llm is not None:
        try:
            return _llm_route(query, llm, web_available)
        except Exception as e:  # any LLM failure (network, refusal, odd answer) falls back to the rules
            log.warning("LLM router failed, using rules: %s", e)
            rule = _rule_route(query, web_available, intent)
            return Route(rule.strategy, f"{rule.reason} (LLM router failed: {type(e).__name__}: {e})", "rules")
    return _rule_route(query, web_available, intent)
