"""Embedders (MiniLM, hashing, OpenAI-compatible) behind one protocol, and a persistent cache.

The rest of the app builds embedders only through ``get_embedder``.
"""

from __future__ import annotations

from pathlib import Path

from rag_core.config import Settings
from rag_core.embeddings.base import Embedder, l2_normalize
from rag_core.embeddings.cache import CachedEmbedder
from rag_core.embeddings.hashing import HashingEmbedder
from rag_core.embeddings.minilm import MiniLMEmbedder
from rag_core.embeddings.openai_embedder import OpenAIEmbedder
from rag_core.errors import EmbeddingError
from rag_core.types import EMBEDDER_NAMES

__all__ = [
    "EMBEDDER_NAMES",
    "CachedEmbedder",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "get_embedder",
    "l2_normalize",
]


def get_embedder(
    name: str, settings: Settings | None = None, cache_dir: Path | str | None = None, hash_dim: int = 384
) -> Embedder:
    """The embedder called ``name`` (``minilm``, ``hash`` or ``openai``), wrapped in the cache when ``cache_dir``.

    Raises:
        EmbeddingError: unknown name, model not installed, or the OpenAI-compatible endpoint not configured.
    """
    if name == "minilm":
        engine = settings.minilm_engine if settings is not None else "auto"
        embedder: Embedder = MiniLMEmbedder(engine=engine)
    elif name == "hash":
        try:
            embedder = HashingEmbedder(hash_dim)
        except ValueError as e:
            raise EmbeddingError(str(e)) from e
    elif name == "openai":
        embedder = OpenAIEmbedder.from_settings(settings if settings is not None else Settings())
    else:
        raise EmbeddingError(f"unknown embedder {name!r}; choose one of {', '.join(EMBEDDER_NAMES)}")
    if cache_dir is not None:
        return CachedEmbedder(embedder, cache_dir)
    return embedder
