"""Retrieval Lab: run one query with every retrieval knob exposed and see each decision of dynamic retrieval."""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.retrieval import retrieval_view

RESULT_KEY, QUERY_KEY, LAST_KEY = "lab_result", "lab_query", "lab_last_query"

st.title(":material/science: Retrieval Lab")
config = state.active_config()
prefill = state.take_prefill("lab")
if prefill.get("query"):
    st.session_state[QUERY_KEY] = prefill["query"]
elif QUERY_KEY not in st.session_state and LAST_KEY in st.session_state:  # back from another page: keep the query
    st.session_state[QUERY_KEY] = st.session_state[LAST_KEY][0]
with st.expander("Retrieval settings (saved into the active configuration)", expanded=False):
    new = retrieval_view.knobs(config.retrieval)
    settings = state.settings()
    web = f"configured at {settings.web_search_url}" if settings.web_configured else "not configured"
    st.caption(f"Web route: {web} (RAG_WEB_SEARCH_URL, a SearxNG-compatible JSON endpoint)")
if new is not None and new != config.retrieval:
    config = config.model_copy(update={"retrieval": new})
    state.set_active_config(config)

query = st.text_input("Query", key=QUERY_KEY, placeholder="e.g. How do I rotate the API key?")
clicked = st.button("Search", type="primary")
engineer = retrieval_view.engineer_toggle()
index = state.guarded(lambda: state.index_for(config), "Opening the index")
if index is not None and not any((state.guarded(index.count, "Counting chunks") or {}).values()):
    st.info(state.empty_index_message())
elif index is not None:
    retriever = state.retriever(index, config.retrieval)
    # A new query or new settings search again: the hits shown always match the settings above them.
    asked = (query, config.retrieval)
    if query.strip() and (clicked or prefill.get("query") or asked != st.session_state.get(LAST_KEY)):
        st.session_state[LAST_KEY] = asked
        with st.spinner("Searching…"):  # an LLM router or a cold embedding model can take seconds
            st.session_state[RESULT_KEY] = state.guarded(lambda: retriever.retrieve(query), "Search")
    elif clicked:
        st.warning("Type a query first.")
    result = st.session_state.get(RESULT_KEY)
    if result is not None:
        retrieval_view.render_result(result, engineer)
        retrieval_view.why_not(retriever, result, engineer)
