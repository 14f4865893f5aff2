"""The ``Embedder`` protocol every embedding backend implements, and the small helpers they share."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from rag_core.types import Progress


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``id`` names the vector space (two embedders with the same id give the same vectors), so the
    index and the cache can refuse to mix spaces.
    """

    id: str
    dim: int

    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        """Vectors for ``texts``, float32, shape ``(len(texts), dim)``; ``progress(done, total)`` per batch."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Vector for one query, float32, shape ``(dim,)``."""
        ...


def assume_dim(embedder: object, dim: object) -> None:
    """Tell ``embedder`` its vector size when it learns it by asking a server (``OpenAIEmbedder``); others ignore it."""
    assume = getattr(embedder, "assume_dim", None)
    if callable(assume) and isinstance(dim, int) and not isinstance(dim, bool):
        assume(dim)


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list of str, or a ``ValueError`` saying which item is not a string."""
    if isinstance(texts, str):
        raise ValueError("embed_documents takes a sequence of strings, not one string; use embed_query")
    checked = list(texts)
    for position, text in enumerate(checked):
        if not isinstance(text, str):
            raise ValueError(f"text #{position} is {type(text).__name__}, expected str")
    return checked


def documents_checked(embed_documents: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """The shared opening of every ``embed_documents``: ``texts`` checked (``check_texts``); no text at all
    returns an empty ``(0, dim)`` matrix at once, with ``progress(0, 0)``."""

    @functools.wraps(embed_documents)
    def checked(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        texts = check_texts(texts)
        if not texts:
            report(progress, 0, 0)
            return empty_matrix(self.dim)
        return embed_documents(self, texts, progress)

    return checked


def check_query_text(text: str) -> str:
    """``text`` when it is a str (the embedders' type check; ``retrieval.check_query`` checks a query's words)."""
    if not isinstance(text, str):
        raise ValueError(f"the query is {type(text).__name__}, expected str")
    return text


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as float32; all-zero rows stay zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return (vectors / np.maximum(norms, np.float32(1e-12))).astype(np.float32, copy=False)


def empty_matrix(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


def batches(items: Sequence, size: int) -> Iterator[Sequence]:
    """Consecutive slices of ``items`` of at most ``size`` elements."""
    if size < 1:
        raise ValueError(f"batch size must be at least 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]


def report(progress: Progress | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)
