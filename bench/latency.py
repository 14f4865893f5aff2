"""Retrieval latency per strategy over the SciFact index (MiniLM), query embedding included.

``python -m bench.latency [--queries N] [--data-dir DIR]``. The SciFact corpus is indexed once with
``Index.add_chunks`` (one chunk per abstract, via ``rag_core.evaluation.beir``) into a bench data directory
(``/tmp/rag_bench`` by default, shared with ``bench.scifact``; embeddings cached). Query embeddings are never
served from the cache: every timed query runs the MiniLM forward pass. Per strategy, in the same run:

* search: one ``Retriever.search`` at k = 10 (embedding + vector and/or BM25 + fusion + confidence);
* one pass: ``Retriever.retrieve`` with one iteration at k = 10 (adds rewrite, intent, route, de-dup, formatting);
* dynamic: ``Retriever.retrieve`` with the default gating (k 3 → 20, up to 3 passes).

Also checks the MiniLM confidence calibration on the qrels: cosines of judged-relevant pairs against the best
non-relevant document. Writes ``bench/results/latency.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DATASET = REPO / ".." / "shared" / "datasets" / "scifact"
RESULTS = REPO / "bench" / "results" / "latency.md"
DEFAULT_DATA_DIR = Path(os.environ.get("RAG_BENCH_DIR", "/tmp/rag_bench"))
STRATEGIES = ("vector", "keyword", "hybrid")
TARGETS = {"hybrid": (30.0, 60.0)}
WARMUP = 5


class QueryEmbeddingUncached:
    """The index's cached embedder for documents (de-dup lookups), the bare model for queries (always computed)."""

    def __init__(self, cached):
        self.cached = cached
        self.inner = getattr(cached, "inner", cached)
        self.id, self.dim = cached.id, cached.dim

    def embed_documents(self, texts, progress=None):
        return self.cached.embed_documents(texts, progress)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def timed(fn, queries: list[str]) -> list[float]:
    for query in queries[:WARMUP]:
        fn(query)
    out = []
    for query in queries:
        tick = time.perf_counter()
        fn(query)
        out.append((time.perf_counter() - tick) * 1000)
    return out


def calibration(index, dataset, queries: dict[str, str]) -> list[str]:
    """Median cosines of relevant vs best non-relevant documents, and the confidence MiniLM's logistic gives them."""
    from rag_core.index import Filters
    from rag_core.retrieval.confidence import vector_confidence

    relevant, best_other, top1_rel = [], [], 0
    for qid, text in queries.items():
        judged = dataset.qrels.get(qid, {})
        if not judged:
            continue
        pairs = index.vector_search(text, 50, Filters())
        rel = [s for c, s in pairs if c.doc_id in judged]
        other = [s for c, s in pairs if c.doc_id not in judged]
        relevant.extend(rel)
        if other:
            best_other.append(other[0])
        top1_rel += bool(pairs and pairs[0][0].doc_id in judged)
    if not relevant or not best_other:
        return []
    med_rel, med_other = statistics.median(relevant), statistics.median(best_other)
    eid = index.embedder.id
    return [
        "Calibration check (MiniLM cosine → vector confidence, on the judged queries):",
        "",
        "| pairs | n | median cosine | confidence at the median |",
        "| --- | ---: | ---: | ---: |",
        f"| judged relevant (in top 50) | {len(relevant)} | {med_rel:.3f} | {vector_confidence(med_rel, eid):.2f} |",
        f"| best non-relevant per query | {len(best_other)} | {med_other:.3f} | "
        f"{vector_confidence(med_other, eid):.2f} |",
        "",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--dataset", type=Path, default=DATASET)
    parser.add_argument("--queries", type=int, default=300, help="number of SciFact test queries to time")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    args = parser.parse_args(argv)
    os.environ["RAG_DATA_DIR"] = str(args.data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from rag_core.config import RetrievalConfig, get_settings
    from rag_core.evaluation.beir import open_beir_index
    from rag_core.evaluation.questions import load_beir
    from rag_core.index import Filters
    from rag_core.retrieval.dynamic import Retriever

    if not args.dataset.is_dir():
        print(f"SciFact not found at {args.dataset} (expected beside the repository in ../shared)", file=sys.stderr)
        return 2
    dataset = load_beir(args.dataset)
    started = time.perf_counter()
    index = open_beir_index(dataset, args.embedder, get_settings())
    build_s = time.perf_counter() - started
    index.embedder = QueryEmbeddingUncached(index.embedder)
    judged = {qid: text for qid, text in dataset.queries.items() if qid in dataset.qrels}
    queries = list(judged.values())[: args.queries]
    one_pass = {"max_iterations": 1, "initial_k": 10, "max_k": 10, "granularity": "any"}
    rows = []
    for strategy in STRATEGIES:
        retriever = Retriever(index, RetrievalConfig(strategy=strategy, granularity="any"))
        search = timed(lambda q, r=retriever, s=strategy: r.search(s, q, 10, Filters()), queries)
        single = timed(lambda q, r=retriever: r.retrieve(q, overrides=one_pass), queries)
        iterations: list[int] = []

        def dynamic(q, r=retriever, out=iterations):
            out.append(len(r.retrieve(q).iterations))

        gated = timed(dynamic, queries)
        rows.append((strategy, search, single, gated, statistics.mean(iterations[WARMUP:])))
    keyword_p50 = statistics.median(next(r[1] for r in rows if r[0] == "keyword"))
    lines = [
        f"# Retrieval latency per strategy (SciFact, {len(dataset.corpus)} abstracts)",
        "",
        f"{len(queries)} judged SciFact queries; embedder {index.embedder.id} (query embedding computed every time, "
        "not cached); k = 10; all strategies in the same run on 2 shared cores.",
        "",
        "| strategy | search p50 ms | search p95 ms | search p50 ÷ keyword | one pass p50 ms | one pass p95 ms "
        "| dynamic p50 ms | dynamic p95 ms | dynamic passes (mean) | target (p50 / p95) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    verdicts = []
    for strategy, search, single, gated, passes in rows:
        p50, p95 = statistics.median(search), percentile(search, 0.95)
        target = TARGETS.get(strategy)
        target_cell = f"< {target[0]:.0f} / < {target[1]:.0f}" if target else "—"
        lines.append(
            f"| {strategy} | {p50:.1f} | {p95:.1f} | {p50 / keyword_p50:.2f}× | {statistics.median(single):.1f} "
            f"| {percentile(single, 0.95):.1f} | {statistics.median(gated):.1f} | {percentile(gated, 0.95):.1f} "
            f"| {passes:.2f} | {target_cell} |")
        if target:
            ok = p50 < target[0] and p95 < target[1]
            verdicts.append(f"{strategy} search: p50 {p50:.1f} ms, p95 {p95:.1f} ms → target "
                            f"{'met' if ok else 'NOT met'}; one pass (with de-dup and formatting) p50 "
                            f"{statistics.median(single):.1f} ms, p95 {percentile(single, 0.95):.1f} ms.")
    lines += ["", *verdicts, ""]
    lines += calibration(index, dataset, dict(list(judged.items())[: args.queries]))
    lines += [f"Index build/reuse: {build_s:.0f} s (data directory {args.data_dir})."]
    table = "\n".join(lines) + "\n"
    print(table)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
