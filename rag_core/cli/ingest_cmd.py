"""``python -m rag_core ingest PATH... --collection NAME``: load files, store them, index them in one atomic commit."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rag_core.types import EMBEDDER_NAMES, Progress


def register(subparsers) -> None:
    parser = subparsers.add_parser("ingest", help="load files or folders and index them into a collection")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files or folders (searched recursively)")
    parser.add_argument("--collection", required=True, help="index (Chroma collection) name, created when missing")
    parser.add_argument("--embedder", choices=EMBEDDER_NAMES,
                        help="embedder (default: the collection's own, or minilm for a new collection)")
    parser.add_argument("--max-tokens", type=int, help="chunk max tokens (default: the collection's own, or 512)")
    parser.add_argument("--config", metavar="SAVED",
                        help="build with a saved configuration's chunking and embedder (see: config list); "
                             "--max-tokens and --embedder still override")
    parser.add_argument("--force", action="store_true", help="re-index documents that are already indexed")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text lines")
    parser.set_defaults(func=run)


def _chunking(max_tokens: int | None):
    from rag_core.config import ChunkingConfig

    if max_tokens is None:
        return None
    if max_tokens < 32:
        raise ValueError(f"--max-tokens must be at least 32 (got {max_tokens})")
    return ChunkingConfig(max_tokens=max_tokens, overlap=ChunkingConfig.default_overlap("structure", max_tokens))


def _stderr_progress() -> Progress:
    """A progress callback printing to stderr each time another tenth of the chunks is embedded."""
    printed = [-1]

    def progress(done: int, total: int, label: str = "") -> None:
        tenth = done * 10 // total if total else 10
        if tenth > printed[0]:
            printed[0] = tenth
            print(f"  embedded {done}/{total} chunks", file=sys.stderr, flush=True)

    return progress


def _report_error(row: dict) -> None:
    """One line on stderr for a file that could not be ingested, naming its path once."""
    message = str(row["error"])
    prefix = f"{row['name']}: "
    if message.startswith(prefix):
        message = message[len(prefix):]
    elif message.startswith(f"{row['path']}: "):
        message = message[len(row["path"]) + 2:]
    print(f"error: {row['path']}: {message}", file=sys.stderr, flush=True)


def _resolve(paths) -> tuple[list[dict], list[dict], list[tuple[dict, Path, str]]]:
    """``(files, skipped, named)``: a report row per file (an error row per missing path), the folder files not
    loaded with their reason, and each file to load with its row and document name (each file once)."""
    from rag_core.errors import LoadError
    from rag_core.loaders import iter_named_paths

    files: list[dict] = []
    skipped: list[dict] = []  # files found in a folder but not loaded, each with its reason
    named: list[tuple[dict, Path, str]] = []
    for raw in paths:
        try:
            found = iter_named_paths([raw])
            wanted = {p for p, _ in found}
            skipped += [{"path": str(p), "reason": f"skipped: unsupported type ({p.suffix or 'no extension'})"}
                        for p, _ in iter_named_paths([raw], supported_only=False) if p not in wanted]
        except LoadError as e:
            files.append({"path": str(raw), "name": Path(raw).name, "status": "error", "doc_id": None, "chunks": {},
                          "error": str(e)})
            continue
        seen = {str(p.resolve()) for _, p, _ in named}
        for path, doc_name in found:
            if str(path.resolve()) in seen:
                continue
            row = {"path": str(path), "name": doc_name, "status": "error", "doc_id": None, "chunks": {},
                   "error": None}
            files.append(row)
            named.append((row, path, doc_name))
    return files, skipped, named


def run(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.config import get_settings
    from rag_core.errors import LoadError, RagError
    from rag_core.loaders import load_path
    from rag_core.loaders.document_store import DocumentStore
    from rag_core.services import open_collection

    started = time.perf_counter()
    settings = get_settings()
    chunking = _chunking(args.max_tokens)
    embedder = args.embedder
    if getattr(args, "config", None):
        from rag_core.cli.config_cmd import saved_config

        saved = saved_config(args.config)
        chunking = saved.chunking if chunking is None else saved.chunking.model_validate(
            {**saved.chunking.model_dump(), "max_tokens": chunking.max_tokens,
             "overlap": saved.chunking.fitted_overlap(chunking.max_tokens, saved.chunking.overlap)})
        embedder = embedder or saved.embedding.embedder

    # Resolve the paths before opening (and so creating) the collection: a run that has nothing to ingest must
    # not leave an empty collection pinned to an embedder behind. A missing path is reported, the others go on.
    files, skipped, named = _resolve(args.paths)
    if not named:  # nothing to ingest at all: one error per path, no collection created
        raise LoadError("; ".join(row["error"].rstrip(".") for row in files) or "no files to ingest")
    for row in files:
        if row["error"]:
            _report_error(row)

    index = open_collection(args.collection, settings, embedder=embedder, chunking=chunking, create=True)
    docs = []
    store = DocumentStore(settings.data_dir)
    for row, path, doc_name in named:
        try:
            doc = load_path(path, name=doc_name)
            doc, _ = store.add(doc)
        except (RagError, ValueError, OSError) as e:
            row["error"] = str(e)
            _report_error(row)
            continue
        row["doc_id"] = doc.id
        docs.append(doc)

    report = index.ingest(docs, progress=None if args.json else _stderr_progress(), force=args.force)
    by_id = {entry["doc_id"]: entry for entry in index.documents()}
    names_failed = report.errors
    for row in files:
        if row["doc_id"] is None:
            continue
        entry = by_id.get(row["doc_id"])
        name = row["name"]
        if row["doc_id"] in report.unchanged:
            row["status"] = "unchanged"
        elif entry is not None:
            row["status"] = "indexed"
        else:
            row["error"] = names_failed.get(name) or names_failed.get(row["path"]) or "not indexed"
        row["chunks"] = (entry or {}).get("chunks", {})
        if row["status"] == "error":
            _report_error(row)
        elif not args.json:
            counts = ", ".join(f"{n} {g}" for g, n in row["chunks"].items())
            print(f"{row['status']:<8} {row['path']}  ({counts})", flush=True)

    seconds = time.perf_counter() - started
    errors = sum(1 for row in files if row["status"] == "error")
    totals = {
        "files": len(files), "indexed": sum(1 for r in files if r["status"] == "indexed"),
        "unchanged": len(report.unchanged), "errors": errors, "chunks": report.chunks,
        "chunks_in_collection": index.count(), "seconds": round(seconds, 2),
        "chunks_per_s": round(sum(report.chunks.values()) / seconds, 1) if seconds else 0.0,
    }
    if args.json:
        print_json({"collection": args.collection, "embedder": index.embedder.id, "files": files, "totals": totals,
                    "skipped": skipped})
    else:
        chunks = ", ".join(f"{n} {g}" for g, n in report.chunks.items()) or "no new chunks"
        print(f"{args.collection}: {totals['indexed']} indexed, {totals['unchanged']} unchanged, {errors} failed; "
              f"{chunks}; {totals['seconds']} s ({totals['chunks_per_s']} chunks/s)")
    return 1 if errors else 0
