"""Re-indexing from the page: start one (after "Use these settings"), and say truthfully which index searches use
while one builds, or that the active configuration's settings still need one (with the button to start it)."""

from __future__ import annotations

import streamlit as st

from rag_core.config import RAGConfig
from ui import jobs, state
from ui.safe_text import md_escape, md_inert


def start(config: RAGConfig):
    """Save ``config`` as the active configuration for everyone and re-index every stored document with it beside
    the serving index; the job's status, or None when the serving index is already built that way."""
    from rag_core.serving.reindex import start_reindex

    docs = state.document_store().list()
    job = start_reindex(state.settings(), config, state.index_to_build(config), docs, runner=jobs.runner(),
                        previous=state.active_config())
    st.session_state[state.ACTIVE_CONFIG_KEY] = config
    return job


def status(skip_job: str | None = None) -> None:
    """The re-index building beside the serving index (unless it is ``skip_job``, shown elsewhere), or the one the
    active configuration needs, or how the last one ended."""
    config = state.active_config()
    pointer = state.serving_pointer()
    serving = pointer.serving
    if pointer.reindex is not None:
        if pointer.reindex.job == skip_job:
            return
        st.info(md_inert(f"Re-indexing with {pointer.reindex.target.describe()} in the background; searches use "
                         f"the complete index {serving.collection} ({serving.describe()}) until the new one is "
                         "complete, then switch to it."))
        jobs.job_details(pointer.reindex.job, "reindex")
        return
    if serving.collection == config.collection_name():
        return
    from rag_core.serving.activestate import IndexSpec

    wanted = IndexSpec.of(config)
    with st.container(border=True):
        st.warning(md_inert(f"The index searches use was built with {serving.describe()}; the active configuration "
                            f"`{config.name}` asks for {wanted.describe()}. Searches use the built index until "
                            "you re-index.") + (f"  \n{md_escape(pointer.note)}" if pointer.note else ""))
        if st.button("Re-index with the active configuration's settings", key="reindex_now",
                     help="Builds the new index beside the serving one; searches switch when it is complete."):
            job = state.guarded(lambda: start(config), "Starting the re-index")
            if job is not None:
                st.rerun()
