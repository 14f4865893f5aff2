"""Query-term analysis shared by the keyword confidence, the router and the rewriter.

Terms are lower-cased words with English stop-words removed and Snowball-stemmed (PyStemmer, the stemmer
the BM25 index uses), so "configuring" in a query matches "configured" in a chunk exactly as BM25 sees it.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
# Question words and fillers that carry no search meaning on top of the standard English stop-words.
_EXTRA_STOPWORDS = frozenset(
    {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "does", "do", "did", "can", "could",
     "should", "would", "please", "tell", "explain", "show", "me", "i", "you", "we", "difference", "between"}
)
_STOPWORDS = frozenset(STOPWORDS_EN_PLUS) | _EXTRA_STOPWORDS


@lru_cache(maxsize=1)
def _stemmer():
    return Stemmer.Stemmer("english")


@lru_cache(maxsize=4096)
def _stem(word: str) -> str:
    return _stemmer().stemWord(word)


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words of ``text`` (identifiers split on ``_`` and punctuation)."""
    return [w.lower() for w in _WORD.findall(text)]


def content_terms(text: str) -> list[str]:
    """Distinct stemmed non-stop-word terms of ``text``, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in _STOPWORDS:
            seen.setdefault(_stem(word), None)
    return list(seen)


@lru_cache(maxsize=4096)
def _term_set(text: str) -> frozenset[str]:
    # Every hit's text is stemmed for its confidence, and the same chunks come back query after query (a tuning
    # study scores thousands of searches over one index): remembered, a third of a cached trial's time goes.
    return frozenset(content_terms(text))


def term_coverage(query_terms: list[str], text: str) -> float:
    """Fraction of ``query_terms`` (from ``content_terms``) that occur in ``text``; 0.0 when there are none."""
    if not query_terms:
        return 0.0
    present = _term_set(text)
    return sum(1 for term in query_terms if term in present) / len(query_terms)
