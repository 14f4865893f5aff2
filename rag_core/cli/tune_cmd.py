"""``python -m rag_core tune --collection NAME (--questions FILE | --draft N)``: search chunking and retrieval
settings on a question set, prove the best on held-out questions, and say whether to switch."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_core.evaluation.draft import STYLES

# rag_core.tuning.space.TUNE_STRATEGIES (not imported here: the package loads Optuna; a test keeps them equal).
TUNE_STRATEGIES = ("search", "agent")


def register(subparsers) -> None:
    parser = subparsers.add_parser("tune", help="find a better configuration for a collection and prove it")
    parser.add_argument("--collection", required=True, help="collection (index) whose documents to tune for")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--questions", metavar="FILE", help="CSV or JSONL question set ('golden': the built-in one)")
    source.add_argument("--draft", type=int, metavar="N", help="draft N questions offline from the documents first")
    parser.add_argument("--draft-style", choices=STYLES, default=None,
                        help="how --draft words its questions (rag_core.evaluation.draft; default: the tuner's, "
                        "rag_core.tuning.study.DRAFT_STYLE)")
    parser.add_argument("--strategy", choices=TUNE_STRATEGIES, default="search",
                        help="tune one-shot search or the agent (default search)")
    parser.add_argument("--budget", type=int, default=1500, help="context tokens every trial is scored at "
                        "(default 1500; never tuned)")
    parser.add_argument("--minutes", type=float, help="time budget of the search in minutes (default 5 without "
                        "--trials)")
    parser.add_argument("--trials", type=int, help="most trials in this run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the split and the sampler (default 0)")
    parser.add_argument("--pin", action="append", default=[], metavar="KEY=VALUE",
                        help="keep a setting fixed, e.g. retrieval.rrf_k=60 or chunking.strategy=fixed; repeat")
    parser.add_argument("--sampler", choices=("tpe", "random"), default="tpe", help="Optuna sampler (default tpe)")
    parser.add_argument("--multi-objective", action="store_true",
                        help="quality, context tokens and latency as three objectives (no pruning)")
    parser.add_argument("--study", default="", help="study name to resume (default: derived from the inputs)")
    parser.add_argument("--save", metavar="NAME", help="save the best configuration under this name")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=run)


def _questions(args: argparse.Namespace):
    from rag_core.evaluation.questions import load_golden, parse_upload

    if args.questions is None:
        return None
    if args.questions == "golden":
        return load_golden()
    path = Path(args.questions)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    return parse_upload(path.name, path.read_bytes())


def _progress(update) -> None:
    best = f", best {update.best:.3f}" if update.best is not None else ""
    eta = f", {update.eta_s:.0f} s left" if update.eta_s is not None else ""
    print(f"{update.trials_done} trials ({update.pruned} pruned{best}{eta}) {update.message}", file=sys.stderr,
          flush=True)


def run(args: argparse.Namespace) -> int:
    import optuna

    from rag_core.cli import print_json
    from rag_core.config import RAGConfig, get_settings
    from rag_core.services import tune_collection
    from rag_core.serving.configstore import ConfigStore
    from rag_core.tuning import TuneSpec, parse_pins

    if args.draft is not None and args.draft < 10:
        raise ValueError(f"--draft must be at least 10 questions (got {args.draft})")
    settings = get_settings()
    if args.save:
        RAGConfig(name=args.save)  # a bad name is refused before the study runs
    pins = parse_pins(args.pin, RAGConfig(), args.strategy)
    minutes = args.minutes if args.minutes is not None else (None if args.trials else 5.0)
    spec = TuneSpec(collection=args.collection, strategy=args.strategy, budget=args.budget, minutes=minutes,
                    trials=args.trials, seed=args.seed, pins=pins, sampler=args.sampler,
                    multi_objective=args.multi_objective, study_name=args.study)
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # the command prints its own progress lines
    result = tune_collection(spec, _questions(args), draft=args.draft or 0, settings=settings,
                             draft_style=args.draft_style,
                             progress=None if args.json else _progress)
    if args.save:
        ConfigStore.for_settings(settings).save(RAGConfig.model_validate({**result.best, "name": args.save}))
        result.saved_as = args.save
    payload = result.model_dump(mode="json")
    payload["best"]["name"] = args.save or payload["best"]["name"]
    if args.json:
        print_json(payload)
        return 0
    print(f"study {result.study}: {result.counts['trials']} trials ({result.counts['pruned']} pruned, "
          f"{result.counts['failed']} failed) in {result.seconds:.0f} s; {result.status}")
    if result.chosen_because:
        print(f"put forward: {result.chosen_because}")
    print(f"validation ({result.split['validation']} questions, {result.metric} at {result.budget} tokens): "
          f"current {result.current.get('quality', 0):.3f}, best {result.best_metrics.get('quality', 0):.3f}, "
          f"gain {result.gain:+.3f} [{result.interval[0]:+.3f}, {result.interval[1]:+.3f}], p = {result.p_value}")
    print(f"recommendation: {result.recommendation}" + (f" (saved as {args.save})" if args.save else ""))
    return 0
