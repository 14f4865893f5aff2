"""Shared app state: cached heavy objects (one per process) and per-user state in ``st.session_state``.

Heavy, thread-safe objects (settings, stores, embedders, indexes, the LLM client) are ``st.cache_resource``, opened
through ``rag_core.services`` like the CLI's. The active configuration and the index serving it are stored
(``rag_core.serving.activestate``: data folder or Chroma server), the same for every session; what a user picked on
a page (cross-page pre-fills, widget values) lives only in ``st.session_state``.
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
from ui.safe_text import md_escape, md_inert

log = logging.getLogger(__name__)

ACTIVE_CONFIG_KEY = "active_config"
ACTIVE_PROBLEM_KEY = "active_config_problem"  # why the stored active configuration could not be used
# Cross-page pre-fills, set by ``goto`` and read (then cleared) by the target page.
PREFILL_KEY = "prefill"
# ``persist_state=KEEP`` on a keyed widget: its value survives visits to other pages for the whole session
# (Streamlit otherwise drops the state of a widget a run does not draw, so every choice reset on coming back).
KEEP = "session"

PAGES = {
    "home": "views/home.py",
    "documents": "views/documents.py",
    "explorer": "views/chunk_explorer.py",
    "lab": "views/retrieval_lab.py",
    "agent": "views/agent_playground.py",
    "evaluate": "views/evaluate.py",
}


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    return get_settings()


@st.cache_resource(show_spinner=False)
def document_store():
    from rag_core.loaders.document_store import DocumentStore

    return DocumentStore(settings().data_dir)


@st.cache_resource(show_spinner=False)
def config_store():
    from rag_core.serving.configstore import ConfigStore

    return ConfigStore.for_settings(settings())


@st.cache_resource(show_spinner=False)
def results_store():
    return services.open_results_store(settings())


@st.cache_resource(show_spinner=False)
def llm():
    """The configured LLM client, or None (see ``services.open_llm``)."""
    return services.open_llm(settings())


def retriever(index, retrieval):
    """The ``Retriever`` of a search on a page: the configured LLM routes ``auto`` only (``open_retriever``),
    the app's one cached client, not a new one each rerun."""
    return services.open_retriever(index, retrieval, settings(), llm())


@st.cache_resource(show_spinner="Loading the embedding model…")
def embedder(embedding_json: str):
    """One embedder per embedding configuration (name and hash dimension), shared by every index that uses it."""
    return services.open_embedder(RAGConfig(embedding=EmbeddingConfig.model_validate_json(embedding_json)),
                                  settings())


@st.cache_resource(show_spinner=False)
def active_store():
    from rag_core.serving.activestate import ActiveStore

    return ActiveStore.for_settings(settings())


@st.cache_resource(show_spinner="Opening the index…", max_entries=8)
def _index(collection: str, config_json: str, generation: int = 0):
    """One open index per collection and generation of the serving pointer (a swap or a removed index reopens)."""
    config = RAGConfig.model_validate_json(config_json)
    return services.open_index(config, settings(), collection,
                               embedder=embedder(config.embedding.model_dump_json()))


def serving_pointer():
    """The stored ``IndexPointer``: the index serving the active configuration and a re-index building beside it."""
    from rag_core.serving.activestate import IndexPointer, IndexSpec, pointer

    config = active_config()
    try:
        return pointer(settings(), config, active_store())
    except Exception as e:  # the server holding it is down: serve the configuration's own index
        log.warning("index pointer unreadable (%s); serving the active configuration's index", e)
        return IndexPointer(serving=IndexSpec.of(config))


def index_spec(config: RAGConfig):
    """The index searches of ``config`` use: for the active configuration the serving one (during a re-index the
    complete old index, not the half-built new one), else ``config``'s own."""
    from rag_core.serving.activestate import IndexSpec

    if config.index_key() == active_config().index_key():
        return serving_pointer().serving
    return IndexSpec.of(config)


def _open(spec):
    return _index(spec.collection, spec.config().model_dump_json(), serving_pointer().generation)


def index_for(config: RAGConfig):
    """The index ``config``'s searches use (one Chroma collection + BM25 index per chunking + embedder)."""
    return _open(index_spec(config))


def index_to_build(config: RAGConfig):
    """``config``'s own index, which a re-index fills beside the serving one."""
    from rag_core.serving.activestate import IndexSpec

    return _open(IndexSpec.of(config))


