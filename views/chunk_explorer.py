"""Chunk Explorer: how a document is split, why, and how two configurations differ."""

from __future__ import annotations

import streamlit as st

from rag_core.chunking.strategies import STRATEGIES
from rag_core.config import ChunkingConfig
from ui import explorer_link, state
from ui.explorer import explorer_view
from ui.explorer.explorer_view import GRANULARITY_OPTIONS, VIEWS, chunked, pick
from ui.router import halt
from ui.state import KEEP
from ui.units import human_size

st.title("Chunk Explorer")
explorer_view.take_picked_row()
prefill = state.take_prefill("explorer")
if prefill.get("strategy_b"):
    st.session_state["explorer_view"] = "A/B compare"
    st.session_state["b_strategy"] = prefill["strategy_b"] if prefill["strategy_b"] in STRATEGIES else "fixed"
link = explorer_link.take(prefill)  # a citation or a shared link: one chunk, with its index's settings

docs = state.guarded(lambda: state.document_store().list(), "Listing documents") or []
if not docs:
    st.info("No documents yet. Load the sample documents here, or upload your own on the Documents page.")
    if st.button("Load sample documents"):
        from rag_core.loaders import sample_paths
        from rag_core.loaders.document_store import add_files

        report = state.guarded(lambda: add_files(state.document_store(), sample_paths()), "Loading the samples")
        if report is not None:
            st.rerun()
    halt()

names = {d.id: f"{d.name} · {d.doc_type} · {human_size(d.size)}" for d in docs}
ids = list(names)
if link is not None:
    explorer_link.apply(link, names, state.active_config().chunking, explorer_view.overlap_limit)
if prefill.get("doc_id") in names:
    st.session_state["explorer_doc"] = prefill["doc_id"]
doc_id = st.selectbox("Document", ids, format_func=names.get, key="explorer_doc", persist_state=KEEP)
doc = state.document_store().get(doc_id)
if doc is None:
    st.error("That document is no longer stored; pick another one.")
    halt()

defaults = state.active_config().chunking
with st.sidebar:
    st.subheader("Configuration A")
    strategy, max_tokens, overlap = explorer_view.config_controls("a", defaults)
    made = STRATEGIES[strategy].granularities
    granularity = st.selectbox("Granularity", GRANULARITY_OPTIONS, key="explorer_granularity", persist_state=KEEP,
                               disabled=len(made) == 1,
                               help="The fixed-window baseline has one level only: paragraph-sized windows.")
    if len(made) == 1:
        granularity = made[0]
    color_by = st.radio("Colour by", ["chunk", "type"], horizontal=True, key="explorer_color", persist_state=KEEP)
    tuned = ChunkingConfig(strategy=strategy, max_tokens=max_tokens, overlap=overlap)
    if st.button("Use these settings", key="explorer_apply", type="primary", disabled=tuned == defaults,
                 help="Save this chunking into the active configuration and re-index every document with it "
                      "(a background job building a new index beside the current one; searches use the current index "
                      "until the new one is complete, then switch to it)."):
        state.guarded(lambda: explorer_view.use_settings(tuned), "Applying the chunking")
        st.rerun()
    if tuned == defaults:
        st.caption("These are the active configuration's chunking settings.")
explorer_view.applied_notice(tuned, defaults)
result = state.guarded(lambda: chunked(doc.id, strategy, max_tokens, overlap), "Chunking")
if result is None:
    halt()
all_chunks, report = result
shown = pick(all_chunks, granularity)
selected = st.session_state.get("explorer_selected")
view = st.radio("View", VIEWS, horizontal=True, key="explorer_view", label_visibility="collapsed",
                persist_state=KEEP)
explorer_link.show_note()

if view == "Source":
    explorer_view.render_source(doc, all_chunks, shown, granularity, color_by, selected)
elif view == "Chunk table":
    explorer_view.render_table(shown)
elif view == "Charts":
    explorer_view.render_charts(doc, all_chunks, shown, strategy, max_tokens)
elif view == "Integrity":
    explorer_view.render_integrity(report, max_tokens)
else:
    explorer_view.render_compare(doc, all_chunks, report, color_by, (strategy, max_tokens, overlap))
