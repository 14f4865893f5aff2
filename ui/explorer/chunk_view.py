"""Renderers for the Chunk Explorer: highlighted source, chunk table, size histogram, treemap, A/B comparison.

Pure functions of chunks and documents (no Streamlit calls), so they are unit-tested directly. Every piece of
document text that ends up in HTML goes through ``html.escape``: documents may hold ``<script>``; chart labels and
hovers go through ``plot_text`` (Plotly draws ``<a href>`` in them).
"""

from __future__ import annotations

import html
import re
import statistics
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from rag_core.types import HEADING_SEPARATOR, Chunk
from ui.safe_text import plot_text

# The first heading line anywhere in a chunk's text (a label: searched in the whole text at once, so not
# markdown_blocks.HEADING_LINE, which reads one line at a time).
_HEADING_LINE = re.compile(r"^#{1,6}\s+(.+)$", re.MULTILINE)

# Pastel colours, distinguishable side by side; chunks cycle through them in document order.
PALETTE = ("#cde7ff", "#ffe1b3", "#d4f5d0", "#f8d0e6", "#e3dcff", "#fff3a8", "#c9f1ef", "#ffd6cc")
TYPE_COLORS = {
    "prose": "#cde7ff", "code": "#ffe1b3", "table": "#d4f5d0", "list": "#e3dcff", "quote": "#f8d0e6",
    "heading": "#fff3a8",
}
SELECTED_OUTLINE = "2px solid #d6336c"


def chunk_title(number: int, chunk: Chunk) -> str:
    """Hover text of a chunk: number, tokens, type, heading path and flags."""
    flags = [name for name, on in (("oversized", chunk.oversized), ("continued", chunk.continued),
                                   ("synthesised text", not chunk.verbatim)) if on]
    heading = chunk.heading or "(before the first heading)"
    extra = f" · {', '.join(flags)}" if flags else ""
    language = f" ({chunk.language})" if chunk.language else ""
    pages = page_label(chunk)
    where = f" · {pages}" if pages else ""
    return f"Chunk #{number} · {chunk.tokens} tokens · {chunk.chunk_type}{language} · {heading}{where}{extra}"


def page_label(chunk: Chunk) -> str:
    """"page 3" or "pages 3–4" for a chunk of a PDF ("" for other documents)."""
    pages = chunk.metadata.get("pages") or []
    if not pages:
        return ""
    return f"page {pages[0]}" if len(pages) == 1 else f"pages {pages[0]}–{pages[-1]}"


def _colour(chunk: Chunk, number: int, color_by: str) -> str:
    if color_by == "type":
        return TYPE_COLORS.get(chunk.chunk_type, PALETTE[0])
    return PALETTE[(number - 1) % len(PALETTE)]


# Longer documents show a window of the source: a browser slows to a crawl on megabytes of styled spans.
SOURCE_WINDOW_CHARS = 200_000