def active_config() -> RAGConfig:
    """The active configuration, the same for every session and instance (stored; survives a restart); before
    one is stored, the session's (set by a test) or the saved ``default``."""
    try:
        stored, problem = active_store().read_config()
    except Exception as e:  # the server holding it is down: this session's copy still works
        log.warning("active configuration unreadable (%s); using this session's", e)
        stored, problem = None, ""
    if problem:  # said on every page (``config_badge``), not replaced by the defaults without a word
        if not str(st.session_state.get(ACTIVE_PROBLEM_KEY, "")).startswith(problem):
            instead = "this session's last one" if ACTIVE_CONFIG_KEY in st.session_state else "the defaults"
            st.session_state[ACTIVE_PROBLEM_KEY] = (f"{problem}. In use instead: {instead}; applying a "
                                                    "configuration (Use these settings) stores a new one.")
    else:
        st.session_state.pop(ACTIVE_PROBLEM_KEY, None)
    if stored is not None:
        st.session_state[ACTIVE_CONFIG_KEY] = stored
    elif ACTIVE_CONFIG_KEY not in st.session_state:
        from rag_core.bootstrap import default_config

        st.session_state[ACTIVE_CONFIG_KEY] = default_config(settings())
    return st.session_state[ACTIVE_CONFIG_KEY]


def set_active_config(config: RAGConfig) -> None:
    """Make ``config`` the active configuration for every session (``activestate.activate``); a saved configuration
    of its name is a snapshot and stays as it is (saving is the config panel's explicit **Save**)."""
    from rag_core.serving.activestate import activate

    previous = active_config()
    st.session_state[ACTIVE_CONFIG_KEY] = config
    guarded(lambda: activate(settings(), config, save=False, previous=previous), "Saving the active configuration")


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
    status = snapshot_line(config)
    where.caption(
        f"**Active config:** `{config.name}`{status} · {config.chunking.strategy} {config.chunking.max_tokens} tok · "
        f"{config.embedding.embedder} · {r.strategy} k={r.initial_k}→{r.max_k} · agent {config.agent.policy}"
    )
    problem = st.session_state.get(ACTIVE_PROBLEM_KEY)
    if problem:
        where.warning(md_inert(problem))
    where.caption(index_line(config))
    s = settings()
    if s.llm_configured:
        where.caption(f"LLM: {md_escape(s.llm_model)} at {md_escape(s.llm_base_url)}")
    else:
        where.caption("LLM: not configured — the offline policy is used (set RAG_LLM_BASE_URL and RAG_LLM_MODEL).")


def snapshot_line(config: RAGConfig) -> str:
    """" — active: modified from `<name>` (unsaved)" when the active settings differ from the saved ones of its name."""
    from rag_core.serving.configstore import snapshot_status

    try:
        status = snapshot_status(config, config_store())
    except Exception as e:  # the badge never breaks a page; the page itself reports the problem
        log.warning("saved configuration unreadable for the badge (%s)", e)
        return ""
    if status.startswith("modified from"):  # the name pattern has no backtick: a code span shows it literally
        status = f"modified from `{config.name}` (unsaved)"
    return f" — active: {status}" if status else ""


def index_line(config: RAGConfig) -> str:
    """What the index serving ``config`` holds and was built with, and a re-index building beside it."""
    from rag_core.serving.activestate import IndexSpec
    from rag_core.serving.jobs import runner_for

    try:
        spec = index_spec(config)
        reindex = serving_pointer().reindex if config.index_key() == active_config().index_key() else None
    except Exception as e:  # the badge never breaks a page; the page itself reports the problem
        return f"**Index**: unavailable ({type(e).__name__})."
    name = spec.collection
    runner = runner_for(settings().data_dir)
    building = [job for job in runner.active() if job.collection == name]
    try:
        index = _open(spec)
        n_docs, n_chunks = len(index.documents()), sum(index.count().values())
    except Exception as e:  # the badge never breaks a page; the page itself reports the problem
        return f"**Index** `{name}`: unavailable ({type(e).__name__})."
    progress = f"building, {building[0].counts()['indexed']}/{len(building[0].files)} done · " if building else ""
    line = f"**Index** `{name}`: {progress}{n_docs} docs, {n_chunks} chunks · built with {spec.describe()}"
    if reindex is not None:
        job = runner.get(reindex.job)
        done = f", {job.counts()['indexed'] + job.counts()['unchanged']}/{len(job.files)} done" if job else ""
        line += (f" · re-indexing with {reindex.target.describe()}{done}; searches use this index until the new "
                 "one is complete")
    elif spec.collection != IndexSpec.of(config).collection:
        line += f" · the configuration asks for {IndexSpec.of(config).describe()}: re-index on the Chunk Explorer"
    return line
