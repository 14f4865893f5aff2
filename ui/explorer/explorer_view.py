"""Chunk Explorer renderers: the cached chunking of a stored document, the A/B configuration controls, applying
a chunking, and the five views (source, table, charts, integrity, A/B compare)."""

from __future__ import annotations

import streamlit as st

from rag_core.chunking.strategies import STRATEGIES, STRATEGY_NAMES
from rag_core.config import ChunkingConfig, field_bounds
from rag_core.types import GRANULARITIES, Chunk
from ui import jobs, reindex_view, state
from ui.explorer import chunk_view
from ui.safe_text import md_escape
from ui.state import KEEP

VIEWS = ("Source", "Chunk table", "Charts", "Integrity", "A/B compare")
# Paragraph first: the selectbox starts on it.
GRANULARITY_OPTIONS = (*sorted(GRANULARITIES, key=lambda g: g != "paragraph"), "all")
TABLE_KEY, TABLE_IDS_KEY = "explorer_table", "explorer_table_ids"
APPLIED_KEY = "explorer_applied"  # the re-index job just started from "Use these settings"
MAX_OVERLAP, OVERLAP_STEP = 256, 4


@st.cache_data(show_spinner="Chunking the document…", max_entries=64)
def chunked(doc_id: str, strategy: str, max_tokens: int, overlap: int) -> tuple[list[Chunk], dict]:
    """Chunks of a stored document at all granularities and their lint report (cached on doc id + parameters)."""
    from rag_core.chunking import chunk_document, lint

    doc = state.document_store().get(doc_id)
    if doc is None:
        raise ValueError("this document is no longer stored; pick another one")
    config = ChunkingConfig(strategy=strategy, max_tokens=max_tokens, overlap=overlap)
    chunks = chunk_document(doc, config, "all")
    return chunks, lint(doc, chunks, max_tokens=max_tokens).to_dict()


def pick(chunks: list[Chunk], granularity: str) -> list[Chunk]:
    if granularity == "all" or not chunks:
        return chunks
    return [c for c in chunks if c.granularity == granularity]


def take_picked_row() -> None:
    """A chunk-table row was picked: select that chunk and switch to the source view (runs before the widgets)."""
    picked = st.session_state.get(TABLE_KEY) or {}
    rows = picked.get("selection", {}).get("rows", [])
    ids = st.session_state.get(TABLE_IDS_KEY, [])
    if rows and rows[0] < len(ids):
        st.session_state["explorer_selected"] = ids[rows[0]]
        st.session_state["explorer_view"] = "Source"


