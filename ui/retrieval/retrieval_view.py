"""Retrieval Lab renderers: every retrieval knob, a retrieval result (hits, iterations, context) and
"Why not retrieved?"."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from rag_core.config import RetrievalConfig, field_bounds
from rag_core.types import CHUNK_TYPES, GRANULARITIES, RETRIEVAL_STRATEGIES
from ui import engineer, explorer_link, state
from ui.retrieval import hits as hit_view
from ui.safe_text import md_inert

KNOB, KNOBS_FOR = "lab_knob_", "lab_knobs_for"


def _sync_knobs(current: RetrievalConfig) -> None:
    """Point the knob widgets at ``current`` when it changed elsewhere (or the widgets were dropped by a page switch).

    The widgets are keyed and read their value from session state only: a default that follows the active config
    would change the widget's identity on every change and lose every other pick.
    """
    keys = [KNOB + name for name in RetrievalConfig.model_fields]
    if st.session_state.get(KNOBS_FOR) == current and all(k in st.session_state for k in keys):
        return
    for name, value in current.model_dump().items():
        st.session_state[KNOB + name] = value if name != "chunk_types" else list(value or [])
    st.session_state[KNOBS_FOR] = current


def _number(where, label: str, name: str, **kw):
    """The number input of retrieval knob ``name``: its bounds are its ``RetrievalConfig`` field's (no copy here)."""
    return where.number_input(label, *field_bounds(f"retrieval.{name}"), key=KNOB + name, **kw)


def _slider(where, label: str, name: str, **kw):
    """The slider of retrieval knob ``name``, bounded by its ``RetrievalConfig`` field."""
    return where.slider(label, *field_bounds(f"retrieval.{name}"), key=KNOB + name, **kw)


def knobs(current: RetrievalConfig) -> RetrievalConfig | None:
    """Every retrieval knob, read from and validated into a new ``RetrievalConfig`` (None when invalid)."""
    _sync_knobs(current)
    c = st.columns(4)

    values = {
        "strategy": c[0].selectbox("Strategy", RETRIEVAL_STRATEGIES, key=KNOB + "strategy"),
        "fusion": c[0].radio("Hybrid fusion", ["rrf", "weighted"], horizontal=True, key=KNOB + "fusion"),
        "rrf_k": _number(c[0], "RRF k", "rrf_k"),
        "hybrid_weight": _slider(c[0], "Hybrid weight (vector share)", "hybrid_weight", step=0.05),
        "section_weight": _slider(c[0], "Section weight (passages ranked with their section)", "section_weight",
                                  step=0.25, help="Hybrid passage search with RRF: how much a passage's best-ranked "
                                                  "enclosing section counts (0: off)."),
        "initial_k": _number(c[1], "Initial k", "initial_k"),
        "max_k": _number(c[1], "Max k", "max_k"),
        "max_iterations": _number(c[1], "Max iterations", "max_iterations"),
        "min_confidence": _slider(c[2], "Min confidence (stop)", "min_confidence", step=0.05),
        "min_score": _slider(c[2], "Min relevance (drop hits below)", "min_score", step=0.05,
                             help="Acts on the relevance column (calibrated confidence, 0–1, the same for every "
                                  "strategy), not on the raw retriever scores."),
        "dedup_threshold": _slider(c[2], "De-dup threshold (cosine)", "dedup_threshold", step=0.01),
        "granularity": c[3].selectbox("Granularity", (*GRANULARITIES, "any"), key=KNOB + "granularity"),
        "chunk_types": c[3].multiselect("Chunk types (empty: from intent)", list(CHUNK_TYPES),
                                        key=KNOB + "chunk_types") or None,
        "use_intent_filter": c[3].checkbox("Intent → chunk-type filter", key=KNOB + "use_intent_filter"),
        "token_budget": _number(c[3], "Token budget", "token_budget", step=500),
    }
    shown_max_k = values["max_k"]
    values["max_k"] = max(values["max_k"], values["initial_k"])
    new = state.guarded(lambda: RetrievalConfig(**values), "Retrieval settings")
    if new is not None and new.max_k == shown_max_k:  # else the next run shows the raised max k
        st.session_state[KNOBS_FOR] = new
    return new


