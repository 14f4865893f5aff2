"""The hashing embedder: deterministic, normalised, sized by dim, and similar texts land close."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from rag_core.embeddings import HashingEmbedder, get_embedder
from rag_core.errors import EmbeddingError


def test_id_shape_dtype_and_norm():
    embedder = HashingEmbedder(64)
    vectors = embedder.embed_documents(["alpha beta", "gamma", "", "!!!"])
    assert embedder.id == "hash-64" and embedder.dim == 64
    assert vectors.shape == (4, 64) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(vectors[2], vectors[3])  # no words at all: one shared unit vector


def test_deterministic_across_processes():
    here = HashingEmbedder().embed_query("Reciprocal rank fusion, k = 60")
    code = (
        "from rag_core.embeddings import HashingEmbedder; import sys; "
        "sys.stdout.write(HashingEmbedder().embed_query('Reciprocal rank fusion, k = 60').tobytes().hex())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    np.testing.assert_array_equal(np.frombuffer(bytes.fromhex(out), dtype=np.float32), here)


def test_query_equals_document_vector():
    embedder = HashingEmbedder()
    np.testing.assert_array_equal(embedder.embed_query("Same text"), embedder.embed_documents(["Same text"])[0])


def test_overlap_ranks_above_unrelated():
    embedder = HashingEmbedder()
    query = embedder.embed_query("configure the chroma server port")
    docs = embedder.embed_documents(
        ["How to configure the Chroma server host and port", "Baking sourdough bread needs time", "Chroma servers"]
    )
    scores = docs @ query
    assert scores[0] > scores[2] > scores[1]
    assert scores[1] < 0.3


def test_case_insensitive_and_typo_tolerant():
    embedder = HashingEmbedder()
    base = embedder.embed_query("embedding cache")
    assert float(embedder.embed_query("EMBEDDING Cache") @ base) == pytest.approx(1.0, abs=1e-6)
    # Char n-grams keep a misspelt word close; the bigram and the misspelt unigram are lost.
    assert float(embedder.embed_query("embeding cache") @ base) > 0.4
    assert float(embedder.embed_query("sourdough bread") @ base) < 0.15


def test_progress_per_batch():
    seen = []
    HashingEmbedder().embed_documents([f"text {i}" for i in range(600)], progress=lambda d, t: seen.append((d, t)))
    assert seen == [(256, 600), (512, 600), (600, 600)]


@pytest.mark.parametrize("dim", [8, 70000, "384"])
def test_bad_dim(dim):
    with pytest.raises(ValueError, match=r"dim must be an integer in \[16, 65536\]"):
        HashingEmbedder(dim)


def test_get_embedder_hash_dim():
    embedder = get_embedder("hash", hash_dim=128)
    assert embedder.id == "hash-128" and embedder.embed_query("x").shape == (128,)
    with pytest.raises(EmbeddingError, match="dim must be"):
        get_embedder("hash", hash_dim=3)
