"""``python -m rag_core search "QUERY" --collection NAME``: dynamic retrieval with hits, context and trace.

The embedder is the collection's own (read from its manifest), so a query is embedded exactly as its chunks
were; ``--embedder`` is only needed for a collection that does not exist yet, and a mismatch is refused.
"""

from __future__ import annotations

import argparse

from rag_core.types import EMBEDDER_NAMES, GRANULARITIES, RETRIEVAL_STRATEGIES


def register(subparsers) -> None:
    parser = subparsers.add_parser("search", help="search a collection (dynamic retrieval, traced)")
    parser.add_argument("query", help="what to look for")
    parser.add_argument("--collection", required=True, help="index (collection) name, as given to ingest")
    parser.add_argument("--strategy", choices=RETRIEVAL_STRATEGIES, default="auto",
                        help="retrieval strategy (default: auto)")
    parser.add_argument("--k", type=int, help="initial k (default 3); dynamic retrieval may widen it up to max k")
    parser.add_argument("--max-k", type=int, help="largest k dynamic retrieval may reach (default 20)")
    parser.add_argument("--granularity", choices=(*sorted(GRANULARITIES, key=lambda g: g != "paragraph"), "any"),
                        help="granularity searched first (default paragraph)")
    parser.add_argument("--min-confidence", type=float, help="confidence that stops widening (default 0.7)")
    parser.add_argument("--budget", type=int, help="token budget of the formatted context (default 4000)")
    parser.add_argument("--exclude", action="append", default=[], metavar="CHUNK_ID",
                        help="chunk id already retrieved (repeatable): not returned again")
    parser.add_argument("--previous", action="append", default=[], metavar="QUERY",
                        help="an earlier query of the same conversation (repeatable, oldest first)")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES,
                        help="embedder (default: the collection's own; must match it)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (hits, context, trace)")
    parser.set_defaults(func=run)


def _overrides(args: argparse.Namespace) -> dict:
    overrides: dict = {"strategy": args.strategy}
    if args.k is not None:
        overrides["initial_k"] = args.k
        overrides["max_k"] = max(args.k, args.max_k or 20)
    elif args.max_k is not None:
        overrides["max_k"] = args.max_k
    for key, value in (("granularity", args.granularity), ("min_confidence", args.min_confidence),
                       ("token_budget", args.budget)):
        if value is not None:
            overrides[key] = value
    return overrides


FLAGS = {"initial_k": "--k", "max_k": "--max-k", "granularity": "--granularity", "min_confidence": "--min-confidence",
         "token_budget": "--budget", "strategy": "--strategy"}


def _check(overrides: dict) -> None:
    """Validate the flag values as a RetrievalConfig would, before anything is opened; errors name the flag."""
    from pydantic import ValidationError

    from rag_core.config import RetrievalConfig
    from rag_core.errors import field_problems, stated_problem

    try:
        RetrievalConfig.model_validate({**RetrievalConfig().model_dump(), **overrides})
    except ValidationError as e:
        raise ValueError(field_problems(e, unnamed="options", labels=FLAGS, problem=stated_problem)) from e


def run(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.config import RetrievalConfig, get_settings
    from rag_core.retrieval.dynamic import Retriever
    from rag_core.services import open_collection, open_llm

    if not args.query.strip():
        raise ValueError("the query is empty: give the text to search for")
    if args.k is not None and not 1 <= args.k <= 100:
        raise ValueError(f"--k must be between 1 and 100 (got {args.k})")
    overrides = _overrides(args)
    _check(overrides)
    settings = get_settings()
    index = open_collection(args.collection, settings, embedder=args.embedder)
    llm = open_llm(settings) if args.strategy == "auto" else None
    retriever = Retriever(index, RetrievalConfig(), settings=settings, llm=llm)
    result = retriever.retrieve(args.query, exclude_ids=args.exclude, previous_queries=args.previous,
                                overrides=overrides)
    if args.json:
        print_json({"collection": args.collection, "embedder": index.embedder.id, **result.to_dict()})
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
