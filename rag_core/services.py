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
    """The index serving the active configuration's searches (``rag_core.serving.activestate``): during a re-index, the
    complete old one; ``embedder`` as in ``open_index``."""
    from rag_core.serving.activestate import pointer

    settings = settings or get_settings()
    spec = pointer(settings).serving
    return open_index(spec.config(), settings, spec.collection, embedder=embedder)


def open_llm(settings: Settings | None = None, *, required: bool = False):
    """The OpenAI-compatible chat client of ``settings``; None when no LLM is configured, unless ``required``
    (then the ``LLMError`` saying which ``RAG_LLM_*`` variables to set)."""
    from rag_core.llm import LLMClient, llm_from_settings

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
    from rag_core.stores.backends import describe, server_mode
    from rag_core.stores.collections import read_manifest

    settings = settings or get_settings()
    manifest = read_manifest(name, settings)
    if manifest is None and not create:
        where = f"on {describe(settings)}" if server_mode(settings) else f"in {settings.data_dir}"
        raise IndexError_(f"no collection {name!r} {where}; "
                          f"create it with: python -m rag_core ingest PATH --collection {name}")
    embedder_name, dim = collection_embedder(manifest, embedder)
    instance = get_embedder(embedder_name, settings, cache_dir=embedding_cache_dir(settings), hash_dim=dim)
    return Index.open(name, settings, instance, chunking)


def collection_documents(name: str, settings: Settings | None = None) -> list:
    """The documents of collection ``name`` (from the document store, else the index's own copy)."""
    from rag_core.loaders.document_store import DocumentStore
    from rag_core.stores.backends import check_index_name
    from rag_core.stores.collections import read_manifest

    settings = settings or get_settings()
    check_index_name(name, settings)
    if read_manifest(name, settings) is None:  # opening would create an empty collection
        raise ValueError(f"no collection '{name}' in {settings.data_dir}: ingest some documents first "
                         f"(python -m rag_core ingest PATH --collection {name})")
    index = open_collection(name, settings)
    store = DocumentStore(settings.data_dir)
    documents = []
    for entry in index.documents():
        doc = store.get(entry["doc_id"]) or index.source(entry["doc_id"])
        if doc is not None:
            documents.append(doc)
    if not documents:
        raise ValueError(f"collection '{name}' holds no documents whose text is available; ingest some first")
    return documents


def tune_collection(spec, questions=None, *, draft: int = 0, settings: Settings | None = None, progress=None,
                    should_stop=None, draft_style: str | None = None):
    """Run a tuning study (``rag_core.tuning.run_study``) on collection ``spec.collection``.

    ``questions`` is a ``QuestionSet``; without one, ``draft`` questions are drafted offline from the collection's
    documents (seeded by ``spec.seed``, worded in ``draft_style``: the tuner's ``DRAFT_STYLE`` by default). The
    current configuration is the active one with the collection's own chunking and embedder (what a search of the
    collection uses today), so its index is the collection itself.
    """
    from rag_core.serving.activestate import active_config
    from rag_core.stores.collections import read_manifest
    from rag_core.tuning import TuneInputs, run_study
    from rag_core.tuning.study import DRAFT_STYLE

    settings = settings or get_settings()
    documents = collection_documents(spec.collection, settings)
    if questions is None:
        if draft < 1:
            raise ValueError("give a question set, or a number of questions to draft from the collection")
        from rag_core.evaluation.draft import draft_questions

        questions = draft_questions(documents, draft, seed=spec.seed, style=draft_style or DRAFT_STYLE).question_set(
            f"drafted from {spec.collection}")
    manifest = read_manifest(spec.collection, settings)
    embedder, dim = collection_embedder(manifest, None)
    update = {"embedding": {"embedder": embedder, "hash_dim": dim}}
    if manifest and manifest.get("chunking"):
        update["chunking"] = manifest["chunking"]
    current = RAGConfig.model_validate({**active_config(settings).model_dump(), **update})
    inputs = TuneInputs(questions=questions, documents=documents, current=current, open_index=open_index,
                        settings=settings, known={current.index_key(): spec.collection}, llm=open_llm(settings))
    return run_study(spec, inputs, progress=progress, should_stop=should_stop)
