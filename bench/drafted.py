"""How far a drafted question set can be trusted: does it rank configurations as the human-written set does?

``python -m bench drafted [--n 50,150] [--seeds 0,1,2] [--budget 1000] [--sizes 256,512,1024] [--style verbatim|area]
[--llm] [--no-publish]``

Over the FastAPI docs (155 Markdown files), a grid of configurations — chunk ``max_tokens`` × chunking strategy
(structure, fixed) × system (one-shot search, offline agent), 12 by default — is scored twice: by a question set
drafted from the corpus (``rag_core.evaluation.draft``, offline unless ``--llm``) and by the human-written
``fastapi_docs_qa`` set (80 questions). Each system fills the same context budget; the score is place recall (the
docsqa rule: a place is found when one of its spans is in the context, whitespace collapsed). Reported: Kendall's τ
between the two orderings (``scipy.stats.kendalltau``, τ-b) for each drafted set (one per seed and size) and their
mean per size (a small set ranks noisily: the figure is reported for each size drafted, so a team knows how many
questions to draft), every configuration's scores and ranks, the drafted
set's check by the dataset's own ``validate.py``, and the time to draft 50 questions from 30 documents.

Writes ``bench/results/drafted.md`` and ``bench/results/draft_agreement.json`` (what the Evaluate page shows next
to a drafted set's results); with ``--style area`` (offline questions worded from the page around the passage,
``rag_core.evaluation.draft``) ``drafted_area.md`` and ``draft_agreement_area.json`` (what the tuner shows for a set
drafted in that style). Indexes are built once and reused under ``$RAG_BENCH_DIR`` (``/tmp/rag_bench``), and
so is each configuration's context per question (``drafted_contexts.json``, keyed by index fingerprint, budget,
question and a hash of the retrieval and agent code): a new draft is scored without searching the human set again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.docsqa import SEARCH_DEPTH, SHARED, Item, QASet, fill, load_fastapi, normalize_ws, open_built
from bench.results_file import RESULTS_DIR, publish
from rag_core.evaluation.draft import STYLES

DEFAULT_DATA_DIR = Path(os.environ.get("RAG_BENCH_DIR", "/tmp/rag_bench"))
STRATEGIES = ("structure", "fixed")
SYSTEMS = ("one-shot", "agent")
OVERLAP = {"structure": 32, "fixed": 50}
CORPUS = "FastAPI docs (155 Markdown files, ../shared/corpora/fastapi_docs)"
VALIDATOR = SHARED / "datasets" / "fastapi_docs_qa" / "validate.py"
CORPUS_PREFIX = "docs/en/docs/"


def drafted_items(questions) -> list[Item]:
    """Drafted questions as the bench's items (an unanswerable one scores 'not found', not recall)."""
    items = []
    for q in questions:
        places = [[normalize_ws(s) for s in place["spans"]] for place in q.evidence]
        items.append(Item(q.id, q.question, q.type or "single", places, [1] * len(places), answerable=bool(places)))
    return items


def validate_with_dataset_checker(questions) -> dict:
    """Run the FastAPI set's own ``validate.py`` on the drafted answerable questions (file paths given the corpus
    prefix): every span verbatim and at least 40 characters, heading paths right, no span in another file."""
    answerable = [q for q in questions if q.evidence]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "drafted.jsonl"
        lines = []
        for q in answerable:
            evidence = [{**p, "file": CORPUS_PREFIX + p["file"]} for p in q.evidence]
            lines.append(json.dumps({"id": q.id, "question": q.question, "intent": q.intent or "fact",
                                     "answer": q.reference_answer, "evidence": evidence}))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        done = subprocess.run([sys.executable, str(VALIDATOR), "--questions", str(path)], capture_output=True,
                              text=True, timeout=300)
    errors = [line.strip()[2:] for line in done.stdout.splitlines() if line.startswith("  - ")]
    return {"ok": done.returncode == 0, "questions": len(answerable), "errors": errors[:10]}


def time_fifty_from_thirty(docs, seed: int) -> float:
    """Seconds to draft 50 questions from 30 of the documents (picked by the seed), offline."""
    from rag_core.evaluation.draft import draft_questions

    picked = random.Random(seed).sample(docs, 30)
    tick = time.perf_counter()
    result = draft_questions(picked, 50, seed=seed)
    seconds = time.perf_counter() - tick
    print(f"  drafted {len(result.questions)} questions from 30 documents in {seconds:.2f} s", flush=True)
    return seconds


