"""``python -m rag_core chunk FILE...`` and ``python -m rag_core lint PATH...``: chunk files, or lint their chunks.

``chunk --json`` prints one JSON object per chunk (JSON Lines); ``lint --json`` prints one object with the
violation counts per kind and the total. A file that cannot be loaded is reported on stderr (one line) and
the others are still processed; the exit code is then 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_core.chunking.strategies import STRATEGIES
from rag_core.types import GRANULARITIES

GRANULARITY_CHOICES = (*GRANULARITIES, "all")
CHUNK_FIELDS = ("id", "doc_id", "granularity", "chunk_type", "language", "start", "end", "tokens", "heading_path",
                "parent_id", "child_ids", "verbatim", "text")
MAX_LISTED = 20  # violations listed in the human-readable lint output
EXTRA_FIELDS = ("oversized", "continued", "position", "contains_types", "metadata")


def _common(parser: argparse.ArgumentParser) -> None:
    described = " or ".join(row.description for row in STRATEGIES.values())
    parser.add_argument("--strategy", choices=tuple(STRATEGIES), default="structure",
                        help=f"{described} (default: structure)")
    parser.add_argument("--max-tokens", type=int, default=512, help="maximum cl100k tokens per chunk (default 512)")
    parser.add_argument("--overlap", type=int, default=None,
                        help="token overlap: split prose (structure, default 32) or windows (fixed, default 50); "
                             "without it, at most a quarter of --max-tokens (as ingest)")
    parser.add_argument("--granularity", choices=GRANULARITY_CHOICES, default="all", help="granularity to output")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def register(subparsers) -> None:
    chunk = subparsers.add_parser("chunk", help="chunk files and print the chunks")
    chunk.add_argument("files", nargs="+", metavar="FILE", help="files to chunk")
    _common(chunk)
    chunk.set_defaults(func=run_chunk)

    lint = subparsers.add_parser("lint", help="structure-integrity lint of the chunks of files or folders")
    lint.add_argument("paths", nargs="+", metavar="PATH", help="files, or folders searched recursively")
    _common(lint)
    lint.add_argument("--strict", action="store_true", help="exit 1 when there is any violation")
    lint.set_defaults(func=run_lint)


def _config(args: argparse.Namespace):
    from pydantic import ValidationError

    from rag_core.config import ChunkingConfig
    from rag_core.errors import field_problems, stated_problem

    overlap = args.overlap
    if overlap is None:  # the default must fit below a small --max-tokens (the config refuses overlap >= max)
        overlap = ChunkingConfig.default_overlap(args.strategy, args.max_tokens)
    try:
        return ChunkingConfig(strategy=args.strategy, max_tokens=args.max_tokens, overlap=overlap)
    except ValidationError as e:
        problems = field_problems(e, unnamed="config", problem=stated_problem)
        raise ValueError(f"invalid chunking options: {problems} (max tokens 32–8192, overlap below max tokens)") from e


def _load(paths: list[str], recursive: bool):
    """Documents of ``paths`` plus the number of files that failed (each reported on stderr)."""
    from rag_core.errors import LoadError
    from rag_core.loaders import iter_paths, load_path

    docs, failed = [], 0
    files: list = []
    if recursive:
        for raw in paths:  # one missing path is reported; the others are still linted
            try:
                found = iter_paths([raw])
            except LoadError as e:
                print(f"error: {e}", file=sys.stderr)
                failed += 1
                continue
            seen = {Path(f).resolve() for f in files}
            files.extend(f for f in found if Path(f).resolve() not in seen)  # a file named twice is linted once
    else:
        files = list(paths)
    for path in files:
        try:
            docs.append((str(path), load_path(path)))
        except (LoadError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
    return docs, failed


def run_chunk(args: argparse.Namespace) -> int:
    from rag_core.chunking import chunk_document
    from rag_core.cli import print_json

    config = _config(args)
    docs, failed = _load(args.files, recursive=False)
    for path, doc in docs:
        chunks = chunk_document(doc, config, args.granularity)
        for chunk in chunks:
            data = chunk.to_dict()
            if args.json:
                print_json({**{k: data[k] for k in CHUNK_FIELDS}, "source": doc.name,
                            **{k: data[k] for k in EXTRA_FIELDS}})
            else:
                flags = "".join(f for f, on in (("O", chunk.oversized), ("+", chunk.continued),
                                                ("~", not chunk.verbatim)) if on)
                print(f"{path}\t{chunk.granularity:<9} {chunk.chunk_type:<7} {chunk.start:>7}-{chunk.end:<7} "
                      f"{chunk.tokens:>5} tok {flags:<3} {chunk.heading or '(top)'}")
    return 2 if failed else 0


def run_lint(args: argparse.Namespace) -> int:
    from rag_core.chunking import LINT_KINDS, chunk_document, lint
    from rag_core.cli import print_json

    config = _config(args)
    docs, failed = _load(args.paths, recursive=True)
    counts = dict.fromkeys((*LINT_KINDS, "oversized_atomic"), 0)
    per_file = []
    chunk_total = 0
    for path, doc in docs:
        chunks = chunk_document(doc, config, args.granularity)
        report = lint(doc, chunks, max_tokens=config.max_tokens)
        chunk_total += len(chunks)
        for kind, n in report.counts.items():
            counts[kind] = counts.get(kind, 0) + n
        if report.total or report.oversized:
            per_file.append({"file": path, "chunks": len(chunks), "total": report.total,
                             "counts": {k: n for k, n in report.counts.items() if n},
                             "violations": [_violation(v) for v in report.violations],
                             "oversized": [_violation(v) for v in report.oversized]})
    total = sum(n for kind, n in counts.items() if kind != "oversized_atomic")
    summary = {"files": len(docs), "failed": failed, "chunks": chunk_total, "strategy": config.strategy,
               "max_tokens": config.max_tokens, "counts": counts, "total": total, "files_with_findings": per_file}
    if args.json:
        print_json(summary)
    else:
        print(f"{len(docs)} file(s), {chunk_total} chunks, strategy {config.strategy}, max {config.max_tokens} tokens")
        for kind, n in counts.items():
            print(f"  {kind:<28} {n}")
        print(f"  {'total (violations)':<28} {total}")
        findings = [(entry["file"], v) for entry in per_file for v in entry["violations"]]
        for file, v in findings[:MAX_LISTED]:
            print(f"{file}:{v['start']}-{v['end']}: {v['kind']}: {v['detail']}")
        if len(findings) > MAX_LISTED:
            print(f"… and {len(findings) - MAX_LISTED} more (use --json for all)")
    if failed:
        return 2
    return 1 if args.strict and total else 0


def _violation(v) -> dict:
    return {"kind": v.kind, "chunk_id": v.chunk_id, "start": v.start, "end": v.end, "detail": v.detail}
