"""MiniLM (both engines: ONNX Runtime and numpy) against sentence-transformers reference vectors, plus batching
and threading behaviour."""

from __future__ import annotations

import json
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from rag_core.embeddings import get_embedder, minilm
from rag_core.embeddings.minilm import MiniLMEmbedder, gelu, plan_batches
from rag_core.errors import EmbeddingError

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "minilm_reference.json"
REFERENCE = json.loads(FIXTURE.read_text(encoding="utf-8"))["texts"]
REF_TEXTS = [item["text"] for item in REFERENCE]
REF_VECTORS = np.array([item["vector"] for item in REFERENCE], dtype=np.float32)


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=2)


def test_reference_fixture_covers_the_hard_cases():
    names = {item["name"]: item for item in REFERENCE}
    assert names["long_passage"]["hf_tokens_untruncated"] > 256  # exercises truncation at 256, not 128
    assert len(REFERENCE) == 8


@pytest.mark.parametrize("engine", ["onnx", "numpy"])
@pytest.mark.parametrize("threads", [1, 2])
def test_matches_sentence_transformers(threads, engine):
    vectors = MiniLMEmbedder(threads=threads, batch_tokens=512, engine=engine).embed_documents(REF_TEXTS)
    cosines = (vectors * REF_VECTORS).sum(axis=1)
    assert vectors.dtype == np.float32 and vectors.shape == (8, 384)
    for item, cosine in zip(REFERENCE, cosines, strict=True):
        assert cosine >= 0.999, f"{item['name']}: cosine {cosine:.5f}"


def test_query_matches_reference(embedder):
    for text, reference in zip(REF_TEXTS, REF_VECTORS, strict=True):
        vector = embedder.embed_query(text)
        assert vector.shape == (384,)
        assert float(vector @ reference) >= 0.999


def test_truncates_at_256_tokens(embedder):
    ids = embedder.model.tokenize(["word " * 1000, "short"])
    assert [len(x) for x in ids] == [256, 3]  # [CLS] short [SEP]; no padding from tokenizer.json


def test_vectors_are_unit_length_and_order_is_kept(embedder):
    texts = ["a cat", "x " * 300, "the dog barks at night", "a cat"]
    vectors = embedder.embed_documents(texts)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[3], atol=1e-6)
    np.testing.assert_allclose(vectors[2], embedder.embed_query("the dog barks at night"), atol=1e-5)


def test_semantics(embedder):
    query = embedder.embed_query("How do I bake bread?")
    passages = embedder.embed_documents(["A recipe for baking sourdough bread at home.", "Stock market news today."])
    assert float(passages[0] @ query) > float(passages[1] @ query) + 0.3


def test_progress_reported_per_batch(embedder):
    seen = []
    texts = [f"sentence number {i} " * (1 + i % 5) for i in range(40)]
    small = MiniLMEmbedder(threads=2, batch_tokens=256)
    small.embed_documents(texts, progress=lambda done, total: seen.append((done, total)))
    assert len(seen) == len(plan_batches([len(x) for x in embedder.model.tokenize(texts)], 256))
    assert len(seen) > 1
    assert seen[-1] == (40, 40)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_empty_input(embedder):
    seen = []
    out = embedder.embed_documents([], progress=lambda d, t: seen.append((d, t)))
    assert out.shape == (0, 384) and seen == [(0, 0)]


def test_bad_input_is_a_value_error(embedder):
    with pytest.raises(ValueError, match="not one string"):
        embedder.embed_documents("just a string")
    with pytest.raises(ValueError, match="text #1 is int"):
        embedder.embed_documents(["ok", 3])
    with pytest.raises(ValueError, match="threads"):
        MiniLMEmbedder(threads=0)


def test_plan_batches_sorts_by_length_and_caps_padded_tokens():
    assert plan_batches([5, 100, 7, 100, 50], batch_tokens=256) == [[1, 3], [4], [2, 0]]
    assert plan_batches([90, 100, 80, 70], batch_tokens=1000) == [[1, 0, 2, 3]]  # 70 >= 0.7 x 100
    assert plan_batches([3] * 5, batch_tokens=256, max_batch=2) == [[0, 1], [2, 3], [4]]
    assert plan_batches([], batch_tokens=256) == []


