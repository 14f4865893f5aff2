"""Agent versus one-shot RAG on the golden question set of the sample documents.

``python -m bench.agent [--embedder minilm|hash] [--limit N] [--data-dir DIR]``. Both run in the same process
over the same index (``/tmp/rag_bench`` by default, or ``$RAG_BENCH_DIR``, with the embedding cache):

- one-shot: hybrid search, top 5 paragraphs, one pass, no intent filter (the plain baseline the target is
  measured against), formatted context;
- one-shot + intent filter: the same with the intent's chunk-type filter (shown for reference: a filter with no
  relaxation is a weaker baseline, so the target is never measured against it);
- agent: the offline policy with default settings (section search, zooming, retries, de-duplicated context).

Reported per system: answer-text recall in the final context (an answer counts when its text is inside a
context chunk of the expected document), context tokens (mean), steps (mean), latency p50/p95, and for the
agent the de-dup saving (tokens de-dup kept out ÷ tokens offered). Writes ``bench/results/agent.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench.results_file import publish

DEFAULT_DATA_DIR = Path(os.environ.get("RAG_BENCH_DIR", "/tmp/rag_bench"))


def _recall(question, hits) -> float:
    from rag_core.evaluation.questions import chunk_matches

    targets = question.targets()
    found = {t for hit in hits for t in chunk_matches(question, hit.chunk, hit.source_name)}
    return len(found & set(targets)) / len(targets) if targets else 0.0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))] if ordered else 0.0


def _summary(rows: list[dict]) -> dict:
    latencies = [r["ms"] for r in rows]
    return {
        "recall": 100 * statistics.fmean(r["recall"] for r in rows),
        "tokens": statistics.fmean(r["tokens"] for r in rows),
        "steps": statistics.fmean(r["steps"] for r in rows),
        "p50": _pct(latencies, 0.5),
        "p95": _pct(latencies, 0.95),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agent", description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions (0: all)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--verbose", action="store_true", help="print each question's recall for both systems")
    args = parser.parse_args(argv)

    os.environ["RAG_DATA_DIR"] = str(args.data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from rag_core.agent import ask
    from rag_core.config import RAGConfig, get_settings
    from rag_core.evaluation.questions import load_golden
    from rag_core.loaders import load_path, sample_paths
    from rag_core.retrieval.retriever import Retriever
    from rag_core.services import open_index

    settings = get_settings()
    config = RAGConfig(embedding={"embedder": args.embedder})
    index = open_index(config, settings, collection=f"bench-agent-{config.index_key()}")
    docs = [load_path(p) for p in sample_paths()]
    wanted = {d.id for d in docs}
    for entry in index.documents():
        if entry["doc_id"] not in wanted:  # a sample removed or changed since the last run
            index.remove_document(entry["doc_id"])
    indexed = {entry["doc_id"] for entry in index.documents()}
    missing = [d for d in docs if d.id not in indexed]
    if missing:
        started = time.perf_counter()
        index.ingest(missing)
        print(f"indexed {len(missing)} sample documents in {time.perf_counter() - started:.1f} s")
    questions = load_golden().questions
    if args.limit:
        questions = questions[: args.limit]

    one_shot_config = config.retrieval.one_shot()
    baselines = {
        "one-shot": Retriever(index, one_shot_config, settings),
        "one-shot + intent filter": Retriever(
            index, one_shot_config.model_copy(update={"use_intent_filter": True}), settings),
    }
    agent_retriever = Retriever(index, config.retrieval, settings)
    rows: dict[str, list[dict]] = {name: [] for name in baselines} | {"agent": []}
    saved = offered = 0
    for question in questions:
        for name, one_shot in baselines.items():
            one_shot.retrieve(question.question)  # warm-up: every system then embeds the question from the cache
            tick = time.perf_counter()
            result = one_shot.retrieve(question.question)
            ms = (time.perf_counter() - tick) * 1000
            included = {entry["chunk_id"] for entry in result.context.included}
            hits = [h for h in result.hits if h.chunk.id in included]
            rows[name].append({"recall": _recall(question, hits), "tokens": result.context.tokens,
                               "steps": 1, "ms": ms, "intent": question.intent or "?"})
        tick = time.perf_counter()
        answer = ask(question.question, index, config, settings, policy="offline", retriever=agent_retriever)
        ms = (time.perf_counter() - tick) * 1000
        rows["agent"].append({"recall": _recall(question, answer.context_hits), "tokens": answer.context_tokens,
                              "steps": len(answer.steps), "ms": ms, "intent": question.intent or "?"})
        saved += answer.dedup_saved_tokens
        offered += answer.dedup_offered_tokens
        if args.verbose:
            print(f"{question.id} {question.intent:<9} one-shot {rows['one-shot'][-1]['recall']:.2f} "
                  f"agent {rows['agent'][-1]['recall']:.2f} ({rows['agent'][-1]['tokens']} tok, "
                  f"{len(answer.steps)} steps) {question.question}")

    summary = {name: _summary(r) for name, r in rows.items()}
    base, agent = summary["one-shot"], summary["agent"]
    saving = 100 * saved / offered if offered else 0.0
    lines = [
        f"Golden set: {len(questions)} questions over the sample documents; embedder {args.embedder}; "
        f"all systems in the same run on 2 cores. Target: agent recall ≥ one-shot + 10 points with no more "
        f"context tokens; 'one-shot' is plain top-5 hybrid.",
        "",
        "| system | answer recall in context (%) | context tokens (mean) | steps (mean) | latency p50 (ms) "
        "| latency p95 (ms) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, s in summary.items():
        lines.append(f"| {name} | {s['recall']:.1f} | {s['tokens']:.0f} | {s['steps']:.2f} | {s['p50']:.0f} "
                     f"| {s['p95']:.0f} |")
    lines += [
        "",
        f"- Recall: agent − one-shot = **{agent['recall'] - base['recall']:+.1f} points** (target ≥ +10).",
        f"- Context tokens: agent ÷ one-shot = **{agent['tokens'] / base['tokens']:.2f}×** (target ≤ 1.00).",
        f"- De-dup saving in the agent: **{saving:.1f}%** of the new material offered to its context "
        f"({saved} tokens kept out).",
        f"- Latency: agent ÷ one-shot (p50) = {agent['p50'] / base['p50']:.1f}×.",
    ]
    lines += ["", "| intent | questions | one-shot recall (%) | agent recall (%) | one-shot tokens | agent tokens |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for intent in sorted({r["intent"] for r in rows["agent"]}):
        base_rows = [r for r in rows["one-shot"] if r["intent"] == intent]
        agent_rows = [r for r in rows["agent"] if r["intent"] == intent]
        b, a = _summary(base_rows), _summary(agent_rows)
        lines.append(f"| {intent} | {len(agent_rows)} | {b['recall']:.1f} | {a['recall']:.1f} | {b['tokens']:.0f} "
                     f"| {a['tokens']:.0f} |")
    table = "\n".join(lines)
    print(table)
    publish("agent", "# Agent vs one-shot RAG\n\n" + table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
