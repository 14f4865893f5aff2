"""A fast, deterministic, model-free embedder: signed feature hashing of words, word pairs and character n-grams.

Hand-written because the one library doing this (scikit-learn's ``HashingVectorizer``) would pull a large
dependency into the runtime for ~80 lines, and it returns sparse counts rather than the dense unit vectors the
rest of the app consumes. ``zlib.crc32`` gives a hash that is stable across processes and Python versions
(``hash()`` is salted per process), so vectors stored in an index stay valid.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from rag_core.embeddings.base import (
    check_query_text,
    documents_checked,
    l2_normalize,
    report,
)
from rag_core.types import Progress

WORD_PATTERN = re.compile(r"\w+", re.UNICODE)
CHAR_NGRAM_SIZES = (3, 4)
# Relative weight of each feature family; words dominate, pairs add order, n-grams catch morphology and typos.
WORD_WEIGHT = 1.0
PAIR_WEIGHT = 0.5
CHAR_WEIGHT = 0.5
# Texts without a single word still get a unit vector (all such texts are then identical, as they should be).
EMPTY_FEATURE = "\x00empty"
BATCH_SIZE = 256


def _features_of_word(word: str) -> list[str]:
    marked = f"<{word}>"
    grams = [marked[i : i + n] for n in CHAR_NGRAM_SIZES for i in range(len(marked) - n + 1)]
    return grams or [marked]


class HashingEmbedder:
    """Signed feature hashing into ``dim`` buckets, L2-normalised; deterministic across runs and machines."""

    def __init__(self, dim: int = 384) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or not 16 <= dim <= 65536:
            raise ValueError(f"hash embedder dim must be an integer in [16, 65536], got {dim!r}")
        self.dim = dim
        self.id = f"hash-{dim}"
        # Per-instance memos (a vocabulary repeats a lot). A feature hashes to a signed code: +-(bucket + 1).
        self._code = lru_cache(maxsize=400_000)(self._hash_code)
        self._char_codes = lru_cache(maxsize=200_000)(self._hash_char_codes)

    def _hash_code(self, feature: str) -> int:
        value = zlib.crc32(feature.encode("utf-8"))
        # Low bits pick the bucket, the top bit the sign (independent enough for a 32-bit hash and dim < 2**31).
        bucket = value % self.dim + 1
        return bucket if value & 0x80000000 else -bucket

    def _hash_char_codes(self, word: str) -> np.ndarray:
        return np.array([self._code("c:" + gram) for gram in _features_of_word(word)], dtype=np.int64)

    def _family(self, codes: np.ndarray) -> np.ndarray:
        """Signed bucket counts of one feature family, scaled to unit length."""
        part = np.bincount(np.abs(codes) - 1, weights=np.sign(codes), minlength=self.dim)
        norm = float(np.linalg.norm(part))
        return part / norm if norm > 0 else part

    def _vector(self, text: str) -> np.ndarray:
        words = WORD_PATTERN.findall(text.lower())
        if not words:
            return self._family(np.array([self._code(EMPTY_FEATURE)], dtype=np.int64)).astype(np.float32)
        code = self._code
        vector = WORD_WEIGHT * self._family(np.array([code("w:" + word) for word in words], dtype=np.int64))
        if len(words) > 1:
            pairs = np.array([code(f"p:{a} {b}") for a, b in zip(words, words[1:], strict=False)], dtype=np.int64)
            vector += PAIR_WEIGHT * self._family(pairs)
        vector += CHAR_WEIGHT * self._family(np.concatenate([self._char_codes(word) for word in words]))
        return vector.astype(np.float32)

    @documents_checked
    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        total = len(texts)
        out = np.empty((total, self.dim), dtype=np.float32)
        for start in range(0, total, BATCH_SIZE):
            stop = min(start + BATCH_SIZE, total)
            for row in range(start, stop):
                out[row] = self._vector(texts[row])
            report(progress, stop, total)
        return l2_normalize(out)

    def embed_query(self, text: str) -> np.ndarray:
        return l2_normalize(self._vector(check_query_text(text)))

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self.dim})"
