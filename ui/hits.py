"""Search hits for people: one relevance scale (the calibrated confidence), raw per-retriever scores and ranks
beside it, and the hit text with the query's terms highlighted.

Hit text comes from documents (untrusted): every piece is HTML-escaped before it is wrapped in our own ``<mark>``
tags, so markup in a document is shown, never rendered or run.
"""

from __future__ import annotations

import html
import re

import pandas as pd

from rag_core.retrieval.text import content_terms

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
PREVIEW_CHARS = 700
RETRIEVERS = ("vector", "keyword", "fused")


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


def hit_card_html(number: int, hit, query: str) -> str:
    """One hit: rank, relevance bar, source › heading, raw scores, highlighted text (all text escaped)."""
    relevance = max(0.0, min(hit.confidence, 1.0))
    heading = " › ".join(hit.chunk.heading_path) or "(top of the document)"
    return (
        '<div style="border:1px solid #ddd;border-radius:8px;padding:8px 12px;margin:6px 0;font-size:0.9rem">'
        '<div style="display:flex;gap:12px;align-items:center">'
        f'<b>#{number}</b>'
        f'<div title="relevance (calibrated confidence)" style="width:120px;height:10px;background:#eee;'
        f'border-radius:5px"><div style="width:{relevance * 100:.0f}%;height:10px;background:#4c78a8;'
        f'border-radius:5px"></div></div><b>{relevance:.2f}</b>'
        f'<span>{html.escape(hit.source_name or hit.chunk.doc_id)} › {html.escape(heading)}</span>'
        f'<span style="color:#888">{html.escape(hit.chunk.granularity)} · {html.escape(hit.chunk.chunk_type)}</span>'
        '</div>'
        f'<div style="color:#888;font-size:0.8rem;margin:2px 0 4px">raw: {html.escape(raw_scores(hit))}</div>'
        f'<div style="white-space:pre-wrap">{highlight_html(hit.chunk.text, query)}</div>'
        '</div>'
    )


def hits_frame(result) -> pd.DataFrame:
    """The hits as a table: relevance first, then where each came from, raw ranks and scores, the chunk id last."""
    rows = []
    for i, h in enumerate(result.hits, start=1):
        row = {"#": i, "relevance": h.confidence, "source": h.source_name, "heading": h.chunk.heading,
               "text": " ".join(h.chunk.text.split())[:160], "granularity": h.chunk.granularity,
               "type": h.chunk.chunk_type}
        for name in RETRIEVERS:
            row[f"{name} rank"] = h.ranks.get(name)
            row[f"{name} raw"] = h.scores.get(name)
        row["chunk id"] = h.chunk.id
        rows.append(row)
    return pd.DataFrame(rows)
