"""``python -m rag_core search "QUERY" --collection NAME``: dynamic retrieval with hits, context and trace.

The embedder is the collection's own (read from its manifest), so a query is embedded exactly as its chunks
were; ``--embedder`` is only needed for a collection that does not exist yet, and a mismatch is refused. For the
same reason ``--config NAME`` takes only the saved configuration's retrieval settings, never its chunking or
embedder.
"""

from __future__ import annotations

import argparse

from rag_core.cli.config_cmd import add_saved_config_flag, saved_config
from rag_core.config import RetrievalConfig, field_bounds
from rag_core.types import EMBEDDER_NAMES, GRANULARITIES, RETRIEVAL_STRATEGIES

# The command's own strategy when neither --strategy nor --config says one: ``auto`` (the route is chosen per
# query), kept as the command-line contract although a RetrievalConfig defaults to hybrid.
DEFAULT_STRATEGY = "auto"


def register(subparsers) -> None:
    defaults = RetrievalConfig()
    parser = subparsers.add_parser("search", help="search a collection (dynamic retrieval, traced)")
    parser.add_argument("query", help="what to look for")
    parser.add_argument("--collection", required=True, help="index (collection) name, as given to ingest")
    add_saved_config_flag(parser, "retrieval settings")
    parser.add_argument("--strategy", choices=RETRIEVAL_STRATEGIES,
                        help=f"retrieval strategy (default: {DEFAULT_STRATEGY}, or the --config's)")
    parser.add_argument("--k", type=int, help=f"initial k (default {defaults.initial_k}); dynamic retrieval may "
                                              "widen it up to max k")
    parser.add_argument("--max-k", type=int, help=f"largest k dynamic retrieval may reach (default {defaults.max_k})")
    granularities = (*sorted(GRANULARITIES, key=lambda g: g != defaults.granularity), "any")
    parser.add_argument("--granularity", choices=granularities,
                        help=f"granularity searched first (default {defaults.granularity})")
    parser.add_argument("--min-confidence", type=float,
                        help=f"confidence that stops widening (default {defaults.min_confidence})")
    parser.add_argument("--budget", type=int,
                        help=f"token budget of the formatted context (default {defaults.token_budget})")
    parser.add_argument("--exclude", action="append", default=[], metavar="CHUNK_ID",
                        help="chunk id already retrieved (repeatable): not returned again")
    parser.add_argument("--previous", action="append", default=[], metavar="QUERY",
                        help="an earlier query of the same conversation (repeatable, oldest first)")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES,
                        help="embedder (default: the collection's own; must match it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (hits, context, trace)")
    parser.set_defaults(func=run)


def _overrides(args: argparse.Namespace, base: RetrievalConfig, from_config: bool) -> dict:
    """The flags given, as changes to ``base`` (the --config's retrieval settings, else the defaults)."""
    overrides: dict = {}
    if args.strategy is not None or not from_config:
        overrides["strategy"] = args.strategy or DEFAULT_STRATEGY
    if args.k is not None:
        overrides["initial_k"] = args.k
        # a --k above the max k raises the max k to it instead of being refused
        overrides["max_k"] = max(args.k, base.max_k if args.max_k is None else args.max_k)
    elif args.max_k is not None:
        overrides["max_k"] = args.max_k
    for key, value in (("granularity", args.granularity), ("min_confidence", args.min_confidence),
                       ("token_budget", args.budget)):
        if value is not None:
            overrides[key] = value
    return overrides


FLAGS = {"initial_k": "--k", "max_k": "--max-k", "granularity": "--granularity", "min_confidence": "--min-confidence",
         "token_budget": "--budget", "strategy": "--strategy"}


def _effective(base: RetrievalConfig, overrides: dict) -> RetrievalConfig:
    """``base`` with the flag values, validated before anything is opened; errors name the flag."""
    from pydantic import ValidationError

    from rag_core.errors import field_problems, stated_problem

    try:
        return RetrievalConfig.model_validate({**base.model_dump(), **overrides})
    except ValidationError as e:
        raise ValueError(field_problems(e, unnamed="options", labels=FLAGS, problem=stated_problem)) from e


def run(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.config import get_settings
    from rag_core.services import open_collection, open_retriever

    if not args.query.strip():
        raise ValueError("the query is empty: give the text to search for")
    low, high = field_bounds("retrieval.initial_k")
    if args.k is not None and not low <= args.k <= high:
        raise ValueError(f"--k must be between {low} and {high} (got {args.k})")
    saved = saved_config(args.config)
    base = saved.retrieval if saved is not None else RetrievalConfig()
    retrieval = _effective(base, _overrides(args, base, from_config=saved is not None))
    settings = get_settings()
    index = open_collection(args.collection, settings, embedder=args.embedder)
    retriever = open_retriever(index, retrieval, settings)
    result = retriever.retrieve(args.query, exclude_ids=args.exclude, previous_queries=args.previous)
    if args.json:
        # "config" is already the trace's effective retrieval settings: the saved name gets its own field
        print_json({"collection": args.collection, "embedder": index.embedder.id, **result.to_dict(),
                    "config_name": saved.name if saved is not None else None})
        return 0
    print(f"{result.route} ({result.route_reason}); intent {result.intent}; confidence {result.confidence:.2f}; "
          f"{len(result.iterations)} iteration(s), {result.elapsed_ms:.0f} ms")
    for rank, hit in enumerate(result.hits, start=1):
        ranks = ", ".join(f"{k} #{v}" for k, v in hit.ranks.items())
        print(f"{rank:>2}. [{hit.confidence:.2f}] {hit.source_name} › {hit.chunk.heading or '(top)'}  ({ranks})  "
              f"{hit.chunk.id}")
    print()
    print(result.context.text)
    return 0
