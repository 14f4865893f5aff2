"""Two model-free embedders with different shapes, each kept because tests were calibrated against it."""

from __future__ import annotations

import hashlib
import re
import zlib

import numpy as np

from rag_core.retrieval.terms import content_terms


class WordHashEmbedder:
    """Every word hashed (md5) into ``dim`` signed buckets: texts sharing words have a high cosine.

    Counts its ``embed_documents`` calls and reports progress every four texts, as a batching model does.
    """

    def __init__(self, dim: int = 64, id: str = "fake-64"):
        self.dim = dim
        self.id = id
        self.calls = 0

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.md5(word.encode()).digest()
            vector[digest[0] % self.dim] += 1.0 if digest[1] % 2 else -1.0
        norm = np.linalg.norm(vector)
        return vector / norm if norm else vector

    def embed_documents(self, texts, progress=None):
        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), 4):
            for row in range(start, min(start + 4, len(texts))):
                out[row] = self._vector(texts[row])
            if progress is not None:
                progress(min(start + 4, len(texts)), len(texts))
        return out

    def embed_query(self, text):
        return self._vector(text)


class ContentTermEmbedder:
    """Stemmed content terms (stop words left out) counted into ``dim`` unsigned buckets, L2-normalised.

    Its id is empty, so confidences computed from its cosines use the calibration of an index without an embedder.
    """

    id = ""

    def __init__(self, dim: int = 64):
        self.dim = dim

    def embed_documents(self, texts, progress=None):
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in content_terms(text):
                vectors[row, zlib.crc32(term.encode()) % self.dim] += 1.0  # not hash(): it changes per process
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)

    def embed_query(self, text):
        return self.embed_documents([text])[0]
