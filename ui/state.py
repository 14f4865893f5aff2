"""Shared app state: cached heavy objects (one per process) and per-user state in ``st.session_state``.

Heavy, thread-safe objects (settings, stores, embedders, indexes, the LLM client) are ``st.cache_resource``, opened
through ``rag_core.services`` like the CLI's; what a user picked (active configuration, cross-page pre-fills)
lives only in ``st.session_state``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import streamlit as st
from pydantic import ValidationError

from rag_core import services
from rag_core.config import EmbeddingConfig, RAGConfig, Settings, get_settings
from rag_core.errors import RagError, field_problems
from ui.text import md_escape, md_inert

log = logging.getLogger(__name__)

ACTIVE_CONFIG_KEY = "active_config"
# Cross-page pre-fills, set by ``goto`` and read (then cleared) by the target page.
PREFILL_KEY = "prefill"
# ``persist_state=KEEP`` on a keyed widget: its value survives visits to other pages for the whole session
# (Streamlit otherwise drops the state of a widget a run does not draw, so every choice reset on coming back).
KEEP = "session"

PAGES = {
    "home": "pages/home.py",
    "documents": "pages/documents.py",
    "explorer": "pages/chunk_explorer.py",
    "lab": "pages/retrieval_lab.py",
    "agent": "pages/agent_playground.py",
    "evaluate": "pages/evaluate.py",
}


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    return get_settings()


@st.cache_resource(show_spinner=False)
def document_store():
    from rag_core.documents import DocumentStore

    return DocumentStore(settings().data_dir)


@st.cache_resource(show_spinner=False)
def config_store():
    from rag_core.configstore import ConfigStore

    return ConfigStore.for_settings(settings())


@st.cache_resource(show_spinner=False)
def results_store():
    return services.open_results_store(settings())


@st.cache_resource(show_spinner=False)
def llm():
    """The configured LLM client, or None (see ``services.open_llm``)."""
    return services.open_llm(settings())


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder(embedding_json: str):
    """One embedder per embedding configuration (name and hash dimension), shared by every index that uses it."""
    return services.open_embedder(RAGConfig(embedding=EmbeddingConfig.model_validate_json(embedding_json)),
                                  settings())


@st.cache_resource(show_spinner="Opening the index…", max_entries=8)
def _index(collection: str, config_json: str):
    config = RAGConfig.model_validate_json(config_json)
    return services.open_index(config, settings(), collection,
                               embedder=embedder(config.embedding.model_dump_json()))


def index_for(config: RAGConfig):
    """The index of ``config``'s chunking + embedder (one Chroma collection per index configuration)."""
    index_config = RAGConfig(chunking=config.chunking, embedding=config.embedding)
    return _index(config.collection_name(), index_config.model_dump_json())


def active_config() -> RAGConfig:
    """The user's active configuration (session state), starting from the saved ``default`` if any."""
    if ACTIVE_CONFIG_KEY not in st.session_state:
        from rag_core.bootstrap import default_config

        st.session_state[ACTIVE_CONFIG_KEY] = default_config(settings())
    return st.session_state[ACTIVE_CONFIG_KEY]


def set_active_config(config: RAGConfig) -> None:
    st.session_state[ACTIVE_CONFIG_KEY] = config


def active_index():
    return index_for(active_config())


def empty_index_message() -> str:
    """What to do when the active index holds no chunk: add documents, or index the ones already stored."""
    stored = len(guarded(lambda: document_store().list(), "Listing documents") or [])
    if stored:
        return (f"The active index is empty, but {stored} document(s) are stored: index them with "
                "**Index all** on the Documents page.")
    return "The active index is empty: add documents on the Documents page first."


def goto(page: str, **prefill: Any) -> None:
    """Switch to ``page`` (a key of ``PAGES``) with values the target page pre-fills its widgets from."""
    st.session_state[PREFILL_KEY] = {"page": page, **prefill}
    st.switch_page(PAGES[page])


def take_prefill(page: str) -> dict[str, Any]:
    """Pre-fill values addressed to ``page`` (consumed once)."""
    prefill = st.session_state.get(PREFILL_KEY)
    if prefill and prefill.get("page") == page:
        del st.session_state[PREFILL_KEY]
        return {k: v for k, v in prefill.items() if k != "page"}
    return {}


def guarded(action: Callable[[], Any], what: str) -> Any:
    """Run ``action``; show a clear message instead of a traceback when it fails. Returns None on failure."""
    try:
        return action()
    except RagError as e:
        st.error(f"{what} failed: {md_inert(e)}")
    except ValidationError as e:
        st.error(f"{what}: {md_inert(field_problems(e, unnamed=None))}")
    except ValueError as e:
        st.error(f"{what}: {md_inert(e)}")
    except Exception as e:  # last resort: the user gets a message, the log gets the traceback
        log.exception("%s failed", what)
        st.error(
            f"{what} failed unexpectedly ({type(e).__name__}: {md_inert(e)}). "
            "The app is still usable; details are in the server log."
        )
    return None


def config_badge(where=st.sidebar) -> None:
    """One line naming the active configuration, shown on every page's sidebar (``where``: a sidebar container)."""
    config = active_config()
    r = config.retrieval
    where.caption(
        f"**Active config:** `{config.name}` · {config.chunking.strategy} {config.chunking.max_tokens} tok · "
        f"{config.embedding.embedder} · {r.strategy} k={r.initial_k}→{r.max_k} · agent {config.agent.policy}"
    )
    where.caption(index_line(config))
    s = settings()
    if s.llm_configured:
        where.caption(f"LLM: {md_escape(s.llm_model)} at {md_escape(s.llm_base_url)}")
    else:
        where.caption("LLM: not configured — the offline policy is used (set RAG_LLM_BASE_URL and RAG_LLM_MODEL).")


def index_line(config: RAGConfig) -> str:
    """What the active index holds and was built with (a re-index job for it shows as building)."""
    from rag_core.jobs import runner_for

    c = config.chunking
    built = f"{c.strategy} {c.max_tokens} tok, overlap {c.overlap} · {config.embedding.embedder}"
    name = config.collection_name()
    building = [job for job in runner_for(settings().data_dir).active() if job.collection == name]
    try:
        index = index_for(config)
        n_docs, n_chunks = len(index.documents()), sum(index.count().values())
    except Exception as e:  # the badge never breaks a page; the page itself reports the problem
        return f"**Index** `{name}`: unavailable ({type(e).__name__})."
    progress = f"building, {building[0].counts()['indexed']}/{len(building[0].files)} done · " if building else ""
    return f"**Index** `{name}`: {progress}{n_docs} docs, {n_chunks} chunks · built with {built}"
