"""Ingest speed: source KB per CPU-second of the ingest process, into a fresh data folder (no embedding cache).

``python -m bench ingest [--corpus pydantic|fastapi] [--embedder minilm|hash] [--baseline CHECKOUT]``

Loads every Markdown file of the corpus under ``../shared/corpora``, ingests them with the default configuration
into a new temporary data folder and reports wall time, CPU time (``resource.getrusage``, this process and its
threads), KB of source per CPU-second, chunks indexed and texts embedded. ``--baseline`` runs the same ingest a
second time in a subprocess whose ``rag_core`` is imported from another checkout (e.g. a ``git worktree`` of an
earlier commit), so both figures come from the same run on the same machine. Writes ``bench/results/ingest.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    from bench.results_file import publish
except ImportError:  # run as a script from a baseline checkout (see --baseline)
    publish = None

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
CORPORA = {"pydantic": SHARED / "corpora" / "pydantic_docs", "fastapi": SHARED / "corpora" / "fastapi_docs"}


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(corpus: str, embedder: str) -> dict:
    """Ingest ``corpus`` into a fresh data folder in this process; the figures as a dict."""
    with tempfile.TemporaryDirectory(prefix="rag-ingest-bench-") as data_dir:
        os.environ["RAG_DATA_DIR"] = data_dir
        os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
        from rag_core.config import RAGConfig, get_settings
        from rag_core.loaders import load_path
        from rag_core.services import open_index

        root = CORPORA[corpus]
        paths = sorted(root.rglob("*.md"))
        docs = [load_path(p, name=str(p.relative_to(root))) for p in paths]
        size = sum(len(d.text.encode("utf-8")) for d in docs)
        config = RAGConfig(embedding={"embedder": embedder})
        index = open_index(config, get_settings())
        texts = [0]
        inner = index.embedder.embed_documents

        def counting(batch, progress=None):
            texts[0] += len(batch)
            return inner(batch, progress)

        index.embedder.embed_documents = counting
        cpu, wall = _cpu_seconds(), time.perf_counter()
        report = index.ingest(docs)
        cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
        chunks = sum(report.chunks.values())
    return {"corpus": corpus, "files": len(docs), "kb": size / 1024, "chunks": chunks, "texts": texts[0],
            "wall_s": wall, "cpu_s": cpu, "kb_per_cpu_s": size / 1024 / cpu if cpu else 0.0,
            "errors": len(report.errors)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench ingest", description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="pydantic")
    parser.add_argument("--embedder", choices=("minilm", "hash"), default="minilm")
    parser.add_argument("--baseline", type=Path, help="a checkout whose rag_core is measured too, for comparison")
    parser.add_argument("--json", action="store_true", help="print this process's figures as JSON only")
    parser.add_argument("--no-publish", action="store_true")
    args = parser.parse_args(argv)
    if args.json:
        print(json.dumps(measure(args.corpus, args.embedder)))
        return 0
    rows = [("this checkout", measure(args.corpus, args.embedder))]
    if args.baseline:
        # This file run as a script from the baseline checkout, so that its rag_core is the one imported.
        baseline = args.baseline.resolve()
        env = {**os.environ, "PYTHONPATH": str(baseline)}
        out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--json", "--corpus", args.corpus,
                              "--embedder", args.embedder], env=env, cwd=baseline, capture_output=True, text=True,
                             check=True)
        rows.append((f"baseline ({args.baseline.name})", json.loads(out.stdout.strip().splitlines()[-1])))
    lines = [f"Ingest of the {args.corpus} docs (`../shared/corpora`) into a fresh data folder, no embedding cache, "
             f"embedder {args.embedder}, 2 cores, load average {os.getloadavg()[0]:.1f}. Command: `python -m bench "
             f"ingest --corpus {args.corpus}{' --baseline ' + str(args.baseline) if args.baseline else ''}`.", "",
             "| rag_core | files | source KB | chunks | texts embedded | wall s | CPU s | KB per CPU-s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, r in rows:
        lines.append(f"| {label} | {r['files']} | {r['kb']:.0f} | {r['chunks']} | {r['texts']} | {r['wall_s']:.1f} "
                     f"| {r['cpu_s']:.1f} | {r['kb_per_cpu_s']:.2f} |")
    if len(rows) == 2 and rows[1][1]["kb_per_cpu_s"]:
        lines += ["", f"KB per CPU-second: **{rows[0][1]['kb_per_cpu_s'] / rows[1][1]['kb_per_cpu_s']:.2f}×** the "
                      "baseline."]
    text = "\n".join(lines)
    print(text)
    if not args.no_publish:
        publish("ingest", "# Ingest speed\n\n" + text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