def overlap_limit(max_tokens: int) -> int:
    """The largest overlap the slider offers for ``max_tokens``: half of it (so overlap < max tokens always)."""
    return min(MAX_OVERLAP, max_tokens // 2 // OVERLAP_STEP * OVERLAP_STEP)


def config_controls(prefix: str, defaults: ChunkingConfig, strategy: str | None = None) -> tuple[str, int, int]:
    strategies = list(STRATEGY_NAMES)
    chosen = st.radio("Strategy", strategies, index=strategies.index(strategy or defaults.strategy),
                      horizontal=True, key=f"{prefix}_strategy", persist_state=KEEP)
    low, high = field_bounds("chunking.max_tokens")
    max_tokens = st.slider("Max tokens", low, high, defaults.max_tokens, 32, key=f"{prefix}_max_tokens",
                           persist_state=KEEP)
    limit, overlap_key = overlap_limit(max_tokens), f"{prefix}_overlap"
    if st.session_state.get(overlap_key, 0) > limit:  # a smaller max tokens pulls the overlap down with it
        st.session_state[overlap_key] = limit
    overlap = st.slider("Overlap (tokens)", 0, limit, min(defaults.overlap, limit), OVERLAP_STEP, key=overlap_key,
                        persist_state=KEEP, help=f"At most half of max tokens ({limit} here).")
    return chosen, max_tokens, overlap


def use_settings(chunking: ChunkingConfig) -> None:
    """Save ``chunking`` into the active configuration (stored for every session; a saved one stays as it is) and
    re-index every stored document with it beside the serving index, as a background job (``reindex_view``)."""
    config = state.active_config().model_copy(update={"chunking": chunking})
    with st.spinner("Saving the chunking into the active configuration and queuing the re-index of every "
                    "document…"):
        job = reindex_view.start(config)
    if job is reindex_view.WAITING:  # a long re-index: its estimate and the choice first (reindex_view.status)
        st.session_state.pop(APPLIED_KEY, None)
        return
    st.session_state[APPLIED_KEY] = (job.title, job.id) if job is not None else (None, None)


def applied_notice(tuned: ChunkingConfig, defaults: ChunkingConfig) -> None:
    """After "Use these settings": what was saved and the re-index job, until the sliders move on; in any session,
    the re-index building beside the serving index or the one the active configuration still needs."""
    applied_job = None
    if st.session_state.get(APPLIED_KEY) and tuned == defaults:  # shown until the sliders move on
        applied_title, applied_job = st.session_state[APPLIED_KEY]
        name = md_escape(state.active_config().name)
        with st.expander(f"Saved into the active configuration `{state.active_config().name}`", expanded=True):
            if applied_job is None:
                st.success(f"Saved into the active configuration `{name}`; the index searches use is already "
                           "built with these settings.")
            else:
                pointer = state.serving_pointer()
                serving = pointer.serving
                waiting = (f" Searches use the complete index {md_escape(serving.collection)} "
                           f"({md_escape(serving.describe())}) until it is done, then switch to the new one."
                           if pointer.reindex is not None and pointer.reindex.job == applied_job else "")
                st.success(f"Saved into the active configuration `{name}`; {md_escape(applied_title)} runs in the "
                           f"background (also shown in the sidebar).{waiting}")
                jobs.job_details(applied_job)
    elif tuned != defaults:
        st.session_state.pop(APPLIED_KEY, None)
    reindex_view.status(skip_job=applied_job)


def render_source(doc, all_chunks: list[Chunk], shown: list[Chunk], granularity: str, color_by: str,
                  selected: str | None) -> None:
    """The document with the shown chunks highlighted, scrolled to the selected chunk."""
    st.caption(f"{len(shown)} chunks at {granularity} granularity · hover a span for its details")
    st.html(chunk_view.legend_html(color_by))
    selected_chunk = next((c for c in all_chunks if c.id == selected), None)
    if selected_chunk is not None:
        st.info(f"Selected: {md_escape(chunk_view.chunk_title(1 + shown.index(selected_chunk), selected_chunk))}"
                if selected_chunk in shown else f"Selected chunk is at {selected_chunk.granularity} granularity.")
    window = chunk_view.source_window(len(doc.text), selected_chunk.start if selected_chunk else None)
    if window != (0, len(doc.text)):
        st.caption(f"Long document: characters {window[0]:,}–{window[1]:,} of {len(doc.text):,} are drawn "
                   "(select a chunk in the table to move there); the table and charts cover all of it.")
    # Document text is escaped by highlight_html; JavaScript is only our scroll-to-selected-chunk line.
    st.html(chunk_view.highlight_html(doc.text, shown, color_by, selected, window=window),
            unsafe_allow_javascript=bool(selected))


def render_table(shown: list[Chunk]) -> None:
    """The chunk table; picking a row selects that chunk in the source view."""
    st.caption("Pick a row to see that chunk in the source.")
    st.session_state[TABLE_IDS_KEY] = [c.id for c in shown]
    st.dataframe(chunk_view.chunk_table(shown), hide_index=True, key=TABLE_KEY, selection_mode="single-row",
                 on_select="rerun")


def render_charts(doc, all_chunks: list[Chunk], shown: list[Chunk], strategy: str, max_tokens: int) -> None:
    """Chunk sizes and, for a strategy with a hierarchy (structure), its treemap."""
    st.plotly_chart(chunk_view.size_histogram(shown, max_tokens))
    if STRATEGIES[strategy].hierarchy:
        st.plotly_chart(chunk_view.treemap(all_chunks, doc.name))
    else:
        st.caption("The fixed-window baseline has no hierarchy, so there is no treemap.")


def render_integrity(report: dict, max_tokens: int) -> None:
    """The lint report: violations, checks and the flagged oversized atomic blocks."""
    columns = st.columns(4)
    columns[0].metric("Violations", report["total"])
    columns[1].metric("Chunks checked (all granularities)", report["chunks"],
                      help="Every chunk of every granularity is checked; the Source view counts one granularity.")
    columns[2].metric("Oversized atomic (flagged)", report["oversized_atomic"])
    columns[3].metric("Max tokens", max_tokens)
    st.dataframe([{"check": k, "count": n} for k, n in report["counts"].items()], hide_index=True)
    if report["violations"] or report["oversized"]:
        st.dataframe(chunk_view.findings_table(report["violations"] + report["oversized"]), hide_index=True)
    else:
        st.success("No structure violations: no code fence, table, list item, heading or sentence is cut.")


def render_compare(doc, all_chunks: list[Chunk], report: dict, color_by: str, config_a: tuple[str, int, int]) -> None:
    """Configuration B beside A: paragraph-level summaries, both highlighted sources and the boundary differences."""
    strategy, max_tokens, overlap = config_a
    with st.expander("Configuration B", expanded=True):
        strategy_b, max_b, overlap_b = config_controls("b", ChunkingConfig(strategy="fixed", overlap=32))
    result_b = state.guarded(lambda: chunked(doc.id, strategy_b, max_b, overlap_b), "Chunking with B")
    if result_b is not None:
        chunks_b, report_b = result_b
        leaf_a, leaf_b = pick(all_chunks, "paragraph"), pick(chunks_b, "paragraph")
        sum_a, sum_b = chunk_view.summary(leaf_a, report["total"]), chunk_view.summary(leaf_b, report_b["total"])
        st.caption("Paragraph-level chunks compared; Δ is B minus A.")
        for column, (label, value_b) in zip(st.columns(len(sum_b)), sum_b.items(), strict=True):
            column.metric(f"B: {label}", value_b, delta=round(value_b - sum_a[label], 1), delta_color="off",
                          help=f"A: {sum_a[label]}")
        st.dataframe(chunk_view.compare_table(sum_a, sum_b), hide_index=True)
        left, right = st.columns(2)
        left.markdown(f"**A** · {strategy} · {max_tokens} tok · overlap {overlap}")
        right.markdown(f"**B** · {strategy_b} · {max_b} tok · overlap {overlap_b}")
        with left:
            st.html(chunk_view.highlight_html(doc.text, leaf_a, color_by, height_px=420))
        with right:
            st.html(chunk_view.highlight_html(doc.text, leaf_b, color_by, height_px=420))
        diff = chunk_view.boundary_diff(doc.text, leaf_a, leaf_b)
        st.subheader(f"Boundary differences ({len(diff)})")
        st.dataframe(diff, hide_index=True)
