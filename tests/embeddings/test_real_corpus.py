"""Slow checks on real SciFact abstracts: threads agree, the cache is >= 20x faster than cold MiniLM embedding."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from rag_core.embeddings import CachedEmbedder, MiniLMEmbedder

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def abstracts(shared_dir) -> list[str]:
    with (shared_dir / "datasets" / "scifact" / "corpus.jsonl").open(encoding="utf-8") as handle:
        docs = [json.loads(line) for _, line in zip(range(48), handle, strict=False)]
    return [f"{d['title']} {d['text']}" for d in docs]


def test_two_threads_give_the_same_vectors_as_one(abstracts):
    one = MiniLMEmbedder(threads=1).embed_documents(abstracts[:16])
    two = MiniLMEmbedder(threads=2, batch_tokens=1024).embed_documents(abstracts[:16])
    np.testing.assert_allclose(one, two, atol=1e-5)


def test_cached_lookups_are_at_least_20x_faster(abstracts, tmp_path):
    cached = CachedEmbedder(MiniLMEmbedder(), tmp_path)
    cached.inner.embed_documents(abstracts[:2])  # load the model outside the timing
    started = time.perf_counter()
    cold = cached.embed_documents(abstracts)
    cold_s = time.perf_counter() - started
    started = time.perf_counter()
    warm = cached.embed_documents(abstracts)
    warm_s = time.perf_counter() - started
    np.testing.assert_array_equal(cold, warm)
    assert cold_s / warm_s >= 20, f"cold {cold_s:.3f}s, cached {warm_s:.4f}s"
    assert (cached.hits, cached.misses) == (48, 48)