def confidence_chart(result, threshold: float) -> go.Figure:
    steps = [it.iteration for it in result.iterations]
    figure = go.Figure(go.Scatter(x=steps, y=[it.confidence for it in result.iterations], mode="lines+markers",
                                  name="confidence", text=[f"k={it.k} · {it.decision}" for it in result.iterations]))
    figure.add_hline(y=threshold, line_dash="dash", line_color="red", annotation_text=f"min confidence {threshold}")
    figure.update_layout(height=260, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis_range=[0, 1.05],
                         xaxis={"title": "iteration", "dtick": 1}, yaxis_title="confidence")
    return figure


def iterations_frame(result) -> pd.DataFrame:
    return pd.DataFrame([{
        "iteration": it.iteration, "strategy": it.strategy, "k": it.k,
        "granularity": str(it.filters.get("granularity")), "chunk types": str(it.filters.get("chunk_types")),
        "hits": len(it.hits), "below min relevance": len(it.below_min_score), "confidence": round(it.confidence, 3),
        "decision": it.decision, "why": it.decision_reason, "ms": round(it.elapsed_ms, 1)} for it in result.iterations])


def why_not(retriever, result, engineer: bool = False) -> None:
    from rag_core.retrieval.diagnose import LISTS, explain_missing, find_chunks

    st.subheader("Why not retrieved?")
    needle = st.text_input("Find the chunk you expected (text or heading)", key="lab_why_text")
    candidates = state.guarded(lambda: find_chunks(retriever.index, needle), "Chunk search") if needle else []
    if needle and not candidates:
        st.info("No chunk of the index contains that text or heading.")
    if not candidates:
        return
    chosen = st.selectbox("Expected chunk", candidates, key="lab_why_chunk", format_func=lambda c: (
        f"{retriever.source_name(c)} › {c.heading or '(top)'} · {c.granularity} · {' '.join(c.text.split())[:70]}"))
    why = state.guarded(lambda: explain_missing(retriever, result, chosen.id), "Diagnosis")
    if why is None:
        return
    (st.success if why.removed_by is None else st.warning)(md_inert(why.verdict))
    scope = "last pass's filters" if why.scope == "filtered" else "whole index"
    # The last row is the search's own rank, the number the verdict above says (fused, for hybrid).
    searched = "fused" if why.strategy == "hybrid" else f"{why.strategy} (this search)"
    ranks = [{"retriever": name, f"rank ({scope})": why.ranks.get(name), "raw score": why.scores.get(name),
              "RRF contribution": why.rrf_contributions.get(name)} for name in LISTS]
    ranks.append({"retriever": searched, f"rank ({scope})": why.rank, "raw score": why.scores.get("fused")
                  if why.strategy == "hybrid" else None, "RRF contribution": None})
    if not engineer:  # raw scores and the fusion's arithmetic are engineer details
        ranks = [{k: v for k, v in row.items() if k in ("retriever", f"rank ({scope})")} for row in ranks]
    st.dataframe(pd.DataFrame(ranks), hide_index=True)
    st.dataframe(pd.DataFrame([{"step": c.step, "passed": c.passed, "detail": c.detail} for c in why.checks]),
                 hide_index=True)


def engineer_toggle() -> bool:
    """The one switch for engineer details (raw scores and ranks, chunk ids, iterations, token accounting)."""
    return engineer.toggle()


def _metrics(result) -> None:
    cols = st.columns(4)
    cols[0].metric("Route", result.route)
    cols[1].metric("Intent", result.intent)
    if result.hits and all(hit_view.rank_only(h) for h in result.hits):
        cols[2].metric("Query terms found (top 3)", f"{result.confidence:.0%}",
                       help="Keyword search has no relevance scale: this is the share of the query's terms the top "
                            "hits contain, not a confidence that they answer it.")
    else:
        cols[2].metric("Confidence", f"{result.confidence:.2f}", help="Mean relevance of the top 3 hits (0–1).")
    cols[3].metric("Time", f"{result.elapsed_ms:.0f} ms")