def test_gelu_is_the_exact_erf_form():
    x = np.linspace(-12, 12, 401 * 99, dtype=np.float32).reshape(401, 99)  # also spans several GELU_CHUNK pieces
    expected = np.array([v * 0.5 * (1.0 + math.erf(v / math.sqrt(2.0))) for v in x.ravel().tolist()]).reshape(x.shape)
    got = gelu(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, expected, atol=2e-6, rtol=0)
    # Far from the tanh approximation, which differs by ~2e-4 around |x| = 2.
    tanh_form = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    assert np.abs(tanh_form - expected).max() > 1e-4


def test_concurrent_calls_share_the_model_and_stay_correct(embedder):
    short = [i for i, item in enumerate(REFERENCE) if item["name"] != "long_passage"]
    texts = [REF_TEXTS[i] for i in short]
    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(embedder.embed_documents, [texts, texts[::-1], texts]))
    for result, order in zip(results, [short, short[::-1], short], strict=True):
        assert (result * REF_VECTORS[order]).sum(axis=1).min() >= 0.999
    assert embedder.max_tokens == 256


def test_model_is_loaded_once(embedder):
    assert MiniLMEmbedder().model is embedder.model


def test_blas_is_held_to_one_thread_from_any_thread(embedder):
    from threadpoolctl import threadpool_info

    def blas_threads() -> list[int]:
        return [info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"]

    seen_inside = []
    with ThreadPoolExecutor(1) as pool:  # like a Streamlit script thread: not the main thread
        pool.submit(embedder.embed_documents, ["one", "two " * 200], lambda d, t: seen_inside.append(blas_threads()))
        pool.shutdown(wait=True)
    embedder.embed_query("three")
    assert seen_inside and all(threads == [1] * len(threads) for threads in seen_inside)
    assert blas_threads() == [1] * len(blas_threads())


def test_onnx_is_the_default_engine_and_agrees_with_numpy_on_padded_batches():
    assert MiniLMEmbedder().engine == "onnx"  # onnxruntime and onnx are in requirements.txt
    # Mixed lengths in one batch: padding must be masked out the same way by both engines.
    texts = ["a", "x " * 300, "the dog barks at night", "Enable TLS + HTTP/2.", "```python\nx = 1\n```"] * 3
    onnx = MiniLMEmbedder(engine="onnx", batch_tokens=4096).embed_documents(texts)
    numpy = MiniLMEmbedder(engine="numpy", batch_tokens=4096).embed_documents(texts)
    assert (onnx * numpy).sum(axis=1).min() >= 0.9999
    assert abs(float(MiniLMEmbedder(engine="onnx").embed_query("short") @ numpy[0]) - 1.0) > 0.01  # not constant


def test_engine_choice(monkeypatch):
    from rag_core.config import Settings

    with pytest.raises(ValueError, match="engine must be one of"):
        MiniLMEmbedder(engine="torch")
    assert get_embedder("minilm", Settings(minilm_engine="numpy")).engine == "numpy"
    monkeypatch.setenv("RAG_MINILM_ENGINE", "onnx")
    assert get_embedder("minilm", Settings()).engine == "onnx"
    # Where onnxruntime or onnx cannot be imported, auto falls back to numpy and an explicit onnx says why.
    monkeypatch.setattr(minilm, "onnx_available", lambda: False)
    assert MiniLMEmbedder().engine == "numpy"
    with pytest.raises(EmbeddingError, match="RAG_MINILM_ENGINE=numpy"):
        MiniLMEmbedder(engine="onnx")


def test_auto_falls_back_to_numpy_when_onnx_runtime_cannot_start(monkeypatch, caplog):
    def broken(self):
        raise EmbeddingError("could not start ONNX Runtime for MiniLM: no CPU provider")

    expected = MiniLMEmbedder(engine="numpy").embed_query("rate limits per worker")
    monkeypatch.setattr(minilm._Model, "onnx_encoder", broken)
    auto = MiniLMEmbedder()
    assert auto.engine == "onnx"
    with caplog.at_level("WARNING"):
        vector = auto.embed_query("rate limits per worker")
    assert auto.engine == "numpy" and "runs on numpy instead" in caplog.text
    np.testing.assert_allclose(vector, expected, atol=1e-6)
    with pytest.raises(EmbeddingError, match="could not start ONNX Runtime"):
        MiniLMEmbedder(engine="onnx").embed_query("rate limits per worker")
