"""``python -m rag_core eval beir|questions|draft``: score retrieval on a BEIR folder or on a question file; draft a
question set from a collection's documents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_core.config import DEFAULT_RRF_K
from rag_core.types import EMBEDDER_NAMES, EVAL_STRATEGIES


def register(subparsers) -> None:
    parser = subparsers.add_parser("eval", help="evaluate retrieval on a BEIR folder or a question set")
    kinds = parser.add_subparsers(dest="eval_kind", required=True)

    beir = kinds.add_parser("beir", help="nDCG@10, Recall@10, Recall@100 and MRR@10 on a BEIR folder")
    beir.add_argument("dir", help="folder with corpus.jsonl, queries.jsonl and qrels/<split>.tsv")
    beir.add_argument("--retriever", choices=("bm25", "dense", "hybrid"), default="bm25")
    beir.add_argument("--k", type=int, default=10, help="cut-off for nDCG, Recall and MRR (Recall@100 is always given)")
    beir.add_argument("--split", default="test", help="qrels file name without .tsv (default test)")
    beir.add_argument("--embedder", choices=EMBEDDER_NAMES,
                      help="embedder of the index (default: hash for bm25, minilm otherwise)")
    beir.add_argument("--fusion", choices=("rrf", "weighted"), default="rrf", help="hybrid fusion (default rrf)")
    beir.add_argument("--rrf-k", type=int, default=DEFAULT_RRF_K,
                      help=f"RRF constant (default {DEFAULT_RRF_K}, the product default)")
    beir.add_argument("--weight", type=float, default=0.5, help="vector share in weighted fusion (default 0.5)")
    beir.add_argument("--json", action="store_true", help="print one JSON object")
    beir.set_defaults(func=_beir)

    questions = kinds.add_parser("questions", help="hit@k, recall@k, MRR, nDCG@10 on a CSV/JSONL question set")
    questions.add_argument("file", help="CSV or JSONL questions ('golden' for the built-in set)")
    questions.add_argument("--collection", required=True, help="collection (index) name holding the documents")
    questions.add_argument("--config", help="RAGConfig JSON file (default: built-in defaults with the collection's "
                                             "embedder and chunking)")
    questions.add_argument("--strategy", action="append", choices=EVAL_STRATEGIES,
                           help="strategy to evaluate; repeat for several (default: hybrid)")
    questions.add_argument("--per-question", action="store_true", help="include every question's record")
    questions.add_argument("--json", action="store_true", help="print one JSON object")
    questions.set_defaults(func=_questions)

    from rag_core.cli.draft_cmd import register_draft

    register_draft(kinds)


_last_report: list[tuple[str, int]] = []


def _progress(done: int, total: int, label: str = "") -> None:
    if total and (done == total or done % 500 == 0) and _last_report[-1:] != [(label, done)]:
        _last_report[:] = [(label, done)]
        print(f"{label} {done}/{total}", file=sys.stderr, flush=True)


def _beir(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.evaluation.beir import evaluate_beir
    from rag_core.evaluation.questions import load_beir
    from rag_core.services import open_index

    if args.k < 1:
        raise ValueError(f"--k must be ≥ 1 (got {args.k})")
    if not 0.0 <= args.weight <= 1.0:
        raise ValueError(f"--weight must be in [0, 1] (got {args.weight})")
    dataset = load_beir(Path(args.dir), split=args.split)
    report = evaluate_beir(dataset, args.retriever, k=args.k, embedder=args.embedder, fusion=args.fusion,
                           rrf_k=args.rrf_k, weight=args.weight, progress=_progress, open_index=open_index)
    if args.json:
        print_json(report.to_dict())
    else:
        print(f"{report.dataset} · {report.retriever} · {report.metrics['queries']} queries")
        for name, value in report.metrics.items():
            if name != "queries":
                print(f"  {name:<11} {value:.4f}")
        print(f"  latency p50 {report.latency_ms.get('p50', 0):.1f} ms, p95 {report.latency_ms.get('p95', 0):.1f} ms")
    return 0


def _questions(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.config import RAGConfig, get_settings
    from rag_core.evaluation.questions import load_golden, parse_upload
    from rag_core.evaluation.runner import run_evaluation
    from rag_core.services import collection_embedder, open_index, open_llm
    from rag_core.serving.configstore import parse_config
    from rag_core.stores.backends import check_index_name
    from rag_core.stores.sidestore import SideStore

    if args.file == "golden":
        question_set = load_golden()
    else:
        path = Path(args.file)
        if not path.is_file():
            raise ValueError(f"{path}: no such file")
        question_set = parse_upload(path.name, path.read_bytes())
    settings = get_settings()
    # Check the collection exists before anything opens it: opening creates, and would leave an empty
    # collection pinned to the configuration's embedder behind.
    check_index_name(args.collection, settings)
    manifest = SideStore(Path(settings.data_dir) / "indexes" / args.collection).read_manifest()
    if manifest is None:
        raise ValueError(f"no collection '{args.collection}' in {settings.data_dir}: it holds no documents; "
                         f"ingest some first (python -m rag_core ingest PATH --collection {args.collection})")
    if args.config:
        config_path = Path(args.config)
        if not config_path.is_file():
            raise ValueError(f"{config_path}: no such configuration file")
        config = parse_config(config_path.read_bytes(), source=config_path.name)
    else:  # built-in defaults, with the embedder and chunking the collection was built with
        embedder, dim = collection_embedder(manifest, None)
        config = RAGConfig(embedding={"embedder": embedder, "hash_dim": dim},
                           **({"chunking": manifest["chunking"]} if manifest.get("chunking") else {}))

    def index_factory(cfg):
        index = open_index(cfg, settings, collection=args.collection)
        if not index.documents():
            raise ValueError(f"collection '{args.collection}' holds no documents; ingest some first "
                             f"(python -m rag_core ingest PATH --collection {args.collection})")
        return index

    def progress(done: int, total: int, label: str = "") -> None:
        if total and (done == total or done % 20 == 0):
            print(f"{done}/{total} {label}", file=sys.stderr, flush=True)

    run = run_evaluation(question_set, [config], args.strategy or ["hybrid"], settings=settings,
                         index_factory=index_factory, progress=progress, llm=open_llm(settings))
    payload = {"question_set": question_set.name, "questions": len(question_set.questions),
               "collection": args.collection, "config": config.name, "status": run.status,
               "summary": run.summary, "by_intent": run.by_intent}
    if args.per_question:
        payload["records"] = [{k: v for k, v in r.items() if k != "trace"} for r in run.records]
    if args.json:
        print_json(payload)
    else:
        for row in run.summary:
            print(f"{row['strategy']:<8} hit@5 {row['hit@5']:.3f} recall@5 {row['recall@5']:.3f} "
                  f"MRR {row['mrr']:.3f} nDCG@10 {row['ndcg@10']:.3f} tokens {row['context_tokens']:.0f} "
                  f"p50 {row['latency_ms_p50']:.0f} ms")
    return 0