def _hits(result, engineer: bool) -> None:
    dropped = sum(len(it.below_min_score) for it in result.iterations)
    note = hit_view.relevance_note(result)
    if dropped or engineer:
        note += f" Min relevance {(result.config or RetrievalConfig()).min_score} dropped {dropped} hit(s)."
    if engineer:
        note += " Raw scores are each retriever's own scale (cosine, BM25, RRF)."
    st.caption(note)
    ordered = hit_view.in_relevance_order(result.hits)
    raw = {f"{name} raw": st.column_config.NumberColumn(f"{name} raw", format="%.3f")
           for name in hit_view.RETRIEVERS} if engineer else {}
    st.dataframe(hit_view.hits_frame(result, engineer), hide_index=True, column_config={
        "#": st.column_config.NumberColumn("#", help="rank: the order the search returned the hits in"),
        "relevance": st.column_config.ProgressColumn(
            "relevance" if ordered else "relevance (not the order)", min_value=0.0, max_value=1.0, format="%.2f",
            help="calibrated confidence, 0–1" + ("" if ordered else "; the hits are listed by rank (#), not by it")),
        "query terms": st.column_config.TextColumn(
            "query terms", help="how many of the query's terms the hit contains (keyword search: rank only)"),
        "heading": st.column_config.TextColumn("heading", width="medium"),
        "text": st.column_config.TextColumn("text", width="large"), **raw})
    with st.expander(f"Hit texts with the query's terms highlighted ({len(result.hits)})", expanded=True):
        st.html("".join(hit_view.hit_card_html(i, hit, result.rewritten_query, engineer)
                        for i, hit in enumerate(result.hits, start=1)))
    _open_hit(result)


def _open_hit(result) -> None:
    """A hit in its document: the Chunk Explorer's Source view on it, chunked with the index's settings."""
    labels = {i: f"#{i} · {hit.source_name or hit.chunk.doc_id} › {hit.chunk.heading or '(top)'}"
              for i, hit in enumerate(result.hits, start=1)}
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    number = left.selectbox("See a hit in its document", list(labels), format_func=labels.get, key="lab_open_hit")
    if right.button("Open in Chunk Explorer", key="lab_open_hit_button", width="stretch") and number in labels:
        explorer_link.open_hit(result.hits[number - 1])


def render_result(result, engineer: bool = False) -> None:
    """Route, intent, confidence and time; the hits (a table and the texts highlighted); the formatted context;
    with ``engineer``, the route's reason, raw scores, every iteration and its confidence, and token accounting."""
    _metrics(result)
    if engineer:
        st.text(f"Why {result.route}: {result.route_reason}\nSearched for: {result.rewritten_query}")
    elif result.rewritten_query.strip() != result.query.strip():
        st.caption(f"Searched for: {md_inert(result.rewritten_query)}")
    if not result.hits:
        st.info("No hits: try another strategy, a lower min score or a wider granularity.")
    else:
        _hits(result, engineer)
    passes = len(result.iterations)
    if engineer:
        st.subheader("Iterations")
        st.dataframe(iterations_frame(result), hide_index=True)
        st.plotly_chart(confidence_chart(result, (result.config or RetrievalConfig()).min_confidence))
    elif passes > 1:
        st.caption(f"Searched {passes} times, widening the search while the hits were not confident enough "
                   "(Engineer details shows each pass).")
    st.subheader("Formatted context")
    ctx = result.context
    if engineer:
        st.progress(min(ctx.tokens / ctx.budget, 1.0), text=f"{ctx.tokens} of {ctx.budget} tokens")
        st.text(f"{len(ctx.included)} included, {len(ctx.truncated)} truncated, {len(ctx.dropped)} dropped; "
                f"de-dup removed {len(result.dedup.dropped)} chunk(s), {result.dedup.tokens_saved} tokens saved")
    else:
        st.caption(f"{len(ctx.included)} passage(s) in the context, within its token budget.")
    st.code(ctx.text or "(empty)", language=None)
