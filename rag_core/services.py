"""Wiring: how the app, the CLI, the benchmarks and bootstrap open what they work with — one place for all.

An index of a configuration with its (cached) embedder, a collection with the embedder it was built with, the
LLM client, a search's retriever, the stores of evaluation results. The app wraps these in ``st.cache_resource``
(``ui/state.py``); nothing here caches.
"""

from __future__ import annotations

from pathlib import Path

from rag_core.config import RAGConfig, RetrievalConfig, Settings, get_settings


def embedding_cache_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "embedding_cache"


def open_embedder(config: RAGConfig, settings: Settings | None = None):
    """The configuration's embedder, wrapped in the persistent embedding cache."""
    from rag_core.embeddings import get_embedder

    settings = settings or get_settings()
    return get_embedder(
        config.embedding.embedder, settings, cache_dir=embedding_cache_dir(settings), hash_dim=config.embedding.hash_dim
    )


def open_index(config: RAGConfig, settings: Settings | None = None, collection: str | None = None, *,
               embedder=None):
    """Open (or create) the index for ``config``'s chunking + embedder; ``collection`` overrides the name.

    ``embedder`` is one already opened for ``config`` (the app shares one per process); by default a new one.
    """
    from rag_core.index import Index

    settings = settings or get_settings()
    name = collection or config.collection_name()
    return Index.open(name, settings, embedder or open_embedder(config, settings), config.chunking)


def open_serving_index(settings: Settings | None = None, *, embedder=None):
    """The index serving the active configuration's searches (``rag_core.activestate``): during a re-index, the
    complete old one; ``embedder`` as in ``open_index``."""
    from rag_core.activestate import pointer

    settings = settings or get_settings()
    spec = pointer(settings).serving
    return open_index(spec.config(), settings, spec.collection, embedder=embedder)


def open_llm(settings: Settings | None = None, *, required: bool = False):
    """The OpenAI-compatible chat client of ``settings``; None when no LLM is configured, unless ``required``
    (then the ``LLMError`` saying which ``RAG_LLM_*`` variables to set)."""
    from rag_core.llm_client import LLMClient, llm_from_settings

    settings = settings or get_settings()
    return LLMClient(settings) if required else llm_from_settings(settings)


def open_retriever(index, retrieval_config: RetrievalConfig, settings: Settings | None = None, llm=None):
    """The ``Retriever`` of a search in the app or the CLI: ``auto`` queries are routed by ``llm`` (None: the
    configured client, opened only then), every other strategy opens and holds no LLM (``Retriever.for_config``)."""
    from rag_core.retrieval.retriever import Retriever, routed

    settings = settings or get_settings()
    if llm is None and routed(retrieval_config):
        llm = open_llm(settings)
    return Retriever.for_config(index, retrieval_config, settings, llm)


def open_results_store(settings: Settings | None = None):
    """The stored evaluation runs: on the Chroma server when one is configured, else in the data directory."""
    from rag_core.evaluation.results import ResultsStore

    return ResultsStore.for_settings(settings or get_settings())


def collection_embedder(manifest: dict | None, requested: str | None) -> tuple[str, int]:
    """(embedder name, hash dim) for a collection's manifest; ``requested`` must agree with it."""
    if manifest is None:
        return requested or "minilm", 384
    embedder_id = str(manifest.get("embedder_id", ""))
    stored = "hash" if embedder_id.startswith("hash") else "minilm" if embedder_id.startswith("minilm") else "openai"
    if requested and requested != stored:
        raise ValueError(f"collection was built with the {stored} embedder ({embedder_id}); "
                         f"use --embedder {stored} or leave --embedder out")
    return stored, int(manifest.get("dim") or 384)


def open_collection(name: str, settings: Settings | None = None, *, embedder: str | None = None,
                    chunking=None, create: bool = False):
    """Open the collection ``name`` with the embedder it was built with (``create``: make it when missing)."""
    from rag_core.embeddings import get_embedder
    from rag_core.errors import IndexError_
    from rag_core.index import Index
    from rag_core.stores.collections import read_manifest
    from rag_core.stores.vector import describe

    settings = settings or get_settings()
    manifest = read_manifest(name, settings)
    if manifest is None and not create:
        where = f"on {describe(settings)}" if settings.chroma_host else f"in {settings.data_dir}"
        raise IndexError_(f"no collection {name!r} {where}; "
                          f"create it with: python -m rag_core ingest PATH --collection {name}")
    embedder_name, dim = collection_embedder(manifest, embedder)
    instance = get_embedder(embedder_name, settings, cache_dir=embedding_cache_dir(settings), hash_dim=dim)
    return Index.open(name, settings, instance, chunking)
