"""Wiring: open the index of a configuration with its (cached) embedder — one place for app, CLI and bootstrap."""

from __future__ import annotations

from pathlib import Path

from rag_core.config import RAGConfig, Settings, get_settings


def embedding_cache_dir(settings: Settings) -> Path:
    return Path(settings.data_dir) / "embedding_cache"


def open_embedder(config: RAGConfig, settings: Settings | None = None):
    """The configuration's embedder, wrapped in the persistent embedding cache."""
    from rag_core.embeddings import get_embedder

    settings = settings or get_settings()
    return get_embedder(
        config.embedding.embedder, settings, cache_dir=embedding_cache_dir(settings), hash_dim=config.embedding.hash_dim
    )


def open_index(config: RAGConfig, settings: Settings | None = None, collection: str | None = None):
    """Open (or create) the index for ``config``'s chunking + embedder; ``collection`` overrides the name."""
    from rag_core.index import Index

    settings = settings or get_settings()
    name = collection or config.collection_name()
    return Index.open(name, settings, open_embedder(config, settings), config.chunking)
