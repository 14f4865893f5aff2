"""Re-indexing from the page: start one (after "Use these settings"), and say truthfully which index searches use
while one builds, or that the active configuration's settings still need one (with the button to start it)."""

from __future__ import annotations

import streamlit as st

from rag_core.config import RAGConfig
from ui import costly, jobs, state
from ui.safe_text import md_escape, md_inert

LONG_REINDEX_KEY = "long_reindex"  # a re-index estimated long, waiting for re-index anyway / keep the current one
WAITING = "waiting for the user's choice"  # what start returns while a long re-index waits for a click


def start(config: RAGConfig, *, confirmed: bool = False):
    """Save ``config`` as the active configuration for everyone and re-index every stored document with it beside
    the serving index; the job's status, or None when the serving index is already built that way. A re-index
    estimated long on this machine changes nothing yet and returns ``WAITING`` until ``confirm_long`` gets a
    click (unless ``confirmed``)."""
    from rag_core.serving.reindex import start_reindex

    docs = state.document_store().list()
    target = state.index_to_build(config)
    if not confirmed and docs and target.name != state.serving_pointer().serving.collection:
        found = costly.long_estimate(target, docs)
        if found is not None:
            st.session_state[LONG_REINDEX_KEY] = {"config": config.model_dump(mode="json"),
                                                  **costly.estimate_fields(found)}
            return WAITING
    job = start_reindex(state.settings(), config, target, docs, runner=jobs.runner(),
                        previous=state.active_config())
    st.session_state[state.ACTIVE_CONFIG_KEY] = config
    return job


def confirm_long() -> None:
    """A long re-index's estimate and the choice: re-index now (later jobs wait behind it) or keep the active
    configuration and its index as they are; nothing changes before a click."""
    pending = st.session_state.get(LONG_REINDEX_KEY)
    if not pending:
        return
    from rag_core.serving.activestate import IndexSpec

    config = RAGConfig.model_validate(pending["config"])
    docs = state.document_store().list()
    picked = costly.choice(f"Re-indexing {len(docs)} document(s) with {md_escape(IndexSpec.of(config).describe())}",
                           docs, LONG_REINDEX_KEY, go="Re-index anyway",
                           stop="Keep the current index", key="long_reindex",
                           either_way=md_inert(f"Nothing changes until you choose: the active configuration stays "
                                               f"`{state.active_config().name}` with its index."))
    if picked == "stop":
        st.info("Not re-indexed: the active configuration and its index are as they were.")
    if picked == "go":
        job = state.guarded(lambda: start(config, confirmed=True), "Starting the re-index")
        if job is not None:
            st.rerun()


def status(skip_job: str | None = None) -> None:
    """The re-index building beside the serving index (unless it is ``skip_job``, shown elsewhere), or the one the
    active configuration needs, or how the last one ended; first, a long re-index waiting for the user's choice."""
    confirm_long()
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