def grid_systems(qa: QASet, settings, sizes: list[int]) -> dict:
    """One callable per configuration: (question, budget) -> (chunks, steps, said not found)."""
    from rag_core.agent import ask
    from rag_core.config import RAGConfig
    from rag_core.retrieval.retriever import Retriever

    systems = {}
    for size in sizes:
        for strategy in STRATEGIES:
            config = RAGConfig(chunking={"strategy": strategy, "max_tokens": size, "overlap": OVERLAP[strategy]})
            # 512 tokens is the docsqa bench's own pair of indexes (same chunks): reused rather than built again
            name = {("structure", 512): "fastapi-ours", ("fixed", 512): "fastapi-fixed"}.get(
                (strategy, size), f"fastapi-grid-{strategy}-{size}")
            index = open_built(settings, config, name, qa.docs)
            retriever = Retriever(index, config.retrieval, settings)

            def one_shot(question, budget, retriever=retriever):
                result = retriever.retrieve(question, overrides={"initial_k": SEARCH_DEPTH, "max_k": SEARCH_DEPTH})
                return fill([h.chunk for h in result.hits], budget), 1, None

            def agent(question, budget, index=index, config=config, retriever=retriever):
                run_config = config.model_copy(update={"agent": config.agent.model_copy(
                    update={"context_budget": budget})})
                answer = ask(question, index, run_config, settings, policy="offline", retriever=retriever)
                return [h.chunk for h in answer.context_hits], len(answer.steps), not answer.found

            systems[f"{strategy} {size} one-shot"] = (one_shot, index.name)
            systems[f"{strategy} {size} agent"] = (agent, index.name)
    return systems


def code_version() -> str:
    """A hash of the retrieval and agent code: cached contexts are reused only while it is unchanged."""
    root = Path(__file__).resolve().parent.parent / "rag_core"
    digest = hashlib.sha256()
    for path in sorted([*root.glob("retrieval/**/*.py"), *root.glob("agent/**/*.py"), *root.glob("index/*.py"),
                        *root.glob("stores/*.py")]):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


class ContextCache:
    """Contexts a configuration returned for a question (by collection fingerprint, system, budget and code
    version), so re-drafting re-scores without running the searches again; ``--fresh`` ignores it."""

    def __init__(self, path: Path, fresh: bool):
        self.path, self.version = path, code_version()
        self.data: dict = {}
        if not fresh and path.is_file():
            try:
                self.data = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                self.data = {}
        self.hits = self.misses = 0

    def wrap(self, name: str, collection: str, system, budget: int):
        def run(question: str, _budget: int):
            key = f"{self.version}|{collection}|{name}|{budget}|{question}"
            if key in self.data:
                self.hits += 1
                text, not_found = self.data[key]
            else:
                self.misses += 1
                chunks, _steps, not_found = system(question, budget)
                text = "\n".join(c.text for c in chunks)
                self.data[key] = [text, not_found]
            return text, not_found
        return run

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.data), encoding="utf-8")


def score(items: list[Item], system, budget: int) -> dict:
    per = []
    for item in items:
        context, not_found = system(item.question, budget)
        per.append((item, item.found(context), not_found))
    answerable = [(i, f) for i, f, _ in per if i.answerable]
    places = sum(len(i.places) for i, _ in answerable)
    nulls = [nf for i, _, nf in per if not i.answerable]
    return {"place": sum(f for _, f in answerable) / places if places else 0.0,
            "question": statistics.fmean(f == len(i.places) for i, f in answerable) if answerable else 0.0,
            "said_not_found": (sum(bool(nf) for nf in nulls) / len(nulls)) if nulls and nulls[0] is not None else None}


