"""The tuner on documentation it never saw human questions of: tuned on drafted questions, judged on human ones.

``python -m bench tune [--sets fastapi,code,multihop] [--strategies search,agent] [--methods tpe,random,grid]
[--minutes 3] [--draft 150] [--budgets 1000,1500] [--tune-budget 1500] [--seed 0] [--no-publish]``

For each set (``bench docsqa``'s loaders and judge): draft ``--draft`` questions offline from the documents
(``rag_core.evaluation.draft``; no human question is seen), run a study of ``--minutes`` per method on them
(``rag_core.tuning.run_study``: TPE, Optuna's random sampler, and today's 2-D grid of the Evaluate page's sweep,
max tokens × k, all with the same time budget, the same split and the same budget in tokens), then score the
current defaults (``RAGConfig()``) and each method's best configuration on the human question set at each budget
of ``--budgets``: place recall, the share of gold evidence places in the context that fits the budget (the docsqa
rule). Reported: the human-set gain, the tool's own validated gain with its p-value and recommendation, whether they
agree in sign, trials run (complete / pruned / skipped), time per trial kind and the minutes each study took.

Each method builds its own indexes (one per chunking it tries, under its own prefix), so no method reuses another's
builds; all start from the defaults' index (trial 0 is the current configuration), they share the MiniLM embedding
cache, and TPE runs first, with the coldest cache. Writes
``bench/results/tune.md``; indexes, embeddings and studies live in ``$RAG_BENCH_DIR`` (``/tmp/rag_bench``).
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.docsqa import load_code, load_fastapi, load_multihop
from bench.results_file import publish
from rag_core.evaluation.draft import STYLES

DEFAULT_DATA_DIR = Path(os.environ.get("RAG_BENCH_DIR", "/tmp/rag_bench"))
SETS = ("fastapi", "code", "multihop")
METHODS = ("tpe", "random", "grid")
LOADERS = {"fastapi": load_fastapi, "code": load_code, "multihop": load_multihop}


def human_scores(qa, config, strategy: str, cache, settings, budget: int) -> list[tuple[str, int, int]]:
    """(question id, places found, places) of every answerable human question at ``budget``."""
    from rag_core.tuning.objective import budget_outcome
    from rag_core.tuning.space import apply

    config = apply(config, {}, budget=budget, name=config.name)
    index, _ = cache.get(config)
    eval_strategy = "agent" if strategy == "agent" else config.retrieval.strategy
    rows = []
    for item in qa.items:
        if not item.answerable:
            continue
        outcome = budget_outcome(item.question, eval_strategy, config, index, settings)
        rows.append((item.id, item.found("\n".join(chunk.text for chunk, _ in outcome.ranked)), len(item.places)))
    return rows


def place_recall(rows) -> float:
    places = sum(n for _, _, n in rows)
    return sum(found for _, found, _ in rows) / places if places else 0.0


def run_set(set_name: str, args, settings) -> list[dict]:
    from rag_core.config import RAGConfig
    from rag_core.evaluation.draft import draft_questions
    from rag_core.evaluation.regression import sign_flip_p
    from rag_core.services import open_index
    from rag_core.tuning import TuneInputs, TuneSpec, run_study
    from rag_core.tuning.objective import IndexCache
    from rag_core.tuning.space import apply
    from rag_core.tuning.study import SWEEP_GRID

    qa = LOADERS[set_name](0)
    tick = time.perf_counter()
    drafted = draft_questions(qa.docs, args.draft, seed=args.seed, time_budget_s=180,
                              style=args.draft_style).question_set(
        f"drafted from {set_name}")
    print(f"{set_name}: {len(qa.docs)} documents, {len(qa.items)} human questions, {len(drafted.questions)} drafted "
          f"in {time.perf_counter() - tick:.0f} s", flush=True)
    defaults = RAGConfig(name="defaults")
    stamp = datetime.now(UTC).strftime("%Y%m%d%H%M%S")
    rows = []
    for strategy in args.strategies:
        base_cache = IndexCache(qa.docs, open_index, settings, prefix=f"bench-{set_name}-defaults")
        base = {b: human_scores(qa, defaults, strategy, base_cache, settings, b) for b in args.budgets}
        for method in args.methods:
            spec = TuneSpec(collection=f"bench-{set_name}-{method}", strategy=strategy, budget=args.tune_budget,
                            minutes=args.minutes, seed=args.seed, sampler=method,
                            grid=SWEEP_GRID if method == "grid" else {},
                            study_name=f"bench-{set_name}-{strategy}-{method}-{stamp}")
            inputs = TuneInputs(questions=drafted, documents=qa.docs, current=defaults, open_index=open_index,
                                settings=settings, known={defaults.index_key(): base_cache.collection_for(defaults)})
            started = time.perf_counter()
            result = run_study(spec, inputs, progress=_progress(set_name, strategy, method))
            minutes = (time.perf_counter() - started) / 60
            tuned = RAGConfig.model_validate({**result.best, "name": "tuned"})
            cache = IndexCache(qa.docs, open_index, settings, prefix=spec.collection, known=inputs.known)
            human = {b: human_scores(qa, tuned, strategy, cache, settings, b) for b in args.budgets}
            row = {"set": set_name, "strategy": strategy, "method": method, "result": result, "minutes": minutes,
                   "tuned": tuned, "human": {}, "top": None}
            if result.top_trial is not None and result.top_trial != result.best_trial:
                # The rule's own baseline, in the same run: the top-scoring trial, which a study put forward before.
                record = next(t for t in result.trials if t.number == result.top_trial)
                top = apply(defaults, record.params, budget=args.tune_budget, name="top")
                row["top"] = place_recall(human_scores(qa, top, strategy, cache, settings, args.budgets[-1]))
            for b in args.budgets:
                before, after = place_recall(base[b]), place_recall(human[b])
                found_before = {q: f / n for q, f, n in base[b]}
                differences = [f / n - found_before[q] for q, f, n in human[b]]
                row["human"][b] = {"default": before, "tuned": after, "gain": after - before,
                                   "p": sign_flip_p([-d for d in differences])}
            rows.append(row)
            last = row["human"][args.budgets[-1]]
            print(f"  {set_name} {strategy} {method}: {result.counts['trials']} trials in {minutes:.1f} min; tool "
                  f"gain {result.gain:+.3f} (p {result.p_value}, {result.recommendation}); human at "
                  f"{args.budgets[-1]}: {last['default']:.3f} -> {last['tuned']:.3f} ({last['gain']:+.3f})",
                  flush=True)
    return rows


def _progress(set_name: str, strategy: str, method: str):
    last = [0.0]

    def report(update) -> None:
        if time.monotonic() - last[0] > 30:
            last[0] = time.monotonic()
            best = f"{update.best:.3f}" if update.best is not None else "–"
            print(f"    {set_name} {strategy} {method}: {update.trials_done} trials, best {best}, "
                  f"{update.elapsed_s:.0f} s", flush=True)

    return report


def agreement(row, budget: int) -> str:
    """Whether the tool's verdict and the human set agree: a significant gain must be a human gain; "keep" is
    right when the human set shows no gain (at most +0.01)."""
    human_gain = row["human"][budget]["gain"]
    result = row["result"]
    if result.significant:
        return "yes" if human_gain > 0 else "no"
    return "yes (keep)" if human_gain <= 0.01 else "no (missed a gain)"


def _top(row, budget: int) -> str:
    """The top-scoring trial's human gain beside the put-forward one's ("same" when the rule kept the top one)."""
    result = row["result"]
    if row["top"] is None:
        return f"same trial ({result.best_trial})"
    gain = row["top"] - row["human"][budget]["default"]
    return f"{gain:+.3f} (trial {result.best_trial} / {result.top_trial})"


def _changed(result) -> str:
    from rag_core.config import RAGConfig

    best, defaults = result.best, RAGConfig().model_dump(mode="json")
    changes = [f"{section}.{key}={value}" for section in ("chunking", "retrieval", "agent")
               for key, value in best[section].items()
               if value != defaults[section][key] and key not in ("token_budget", "context_budget")]
    return ", ".join(changes) or "(defaults)"


def report(rows: list[dict], args) -> str:
    budgets = args.budgets
    last = budgets[-1]
    lines = [
        f"Command: `python -m bench tune --sets {','.join(args.sets)} --strategies {','.join(args.strategies)} "
        f"--methods {','.join(args.methods)} --minutes {args.minutes:g} --draft {args.draft} "
        f"--draft-style {args.draft_style}`. Tuned on "
        f"{args.draft} questions drafted offline from each corpus (no human question seen), scored at "
        f"{args.tune_budget} tokens; human sets judged by place recall at {', '.join(map(str, budgets))} tokens "
        f"(bench docsqa's rule). MiniLM, 2 shared cores, load average {os.getloadavg()[0]:.1f}.",
        "",
        "| set | strategy | method | trials (complete / pruned / skipped) | minutes | s per trial: retrieval-only "
        "/ new chunking | tool: validated gain [95% interval], p | tool says | "
        + " | ".join(f"human @{b}: defaults → tuned (gain)" for b in budgets)
        + f" | human p @{last} | agree in sign @{last} | human gain of the recommendation @{last} "
        f"| human gain @{last} of the top-scoring trial (put forward / top) |",
        "| --- | --- | --- | --- | ---: | --- | --- | --- | " + " | ".join("---" for _ in budgets)
        + " | ---: | --- | ---: | --- |",
    ]
    for row in rows:
        result, counts = row["result"], row["result"].counts
        kinds = result.seconds_by_kind
        human = " | ".join(f"{row['human'][b]['default']:.3f} → {row['human'][b]['tuned']:.3f} "
                           f"({row['human'][b]['gain']:+.3f})" for b in budgets)
        says = "switch" if result.significant else "keep"
        lines.append(
            f"| {row['set']} | {row['strategy']} | {row['method']} | {counts['trials']} ({counts['complete']} / "
            f"{counts['pruned']} / {counts['skipped']}) | {row['minutes']:.1f} | "
            f"{kinds.get('retrieval-only', 0):.1f} / {kinds.get('new chunking', 0):.1f} | "
            f"{result.gain:+.3f} [{result.interval[0]:+.3f}, {result.interval[1]:+.3f}], {result.p_value} | {says} "
            f"| {human} | {row['human'][last]['p']:.3f} | {agreement(row, last)} | "
            f"{row['human'][last]['gain'] if result.significant else 0.0:+.3f} | {_top(row, last)} |")
    lines += ["", "The recommendation is what a user ships: the best configuration when the tool says its gain is "
                  "significant, else the current one (a human gain of +0.000 by construction). The trial put "
              "forward is the one moving the fewest knobs within one standard error of the top tuning score "
              "(rag_core/tuning/choose.py); the last column scores the top-scoring trial itself on the human "
              "set.",
              "",
              "Best configuration of each study (what differs from the defaults):", ""]
    lines += [f"- {row['set']} {row['strategy']} {row['method']}: {_changed(row['result'])}" for row in rows]
    trust = next((row["result"].trust for row in rows if row["result"].trust), None)
    if trust and trust.get("tau") is not None:
        lines += ["", f"Trust in a drafted set (bench drafted): Kendall's τ {trust['tau']:.2f} between the rankings "
                      f"of configurations by drafted and by human questions ({trust.get('corpus', '')})."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench tune", description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="fastapi", help=f"comma-separated, from {SETS} (default fastapi)")
    parser.add_argument("--strategies", default="search", help="comma-separated: search, agent (default search)")
    parser.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, from {METHODS}")
    parser.add_argument("--minutes", type=float, default=3.0, help="time budget of each study (default 3)")
    parser.add_argument("--draft", type=int, default=150, help="questions drafted per set (default 150)")
    parser.add_argument("--draft-style", default="verbatim", choices=STYLES,
                        help="how offline questions are worded (rag_core.evaluation.draft; default verbatim)")
    parser.add_argument("--budgets", default="1000,1500", help="human-set budgets in tokens (default 1000,1500)")
    parser.add_argument("--tune-budget", type=int, default=1500, help="budget the studies score at (default 1500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    parser.add_argument("--no-publish", action="store_true", help="print only; leave bench/results alone")
    args = parser.parse_args(argv)
    args.sets = [s for s in args.sets.split(",") if s]
    args.strategies = [s for s in args.strategies.split(",") if s]
    args.methods = [m for m in args.methods.split(",") if m]
    args.budgets = [int(b) for b in args.budgets.split(",") if b]
    if (set(args.sets) - set(SETS) or set(args.methods) - set(METHODS)
            or set(args.strategies) - {"search", "agent"} or not args.budgets):
        parser.error(f"sets from {SETS}, methods from {METHODS}, strategies from search, agent; budgets as numbers")
    os.environ["RAG_DATA_DIR"] = str(args.data_dir)
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    import optuna

    from rag_core.config import get_settings

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    settings = get_settings()
    rows = []
    for set_name in args.sets:
        rows += run_set(set_name, args, settings)
    text = report(rows, args)
    print(text)
    if not args.no_publish:
        publish("tune", "# The tuner: tuned on drafted questions, judged on human ones\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