def source_window(length: int, focus: int | None = None, limit: int = SOURCE_WINDOW_CHARS) -> tuple[int, int]:
    """The [start, end) character window of a ``length``-long source to draw, centred on ``focus`` if given."""
    if length <= limit:
        return 0, length
    start = 0 if focus is None else max(0, min(focus - limit // 2, length - limit))
    return start, start + limit


def highlight_html(text: str, chunks: Sequence[Chunk], color_by: str = "chunk", selected_id: str | None = None,
                   height_px: int = 520, window: tuple[int, int] | None = None) -> str:
    """The source with each chunk's span drawn as a coloured ``<span>`` (overlaps striped), hover titles,
    the selected chunk outlined (``id="selected-chunk"``). All document text is escaped. ``window`` limits the
    drawing to a character range of the source (see ``source_window``)."""
    if color_by not in ("chunk", "type"):
        raise ValueError(f"color_by must be 'chunk' or 'type', not {color_by!r}")
    low, high = window or (0, len(text))
    # Chunk numbers stay those of the whole list when a window hides some chunks.
    numbered = sorted(((n, c) for n, c in enumerate(chunks, start=1) if c.end > low and c.start < high),
                      key=lambda nc: (nc[1].start, nc[1].end))
    cuts = sorted({low, high, *(max(low, min(c.start, high)) for _, c in numbered),
                   *(max(low, min(c.end, high)) for _, c in numbered)})
    parts: list[str] = []
    active: list[tuple[int, Chunk]] = []
    next_chunk = 0
    marked_selected = False
    for seg_start, seg_end in zip(cuts, cuts[1:], strict=False):
        while next_chunk < len(numbered) and numbered[next_chunk][1].start <= seg_start:
            active.append(numbered[next_chunk])
            next_chunk += 1
        active = [(n, c) for n, c in active if c.end > seg_start]
        segment = html.escape(text[seg_start:seg_end])
        covering = [(n, c) for n, c in active if c.start <= seg_start and c.end >= seg_end]
        if not covering:
            parts.append(segment)
            continue
        colours = [_colour(c, n, color_by) for n, c in covering]
        if len(colours) == 1:
            background = f"background:{colours[0]}"
        else:  # overlap: stripes of the overlapping chunks' colours
            stops = ", ".join(f"{col} {i * 6}px, {col} {(i + 1) * 6}px" for i, col in enumerate(colours))
            background = f"background:repeating-linear-gradient(135deg, {stops})"
        title = html.escape(" | ".join(chunk_title(n, c) for n, c in covering), quote=True)
        style = background
        anchor = ""
        if selected_id and any(c.id == selected_id for _, c in covering):
            style += f";outline:{SELECTED_OUTLINE}"
            if not marked_selected:
                anchor, marked_selected = ' id="selected-chunk"', True
        css_class = "chunk overlap" if len(covering) > 1 else "chunk"
        parts.append(f'<span class="{css_class}"{anchor} style="{style}" title="{title}">{segment}</span>')
    scroll = ""
    if marked_selected:
        # A function scope: st.html runs every script in the page's one global scope, where a second drawing's
        # top-level ``const s`` threw "Identifier 's' has already been declared".
        scroll = ("<script>(function(){const s=document.getElementById('selected-chunk');"
                  "if(s){s.scrollIntoView({block:'center'});}})();</script>")
    return (
        f'<div class="chunk-source" style="white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:13px;'
        f'line-height:1.5;max-height:{height_px}px;overflow-y:auto;padding:8px;border:1px solid #ddd;'
        f'border-radius:6px">{"".join(parts)}</div>{scroll}'
    )


def legend_html(color_by: str) -> str:
    if color_by == "type":
        items = [f'<span style="background:{c};padding:0 6px;margin-right:6px">{t}</span>'
                 for t, c in TYPE_COLORS.items()]
    else:
        items = ['<span style="padding:0 6px">each chunk its own colour;</span>']
    stripes = "repeating-linear-gradient(135deg, #cde7ff 0 6px, #ffe1b3 6px 12px)"
    items.append(f'<span style="background:{stripes};padding:0 6px">overlap</span>')
    return '<div style="font-size:12px">' + "".join(items) + "</div>"


def chunk_table(chunks: Sequence[Chunk]) -> pd.DataFrame:
    """One row per chunk: number, granularity, type, tokens, span, heading path, flags, a preview."""
    return pd.DataFrame(
        [
            {
                "#": i, "granularity": c.granularity, "type": c.chunk_type, "language": c.language or "",
                "tokens": c.tokens, "start": c.start, "end": c.end, "pages": page_label(c), "heading": c.heading,
                "verbatim": c.verbatim, "oversized": c.oversized, "continued": c.continued,
                "preview": " ".join(c.text.split())[:90], "id": c.id,
            }
            for i, c in enumerate(chunks, start=1)
        ],
        columns=["#", "granularity", "type", "language", "tokens", "start", "end", "pages", "heading", "verbatim",
                 "oversized", "continued", "preview", "id"],
    )


def size_histogram(chunks: Sequence[Chunk], max_tokens: int, title: str = "Chunk sizes") -> go.Figure:
    figure = go.Figure(go.Histogram(x=[c.tokens for c in chunks], nbinsx=30, marker_color="#4c8bf5"))
    figure.add_vline(x=max_tokens, line_dash="dash", line_color="#d6336c", annotation_text=f"max {max_tokens}")
    figure.update_layout(title=title, xaxis_title="tokens (cl100k)", yaxis_title="chunks", height=320,
                         margin={"l": 40, "r": 20, "t": 50, "b": 40})
    return figure


def _plain_label(text: str, words: int = 6) -> str:
    """A short one-line label from document text; ``<``/``>`` swapped so Plotly never reads markup in it."""
    parts = text.split()
    short = " ".join(parts[:words]) + (" …" if len(parts) > words else "")
    return short.replace("<", "‹").replace(">", "›")  # (plot_text escapes &: Plotly shows it as typed)


def part_label(chunk: Chunk) -> str:
    """``part 4 of 22`` for a document or section stored as consecutive parts (see ``rag_core.chunking``)."""
    return f"part {chunk.metadata['part']} of {chunk.metadata['parts']}"


def part_heading(chunk: Chunk, by_id: dict[str, Chunk]) -> str:
    """The heading a part of a document or section opens under, below the part's own heading path: that of the
    first paragraph it holds (its last two levels), else a Markdown heading line in its text; "" when none."""
    first = chunk
    while first.child_ids and first.child_ids[0] in by_id:
        first = by_id[first.child_ids[0]]
    deeper = first.heading_path[len(chunk.heading_path):] if first is not chunk else []
    if deeper:
        return HEADING_SEPARATOR.join(deeper[-2:])
    line = _HEADING_LINE.search(chunk.text)
    heading = line.group(1).strip() if line else ""
    return "" if chunk.heading_path and heading == chunk.heading_path[-1] else heading


def _box_label(chunk: Chunk, by_id: dict[str, Chunk]) -> str:
    """A treemap box's label: a paragraph's first words, a section's heading, a part by the heading it opens
    under (``part N of M`` only for a part under no heading)."""
    if chunk.granularity == "paragraph":  # its first words after any heading line it repeats
        body = "\n".join(line for line in chunk.text.splitlines() if not line.lstrip().startswith("#"))
        return f"¶ {_plain_label(body.strip() or chunk.text)}"
    inner = part_heading(chunk, by_id) if chunk.metadata.get("parts") else ""
    if chunk.granularity == "section":
        label = _plain_label(chunk.heading_path[-1], 10) if chunk.heading_path else "Section"
        if chunk.metadata.get("parts"):
            label += f" › {_plain_label(inner, 10)}" if inner else (" (continued)" if chunk.metadata["part"] > 1
                                                                    else "")
        return label
    if chunk.metadata.get("parts"):  # a document stored as consecutive parts, under the document's name
        return _plain_label(inner, 10) if inner else part_label(chunk).capitalize()
    return "Whole document"


def treemap(chunks: Sequence[Chunk], document_name: str) -> go.Figure:
    """Document → sections → paragraphs in document order, each box sized by tokens, labelled by its heading or
    its first words (rows left out: they repeat their table)."""
    kept = sorted((c for c in chunks if c.granularity in ("document", "section", "paragraph")),
                  key=lambda c: (("document", "section", "paragraph").index(c.granularity), c.start, c.position))
    ids = {c.id for c in kept}
    by_id = {c.id: c for c in chunks}
    root = "__root__"
    labels, parents, values, node_ids, hover = [_plain_label(document_name, 12)], [""], [0], [root], [
        _plain_label(document_name, 12)]
    for c in kept:
        node_ids.append(c.id)
        parents.append(c.parent_id if c.parent_id in ids else root)
        label = _box_label(c, by_id)
        labels.append(label)
        values.append(c.tokens if c.granularity == "paragraph" else 0)
        hover.append(_plain_label(f"{c.granularity} · {c.chunk_type} · {c.tokens} tokens · {c.heading or '(top)'}",
                                  40))
    figure = go.Figure(go.Treemap(ids=node_ids, labels=[plot_text(label) for label in labels], parents=parents,
                                  values=values, sort=False, branchvalues="remainder",
                                  hovertext=[plot_text(text) for text in hover], hoverinfo="text", maxdepth=3,
                                  textfont={"size": 13}))
    figure.update_layout(height=520, margin={"l": 0, "r": 0, "t": 10, "b": 0})
    return figure


def summary(chunks: Sequence[Chunk], violations: int) -> dict[str, float]:
    """Count, mean/min/max tokens and violations of a chunk list (zeros when empty)."""
    sizes = [c.tokens for c in chunks]
    return {
        "chunks": len(sizes),
        "mean tokens": round(statistics.fmean(sizes), 1) if sizes else 0.0,
        "min tokens": min(sizes, default=0),
        "max tokens": max(sizes, default=0),
        "violations": violations,
    }


def compare_table(a: dict[str, float], b: dict[str, float]) -> pd.DataFrame:
    """Metrics of configuration A and B side by side with the difference B − A."""
    return pd.DataFrame([{"metric": k, "A": a[k], "B": b[k], "Δ (B − A)": round(b[k] - a[k], 1)} for k in a],
                        columns=["metric", "A", "B", "Δ (B − A)"])


def boundaries(chunks: Sequence[Chunk], text: str = "") -> set[int]:
    """Where the chunks cut the text: each chunk's start (past leading white space) except at the very beginning.

    One cut is one position: the end of a chunk and the start of the next (a blank line apart) were counted as
    two boundaries, so every difference appeared twice.
    """
    cuts = set()
    for c in chunks:
        start = c.start
        while start < len(text) and text[start].isspace():
            start += 1
        cuts.add(start)
    first = min(cuts, default=0)
    return {pos for pos in cuts if pos > first}


def boundary_diff(text: str, a: Sequence[Chunk], b: Sequence[Chunk], context: int = 30) -> pd.DataFrame:
    """Boundaries present in only one configuration, with the text around each (for the A/B view)."""
    cuts_a, cuts_b = boundaries(a, text), boundaries(b, text)
    only_a, only_b = cuts_a - cuts_b, cuts_b - cuts_a
    rows = [
        {"offset": pos, "boundary in": "A only" if pos in only_a else "B only",
         "context": (text[max(0, pos - context) : pos] + " ⟂ " + text[pos : pos + context]).replace("\n", "⏎")}
        for pos in sorted(only_a | only_b)
    ]
    return pd.DataFrame(rows, columns=["offset", "boundary in", "context"])


def findings_table(findings: Sequence[dict]) -> pd.DataFrame:
    """Lint findings, one row per (kind, span): the same cut seen by several chunks (one per granularity) was
    listed once per chunk; ``chunks`` says how many chunks share it."""
    rows: dict[tuple, dict] = {}
    for f in findings:
        key = (f["kind"], f["start"], f["end"])
        if key in rows:
            rows[key]["chunks"] += 1
        else:
            rows[key] = {"kind": f["kind"], "start": f["start"], "end": f["end"], "chunks": 1, "detail": f["detail"],
                         "first chunk": f["chunk_id"]}
    return pd.DataFrame(list(rows.values()), columns=["kind", "start", "end", "chunks", "detail", "first chunk"])
