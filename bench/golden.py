"""Golden-set recall@5 per retrieval strategy over the sample documents.

``python -m bench.golden [--embedder minilm|hash] [--data-dir DIR]``. The samples are indexed once with the
default chunking into a bench data directory (``/tmp/rag_bench_golden`` by default, embeddings cached), then every
question of ``samples/golden.jsonl`` is searched with each strategy in the same run. A question's answer counts
as found when its answer text (case-, whitespace- and Markdown-mark-insensitive) is contained in a retrieved
chunk; questions with several answer texts score the fraction found. Two settings per strategy:

* static: one search, top 5 at the configured granularity (paragraph), no intent filter;
* dynamic: the full ``Retriever.retrieve`` with the default configuration (intent filter, confidence gating,
  de-dup), the top 5 of its final hits; with mean iterations and context tokens.

Writes ``bench/results/golden.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from bench.results_file import publish

DEFAULT_DATA_DIR = Path(os.environ.get("RAG_BENCH_GOLDEN_DIR", "/tmp/rag_bench_golden"))
STRATEGIES = ("vector", "keyword", "hybrid", "auto")
K = 5


def answer_recall(answers: list[str], texts: list[str]) -> float:
    """Fraction of ``answers`` contained in any of ``texts`` (normalised); 0 when there are no answers."""
    from rag_core.evaluation.questions import normalise

    if not answers:
        return 0.0
    haystack = [normalise(t) for t in texts]
    return sum(1 for a in answers if any(normalise(a) in h for h in haystack)) / len(answers)


def build_index(embedder: str):
    from rag_core.config import RAGConfig
    from rag_core.loaders import load_path, sample_paths
    from rag_core.services import open_index

    config = RAGConfig(embedding={"embedder": embedder})
    index = open_index(config, collection=f"golden-{embedder}")
    indexed = {entry["doc_id"] for entry in index.documents()}
    docs = [load_path(p) for p in sample_paths()]
    missing = [d for d in docs if d.id not in indexed]
    if missing:
        index.ingest(missing)
    return config, index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.golden", description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    args = parser.parse_args(argv)
    os.environ["RAG_DATA_DIR"] = str(args.data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from rag_core.evaluation.questions import load_golden
    from rag_core.index import Filters
    from rag_core.retrieval.retriever import Retriever

    started = time.perf_counter()
    config, index = build_index(args.embedder)
    build_s = time.perf_counter() - started
    questions = load_golden().questions
    if not questions:
        print("samples/golden.jsonl holds no questions", file=sys.stderr)
        return 2
    rows = []
    by_intent: dict[str, dict[str, list[float]]] = {}
    for strategy in STRATEGIES:
        retriever = Retriever(index, config.retrieval.model_copy(update={"strategy": strategy}))
        static, dynamic, iterations, tokens, latency = [], [], [], [], []
        for q in questions:
            if strategy != "auto":
                hits = retriever.search(strategy, q.question, K, Filters(granularity=[config.retrieval.granularity]))
                static.append(answer_recall(q.answer_texts, [h.chunk.text for h in hits]))
            tick = time.perf_counter()
            result = retriever.retrieve(q.question)
            latency.append((time.perf_counter() - tick) * 1000)
            score = answer_recall(q.answer_texts, [h.chunk.text for h in result.hits[:K]])
            dynamic.append(score)
            by_intent.setdefault(q.intent or "?", {}).setdefault(strategy, []).append(score)
            iterations.append(len(result.iterations))
            tokens.append(result.context.tokens)
        rows.append((strategy, statistics.mean(static) if static else None, statistics.mean(dynamic),
                     statistics.mean(iterations), statistics.mean(tokens), statistics.median(latency)))
    best_single = max(r[2] for r in rows if r[0] in ("vector", "keyword"))
    lines = [
        f"# Golden set recall@{K} per strategy",
        "",
        f"{len(questions)} questions over the sample documents (`samples/golden.jsonl`); embedder "
        f"{index.embedder.id}; default chunking; all strategies in the same run on 2 shared cores.",
        "",
        f"| strategy | static recall@{K} | dynamic recall@{K} | dynamic ÷ best single | iterations (mean) "
        "| context tokens (mean) | retrieve p50 ms |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for strategy, static, dynamic, iters, toks, p50 in rows:
        static_cell = "—" if static is None else f"{static:.3f}"
        lines.append(f"| {strategy} | {static_cell} | {dynamic:.3f} | {dynamic / best_single:.2f}× | {iters:.2f} "
                     f"| {toks:.0f} | {p50:.1f} |")
    lines += ["", f"Dynamic recall@{K} by intent:", "", "| intent | n | " + " | ".join(STRATEGIES) + " |",
              "| --- | ---: | " + " | ".join("---:" for _ in STRATEGIES) + " |"]
    for intent, scores in sorted(by_intent.items()):
        n = len(next(iter(scores.values())))
        lines.append(f"| {intent} | {n} | " + " | ".join(f"{statistics.mean(scores[s]):.3f}" for s in STRATEGIES)
                     + " |")
    lines += ["", f"Static: one search, top {K}, granularity {config.retrieval.granularity}, no intent filter. "
              f"Dynamic: `Retriever.retrieve` with the default configuration, top {K} final hits. "
              f"Index build/reuse: {build_s:.0f} s."]
    table = "\n".join(lines) + "\n"
    print(table)
    publish("golden", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
