"""Search hits for people: one relevance scale (the calibrated confidence) where there is one, "rank only" where
there is not (keyword search: BM25 orders hits but has no relevance scale), raw per-retriever scores and ranks for
engineers, and the hit text (links read as their text) with the query's terms highlighted.

Hit text comes from documents (untrusted): every piece is HTML-escaped before it is wrapped in our own ``<mark>``
tags, so markup in a document is shown, never rendered or run.
"""

from __future__ import annotations

import html
import re

import pandas as pd

from rag_core.retrieval.terms import content_terms
from ui.safe_text import links_as_text, tags_as_text

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
PREVIEW_CHARS = 700
RETRIEVERS = ("vector", "keyword", "fused")


def rank_only(hit) -> bool:
    """True for a keyword (or web) hit: ranked by BM25 (or the engine), with no calibrated relevance. Its
    ``confidence`` is only the share of the query's terms it contains, so an off-topic chunk that repeats the
    question's words reads 1.00; it is shown as terms found, never as a relevance."""
    return bool(hit.ranks) and not ({"vector", "fused"} & set(hit.ranks))


def terms_found(hit, terms: list[str]) -> str:
    """``2 of 3 query terms`` for a hit (``terms`` from ``content_terms`` of the query)."""
    present = set(content_terms(hit.chunk.text))
    return f"{sum(1 for term in terms if term in present)} of {len(terms)} query terms"


def in_relevance_order(hits) -> bool:
    """True when relevance never rises down the list (the list reads as ranked by the relevance shown)."""
    values = [h.confidence for h in hits if not rank_only(h)]
    return all(a >= b - 1e-9 for a, b in zip(values, values[1:], strict=False))


def relevance_note(result) -> str:
    """What the relevance column is and what orders the hits, in words (the caption above the hits)."""
    hits = result.hits
    if hits and all(rank_only(h) for h in hits):
        return ("Keyword search ranks hits by BM25 but has no relevance scale: the order is the ranking (rank "
                "only), and the terms column says how many of the query's terms a hit contains, not whether it "
                "answers the query.")
    note = "Relevance is the calibrated confidence (0–1, comparable across strategies)"
    if in_relevance_order(hits):
        return note + "; hits are listed by it."
    return (note + ". Hits are listed in the order the search ranked them (#), which can differ: a lower-ranked "
            "hit may show a higher relevance.")


def plain_text(text: str) -> str:
    """A chunk's Markdown as read in a hit: links as their text, link definitions left out, raw HTML tags as their
    text and images as their alt text (shown escaped: never rendered, never fetched)."""
    return tags_as_text(links_as_text(text))


def highlight_html(text: str, query: str, limit: int = PREVIEW_CHARS) -> str:
    """``text`` (cut at ``limit`` characters) escaped, with words matching a query term (same stemming as the
    keyword search: "rotating" matches "rotate") in ``<mark>``."""
    terms = set(content_terms(query))
    shown = text if len(text) <= limit else text[:limit].rstrip() + " …"
    out, last = [], 0
    for match in _WORD.finditer(shown):
        if terms and any(term in terms for term in content_terms(match.group())):
            out.append(html.escape(shown[last:match.start()]))
            out.append(f"<mark>{html.escape(match.group())}</mark>")
            last = match.end()
    out.append(html.escape(shown[last:]))
    return "".join(out)


def raw_scores(hit) -> str:
    """Each retriever's rank and raw score (on its own scale: cosine, BM25, RRF), e.g. ``vector #2 (0.541)``."""
    parts = []
    for name in (*RETRIEVERS, *sorted(set(hit.ranks) - set(RETRIEVERS))):
        if name in hit.ranks:
            score = hit.scores.get(name)
            parts.append(f"{name} #{hit.ranks[name]}" + (f" ({score:.3f})" if score is not None else ""))
    return " · ".join(parts)


def _relevance_html(hit, query: str) -> str:
    if rank_only(hit):
        return (f'<span title="keyword search: BM25 rank only, no relevance scale" style="color:#555">rank only · '
                f'{html.escape(terms_found(hit, content_terms(query)))}</span>')
    relevance = max(0.0, min(hit.confidence, 1.0))
    return (f'<div title="relevance (calibrated confidence)" style="width:120px;height:10px;background:#eee;'
            f'border-radius:5px"><div style="width:{relevance * 100:.0f}%;height:10px;background:#4c78a8;'
            f'border-radius:5px"></div></div><b>{relevance:.2f}</b>')


def hit_card_html(number: int, hit, query: str, engineer: bool = False) -> str:
    """One hit: rank, relevance bar (or "rank only"), source › heading, highlighted text with links as their text;
    granularity, type and raw scores with ``engineer`` (all text escaped)."""
    heading = " › ".join(hit.chunk.heading_path) or "(top of the document)"
    details = (f'<span style="color:#888">{html.escape(hit.chunk.granularity)} · '
               f'{html.escape(hit.chunk.chunk_type)}</span>') if engineer else ""
    raw = (f'<div style="color:#888;font-size:0.8rem;margin:2px 0 4px">raw: {html.escape(raw_scores(hit))}</div>'
           if engineer else "")
    return (
        '<div style="border:1px solid #ddd;border-radius:8px;padding:8px 12px;margin:6px 0;font-size:0.9rem">'
        '<div style="display:flex;gap:12px;align-items:center">'
        f'<b>#{number}</b>{_relevance_html(hit, query)}'
        f'<span>{html.escape(hit.source_name or hit.chunk.doc_id)} › {html.escape(heading)}</span>{details}'
        '</div>'
        f'{raw}<div style="white-space:pre-wrap">{highlight_html(plain_text(hit.chunk.text), query)}</div>'
        '</div>'
    )


def hits_frame(result, engineer: bool = False) -> pd.DataFrame:
    """The hits as a table in ranked order: relevance (or, for keyword hits, the query terms they contain) first,
    then where each came from; granularity, type, raw ranks and scores and the chunk id with ``engineer``."""
    terms = content_terms(result.rewritten_query)
    keyword_only = bool(result.hits) and all(rank_only(h) for h in result.hits)
    rows = []
    for i, h in enumerate(result.hits, start=1):
        row: dict = {"#": i}
        if keyword_only:
            row["query terms"] = terms_found(h, terms)
        else:
            row["relevance"] = None if rank_only(h) else h.confidence
        row.update({"source": h.source_name, "heading": h.chunk.heading,
                    "text": " ".join(plain_text(h.chunk.text).split())[:160]})
        if engineer:
            row.update({"granularity": h.chunk.granularity, "type": h.chunk.chunk_type})
            for name in RETRIEVERS:
                row[f"{name} rank"] = h.ranks.get(name)
                row[f"{name} raw"] = h.scores.get(name)
            row["chunk id"] = h.chunk.id
        rows.append(row)
    return pd.DataFrame(rows)