def ranks(values: list[float]) -> list[int]:
    """1 = best; ties share the better rank."""
    return [1 + sum(other > value for other in values) for value in values]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench drafted", description=__doc__.splitlines()[0])
    parser.add_argument("--n", default="50,150", help="drafted questions per set, comma-separated sizes; τ is "
                        "reported for each (default 50,150; the largest is the headline figure)")
    parser.add_argument("--seeds", default="0,1,2", help="one drafted set per seed; τ is reported per set and as "
                        "their mean (default 0,1,2)")
    parser.add_argument("--budget", type=int, default=1000, help="context budget in tokens (default 1000)")
    parser.add_argument("--sizes", default="256,512,1024", help="chunk max_tokens of the grid, comma-separated")
    parser.add_argument("--style", default="verbatim", choices=STYLES, help="how offline questions are worded "
                        "(rag_core.evaluation.draft; default verbatim)")
    parser.add_argument("--llm", action="store_true", help="draft with the configured LLM (RAG_LLM_*)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--no-publish", action="store_true", help="print only; leave bench/results alone")
    parser.add_argument("--fresh", action="store_true", help="search every question again (ignore the contexts "
                        "cached by an earlier run with the same indexes, budget and retrieval code)")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    counts = sorted({int(n) for n in args.n.split(",") if n.strip()})
    largest = counts[-1]

    os.environ["RAG_DATA_DIR"] = str(args.data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    from scipy.stats import kendalltau

    from rag_core.config import get_settings
    from rag_core.evaluation.agreement import kendall_tau
    from rag_core.evaluation.draft import check_spans, draft_questions
    from rag_core.services import open_llm

    settings = get_settings()
    qa = load_fastapi(0)
    print(f"fastapi: {len(qa.docs)} documents, {len(qa.items)} human-written questions", flush=True)
    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    seconds_50_from_30 = time_fifty_from_thirty(qa.docs, seeds[0])
    llm = open_llm(settings, required=True) if args.llm else None
    drafts = {}  # (size, seed) -> the drafted set and its checks
    for n in counts:
        for seed in seeds:
            tick = time.perf_counter()
            draft = draft_questions(qa.docs, n, seed=seed, llm=llm, time_budget_s=600 if llm else 60,
                                    style=args.style)
            problems = check_spans(draft.questions, qa.docs)
            validation = validate_with_dataset_checker(draft.questions)
            spans = sum(len(p["spans"]) for q in draft.questions for p in q.evidence)
            drafts[n, seed] = {"draft": draft, "items": drafted_items(draft.questions), "problems": len(problems),
                               "validation": validation, "spans": spans}
            print(f"  {n} questions, seed {seed}: drafted {len(draft.questions)} ({draft.counts()}) from "
                  f"{len(qa.docs)} documents in {time.perf_counter() - tick:.2f} s; {spans} spans, {len(problems)} "
                  f"not verbatim; validate.py {'ok' if validation['ok'] else 'FAILED'}", flush=True)

    systems = grid_systems(qa, settings, sizes)
    rows = []
    cache = ContextCache(args.data_dir / "drafted_contexts.json", args.fresh)
    for name, (system, collection) in systems.items():
        tick = time.perf_counter()
        cached = cache.wrap(name, collection, system, args.budget)
        by_set = {key: score(d["items"], cached, args.budget) for key, d in drafts.items()}
        human = score(qa.items, cached, args.budget)
        means = {n: statistics.fmean(by_set[n, seed]["place"] for seed in seeds) for n in counts}
        rows.append({"config": name, "human": human, "drafted": {"place": means[largest]},
                     "by_seed": {seed: by_set[largest, seed] for seed in seeds}, "by_set": by_set, "means": means})
        print(f"  {name:<22} human place {human['place']:.3f} · drafted place "
              + ", ".join(f"{means[n]:.3f} ({n})" for n in counts)
              + f" ({time.perf_counter() - tick:.0f} s)", flush=True)
    cache.save()
    print(f"  contexts: {cache.misses} searched, {cache.hits} from the cache", flush=True)
    human_scores = [r["human"]["place"] for r in rows]
    taus_by_size: dict[int, dict[int, tuple[float, float]]] = {}
    for n in counts:
        taus_by_size[n] = {}
        for seed in seeds:
            drafted_scores = [r["by_set"][n, seed]["place"] for r in rows]
            tau, p_value = kendalltau(human_scores, drafted_scores)
            ours = kendall_tau(human_scores, drafted_scores)
            assert abs(ours - tau) < 1e-9, (ours, tau)  # the app's own τ agrees with scipy's on the published figure
            taus_by_size[n][seed] = (float(tau), float(p_value))
    taus = taus_by_size[largest]
    tau_mean = statistics.fmean(t for t, _ in taus.values())
    size_means = {n: statistics.fmean(t for t, _ in taus_by_size[n].values()) for n in counts}
    tau_of_mean = float(kendalltau(human_scores, [r["drafted"]["place"] for r in rows])[0])
    human_ranks, drafted_ranks = ranks(human_scores), ranks([r["drafted"]["place"] for r in rows])
    for row, hr, dr in zip(rows, human_ranks, drafted_ranks, strict=True):
        row["human_rank"], row["drafted_rank"] = hr, dr

    command = ("python -m bench drafted" + (" --llm" if args.llm else "")
               + (f" --style {args.style}" if args.style != "verbatim" else ""))
    suffix = ("_llm" if args.llm else "") + (f"_{args.style}" if args.style != "verbatim" else "")
    first = drafts[largest, seeds[0]]["draft"]
    kinds = ", ".join(f"{k} {v}" for k, v in first.counts().items())
    checked = all(d["validation"]["ok"] for d in drafts.values())
    failures = "; ".join(e for d in drafts.values() for e in d["validation"]["errors"])
    lines = [
        f"Grid: chunk max_tokens {sizes} × chunking {list(STRATEGIES)} × {list(SYSTEMS)} = {len(rows)} "
        f"configurations over the {CORPUS}, context budget {args.budget} tokens, MiniLM, 2 cores (load average "
        f"{os.getloadavg()[0]:.1f}). Score: place recall (answerable questions). Command: `{command}`.",
        "",
        f"Drafted sets ({first.method}): {len(seeds)} sets (seeds {seeds}) of each size {counts} (the "
        f"{largest}-question set of seed {seeds[0]}: {kinds}), {sum(d['spans'] for d in drafts.values())} evidence "
        "spans, "
        f"{sum(d['problems'] for d in drafts.values())} not verbatim in their document; the FastAPI set's own "
        f"`validate.py` on every set's answerable questions: {'passed' if checked else 'FAILED: ' + failures}. "
        f"{first.label}.",
        "",
        f"**Kendall's τ (place recall) between the human-written set's ordering and a drafted set's of {largest} "
        f"questions: mean {tau_mean:.2f} over {len(seeds)} drafted sets** ("
        + ", ".join(f"seed {seed}: {t:.2f}, p = {p:.3f}" for seed, (t, p) in taus.items())
        + f"); the mean of the drafted sets' scores: τ = {tau_of_mean:.2f}. Drafting 50 questions from 30 documents "
        f"offline: {seconds_50_from_30:.2f} s.",
        "",
        "| drafted questions per set | τ, mean over the seeds | " + " | ".join(f"seed {seed}" for seed in seeds) + " |",
        "| ---: | ---: | " + " | ".join("---:" for _ in seeds) + " |",
        *[f"| {n} | {size_means[n]:.2f} | " + " | ".join(f"{taus_by_size[n][seed][0]:.2f}" for seed in seeds) + " |"
          for n in counts],
        "",
        f"Configurations, scored by the human-written set and by the drafted sets of {largest} questions:",
        "",
        "| configuration | human place recall | rank | drafted (mean) | rank | difference | "
        + " | ".join(f"seed {seed}" for seed in seeds) + " |",
        "| --- | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in seeds) + " |",
    ]
    for row in rows:
        lines.append(f"| {row['config']} | {row['human']['place']:.3f} | {row['human_rank']} | "
                     f"{row['drafted']['place']:.3f} | {row['drafted_rank']} | "
                     f"{row['drafted']['place'] - row['human']['place']:+.3f} | "
                     + " | ".join(f"{row['by_seed'][seed]['place']:.3f}" for seed in seeds) + " |")
    text = "\n".join(lines)
    print(text)
    if not args.no_publish:
        publish("drafted" if args.llm else f"drafted{suffix}",
                "# Drafted question sets against the human-written FastAPI set\n\n" + text)
        figure = {"tau": round(tau_mean, 6), "tau_by_seed": {str(k): round(t, 4) for k, (t, _) in taus.items()},
                  "p_by_seed": {str(k): round(p, 4) for k, (_, p) in taus.items()},
                  "tau_of_mean_scores": round(tau_of_mean, 4),
                  "metric": "place recall", "corpus": CORPUS, "human_set": "fastapi_docs_qa (80 questions)",
                  "method": first.method, "style": args.style, "drafted": largest, "seeds": seeds,
                  "budget": args.budget,
                  "by_size": [{"drafted": n, "tau": round(size_means[n], 6),
                               "tau_by_seed": {str(k): round(t, 4) for k, (t, _) in taus_by_size[n].items()}}
                              for n in counts],
                  "configs": [{k: v for k, v in r.items() if k not in ("by_seed", "by_set", "means")} for r in rows],
                  "seconds_50_from_30": round(seconds_50_from_30, 3), "validator_ok": checked,
                  "spans_not_verbatim": sum(d["problems"] for d in drafts.values()), "command": command,
                  "measured": datetime.now(UTC).strftime("%Y-%m-%d")}
        path = RESULTS_DIR / f"draft_agreement{suffix}.json"
        path.write_text(json.dumps(figure, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
