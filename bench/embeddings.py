"""Embedding throughput: MiniLM (ONNX Runtime and numpy engines, 2 threads vs 1), hashing, and the persistent
cache (cold vs cached).

Passages are SciFact abstracts (title + text, ~240 MiniLM tokens on average, 72% truncated at 256), queries
are SciFact's claims. Run: ``python -m bench.embeddings [--passages 200] [--queries 300]``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench.results_file import publish
from rag_core.embeddings import CachedEmbedder, HashingEmbedder, MiniLMEmbedder

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO / ".." / "shared" / "datasets" / "scifact"


def load_scifact(passages: int, queries: int) -> tuple[list[str], list[str]]:
    corpus = SCIFACT / "corpus.jsonl"
    if not corpus.exists():
        raise FileNotFoundError(f"SciFact is not at {SCIFACT.resolve()}; the benchmark reads ../shared/datasets")
    with corpus.open(encoding="utf-8") as handle:
        docs = [json.loads(line) for _, line in zip(range(passages), handle, strict=False)]
    with (SCIFACT / "queries.jsonl").open(encoding="utf-8") as handle:
        claims = [json.loads(line)["text"] for _, line in zip(range(queries), handle, strict=False)]
    return [f"{d['title']} {d['text']}".strip() for d in docs], claims


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def timed_cpu(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall seconds and CPU seconds of this process (all threads): CPU time barely moves with others' load."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def query_latencies_ms(embed_query: Callable[[str], np.ndarray], queries: list[str]) -> list[float]:
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embed_query(query)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def measure(name: str, embedder, passages: list[str], queries: list[str]) -> dict:
    embedder.embed_documents(passages[:4])  # load weights, warm caches
    passage_s, passage_cpu_s = timed_cpu(lambda: embedder.embed_documents(passages))
    query_s, query_cpu_s = timed_cpu(lambda: embedder.embed_documents(queries))
    latencies = query_latencies_ms(embedder.embed_query, queries[:100])
    return {
        "name": name,
        "passages_per_s": len(passages) / passage_s,
        "queries_per_s": len(queries) / query_s,
        "passages_per_cpu_s": len(passages) / passage_cpu_s,
        "queries_per_cpu_s": len(queries) / query_cpu_s,
        "query_p50_ms": statistics.median(latencies),
        "query_p95_ms": float(np.percentile(latencies, 95)),
    }


def measure_cache(name: str, make_inner: Callable[[], object], passages: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-embed-cache-") as cache_dir:
        cached = CachedEmbedder(make_inner(), cache_dir)
        cached.inner.embed_documents(passages[:4])  # warm-up outside the cache, so cold is not charged for loading
        cold_s, cold = timed(lambda: cached.embed_documents(passages))
        warm_s, warm = timed(lambda: cached.embed_documents(passages))
        if not np.array_equal(cold, warm):
            raise AssertionError("cached vectors differ from the freshly computed ones")
        return {
            "name": name,
            "cold_per_s": len(passages) / cold_s,
            "cached_per_s": len(passages) / warm_s,
            "ratio": cold_s / warm_s,
        }


def render(rows: list[dict], cache_rows: list[dict], passages: list[str], queries: list[str], note: str) -> str:
    baseline = next(r for r in rows if r["name"] == "minilm numpy, 2 threads")
    lines = [
        "# Embeddings benchmark",
        "",
        f"{len(passages)} SciFact abstracts (passages), {len(queries)} SciFact claims (queries). {note}",
        "",
        "Wall-clock rates depend on what else runs; per CPU-second rates (all threads of this process) do not,",
        "and on an idle machine wall rate ~= CPU rate x cores used.",
        "",
        "| embedder | passages/s | passages/CPU-s | queries/s (batched) | queries/CPU-s | query p50 ms "
        "| query p95 ms | passages/CPU-s vs numpy 2 thr |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['name']} | {r['passages_per_s']:.1f} | {r['passages_per_cpu_s']:.1f} | {r['queries_per_s']:.1f} "
            f"| {r['queries_per_cpu_s']:.1f} | {r['query_p50_ms']:.2f} "
            f"| {r['query_p95_ms']:.2f} | {r['passages_per_cpu_s'] / baseline['passages_per_cpu_s']:.2f}x |"
        )
    lines += [
        "",
        "| cache (SQLite, WAL) | cold passages/s | cached passages/s | cached / cold speed-up |",
        "| --- | ---: | ---: | ---: |",
    ]
    for r in cache_rows:
        lines.append(f"| {r['name']} | {r['cold_per_s']:.1f} | {r['cached_per_s']:.0f} | {r['ratio']:.0f}x |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.embeddings", description=__doc__)
    parser.add_argument("--passages", type=int, default=200)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    passages, queries = load_scifact(args.passages, args.queries)
    load_before = os.getloadavg()[0]
    rows = [
        measure("minilm onnx, 2 threads", MiniLMEmbedder(threads=2, engine="onnx"), passages, queries),
        measure("minilm onnx, 1 thread", MiniLMEmbedder(threads=1, engine="onnx"), passages, queries),
        measure("minilm numpy, 2 threads", MiniLMEmbedder(threads=2, engine="numpy"), passages, queries),
        measure("minilm numpy, 1 thread", MiniLMEmbedder(threads=1, engine="numpy"), passages, queries),
        measure("hash-384", HashingEmbedder(384), passages, queries),
    ]
    cache_rows = [
        measure_cache("minilm onnx, 2 threads", lambda: MiniLMEmbedder(threads=2, engine="onnx"), passages),
        measure_cache("hash-384", lambda: HashingEmbedder(384), passages),
    ]
    note = (
        f"{os.cpu_count()} CPUs ({platform.machine()}), load average {load_before:.1f} at start, "
        f"{os.getloadavg()[0]:.1f} at end (the machine is shared; compare rows of the same run)."
    )
    table = render(rows, cache_rows, passages, queries, note)
    print(table)
    publish("embeddings", table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
