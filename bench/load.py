"""Bounded load test on loopback: N client threads issuing hybrid searches against a Chroma server (and embedded).

``python -m bench.load [--docs 2000] [--queries 1000] [--clients 1,4,8] [--embedder hash|minilm]``.
A ``chroma run`` server is started on a free loopback port; SciFact abstracts (one chunk each) are indexed
into it and, for comparison in the same run, into embedded Chroma. Each query is one hybrid search as the
Retrieval Lab runs it: query embedding + Chroma vector top-k + BM25 top-k + RRF fusion. Reported: QPS,
latency p50/p95/p99 and resident memory (client process, and the server's process group) before and after
each run of ``--queries`` queries. Also: BM25 rebuild time for ``--bm25-chunks`` chunks (bm25s has no
incremental add). Two-instance row: two more app processes, each with its own data folder, open the server's
index and serve the same load at the same time (``RAG_SYNC_S`` checks included); then one instance ingests a
document while the other keeps searching, and the delay until the other finds it is measured.
Writes ``bench/results/load.md``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from bench.load_ingest import searches_during_ingest
from bench.load_ingest import table as during_ingest_table
from bench.results_file import publish

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO / ".." / "shared" / "datasets" / "scifact"


def rss_mb(pid: int | None = None) -> float:
    """Resident memory of a process in MB (from /proc)."""
    path = f"/proc/{pid or 'self'}/status"
    with open(path) as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def group_rss_mb(pgid: int) -> float:
    """Resident memory of every process in process group ``pgid`` (the server and anything it spawned)."""
    total = 0.0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += rss_mb(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return total


def load_scifact(n_docs: int):
    """The first ``n_docs`` SciFact abstracts as (Document, Chunk) pairs, and the test queries."""
    from rag_core.tokens import count_tokens
    from rag_core.types import Chunk, Document

    docs, chunks = [], []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as handle:
        for line in handle:
            if len(docs) >= n_docs:
                break
            row = json.loads(line)
            text = f"{row.get('title', '')}\n{row['text']}".strip()
            doc = Document(f"sf{row['_id']}", f"scifact-{row['_id']}", "text", len(text), "", text)
            docs.append(doc)
            chunks.append(Chunk(f"sf{row['_id']}-0", doc.id, "paragraph", "prose", text, 0, len(text),
                                count_tokens(text), heading_path=[row.get("title", "")[:80]]))
    with open(SCIFACT / "queries.jsonl", encoding="utf-8") as handle:
        queries = [json.loads(line)["text"] for line in handle]
    return docs, chunks, queries


def hybrid_search(index, query: str, k: int, filters) -> list:
    from rag_core.config import DEFAULT_RRF_K
    from rag_core.retrieval.fusion import rrf_fuse

    vector = [(c.id, s) for c, s in index.vector_search(query, k, filters)]
    keyword = [(c.id, s) for c, s in index.keyword_search(query, k, filters)]
    return rrf_fuse({"vector": vector, "keyword": keyword}, k=DEFAULT_RRF_K)[:k]


def run_load(index, queries: list[str], total: int, clients: int, k: int, server_pgid: int | None) -> dict:
    from rag_core.index import Filters

    filters = Filters(granularity=["paragraph"])
    for query in queries[:20]:  # warm-up: caches, connections, lazy imports
        hybrid_search(index, query, k, filters)
    before = rss_mb(), group_rss_mb(server_pgid) if server_pgid else 0.0
    latencies = np.zeros(total, dtype=np.float64)
    counter = iter(range(total))
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                position = next(counter, None)
            if position is None:
                return
            started = time.perf_counter()
            hybrid_search(index, queries[position % len(queries)], k, filters)
            latencies[position] = (time.perf_counter() - started) * 1000

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        for future in [pool.submit(worker) for _ in range(clients)]:
            future.result()
    wall = time.perf_counter() - started
    after = rss_mb(), group_rss_mb(server_pgid) if server_pgid else 0.0
    return {
        "clients": clients, "queries": total, "qps": total / wall,
        "p50": float(np.percentile(latencies, 50)), "p95": float(np.percentile(latencies, 95)),
        "p99": float(np.percentile(latencies, 99)),
        "client_rss": before[0], "client_rss_after": after[0], "server_rss": before[1], "server_rss_after": after[1],
    }


def build_index(name: str, settings, embedder, docs, chunks) -> tuple[object, float]:
    from rag_core.index import Index

    index = Index.open(name, settings, embedder, None)
    started = time.perf_counter()
    index.add_chunks(docs, chunks)
    return index, len(chunks) / (time.perf_counter() - started)


def bm25_rebuild_seconds(chunks, target: int) -> float:
    """Seconds to build the keyword index over ``target`` chunks (the SciFact abstracts cut into sentences)."""
    import re

    from rag_core.stores.keyword import KeywordIndex
    from rag_core.types import Chunk

    sentences = [s for c in chunks for s in re.split(r"(?<=[.!?])\s+", c.text) if len(s) > 20]
    if not sentences:
        return float("nan")
    many = {}
    for position in range(target):
        text = sentences[position % len(sentences)]
        many[f"s{position}"] = Chunk(f"s{position}", f"d{position // 10}", "paragraph", "prose", text, 0, len(text), 0)
    started = time.perf_counter()
    KeywordIndex.build(many)
    return time.perf_counter() - started


def _instance_settings(data_dir: str, host: str, port: int):
    from rag_core.config import Settings

    return Settings(data_dir=Path(data_dir), chroma_host=host, chroma_port=port)


def serve_instance(argv: list[str]) -> int:
    """``instance DATA_DIR HOST PORT COLLECTION EMBEDDER QUERIES CLIENTS K START_AT``: one app instance (this
    process) opens the shared index, warms up, waits for START_AT (wall clock) and serves the load; prints JSON."""
    from rag_core.embeddings import get_embedder
    from rag_core.index import Index

    data_dir, host, port, collection, embedder_name, total, clients, k, start_at = argv
    settings = _instance_settings(data_dir, host, int(port))
    embedder = get_embedder(embedder_name, settings, cache_dir=Path(data_dir) / "cache")
    index = Index.open(collection, settings, embedder, None)
    _, _, queries = load_scifact(0)
    for query in queries[:20]:
        index.keyword_search(query, 1)
    time.sleep(max(0.0, float(start_at) - time.time()))
    print(json.dumps(run_load(index, queries, int(total), int(clients), int(k), None)), flush=True)
    return 0


def watch_instance(argv: list[str]) -> int:
    """``watch DATA_DIR HOST PORT COLLECTION EMBEDDER WORD``: a serving instance that searches for WORD every
    20 ms and prints (wall clock) when it first finds it."""
    from rag_core.embeddings import get_embedder
    from rag_core.index import Index

    data_dir, host, port, collection, embedder_name, word = argv
    settings = _instance_settings(data_dir, host, int(port))
    index = Index.open(collection, settings, get_embedder(embedder_name, settings), None)
    print(json.dumps({"ready": time.time()}), flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if index.keyword_search(word, 1):
            print(json.dumps({"seen": time.time()}), flush=True)
            return 0
        time.sleep(0.02)
    print(json.dumps({"seen": None}), flush=True)
    return 1


def _instance(*args) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "bench.load", *map(str, args)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, text=True)


def two_instances(tmp: Path, server, collection: str, embedder_name: str, total: int, clients: int, k: int,
                  writer) -> tuple[dict, float]:
    """Two instance processes serving ``total`` queries each at once; then the refresh delay after an ingest
    through ``writer`` (a third instance, this process) seen by a serving instance."""
    start_at = time.time() + 20  # both open, pull the cache and warm up before the clock starts
    serving = [_instance("instance", tmp / f"instance-{n}", server.host, server.port, collection, embedder_name,
                         total, clients, k, start_at) for n in ("a", "b")]
    results = [json.loads(process.communicate(timeout=600)[0].strip().splitlines()[-1]) for process in serving]
    row = {"mode": "server, 2 instances", "clients": clients, "queries": 2 * total,
           "qps": sum(r["qps"] for r in results), **{p: max(r[p] for r in results) for p in ("p50", "p95", "p99")},
           "client_rss": sum(r["client_rss"] for r in results),
           "client_rss_after": sum(r["client_rss_after"] for r in results), "server_rss": 0.0,
           "server_rss_after": 0.0}
    from rag_core.types import Document

    watcher = _instance("watch", tmp / "instance-a", server.host, server.port, collection, embedder_name,
                        "quokkafresh")
    assert "ready" in watcher.stdout.readline()
    text = "Quokkafresh marsupials were counted on the island."
    writer.ingest([Document("refresh0000000001", "refresh.md", "text", len(text), "", text)])
    committed = time.time()
    seen = json.loads(watcher.communicate(timeout=180)[0].strip().splitlines()[-1])["seen"]
    return row, (seen - committed) if seen else float("nan")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "instance":
        return serve_instance(argv[1:])
    if argv and argv[0] == "watch":
        return watch_instance(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=2000, help="SciFact abstracts to index (default 2000)")
    parser.add_argument("--queries", type=int, default=1000, help="queries per run (default 1000)")
    parser.add_argument("--clients", default="1,4,8", help="comma-separated client thread counts (default 1,4,8)")
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="hash")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--bm25-chunks", type=int, default=100_000, help="chunks for the BM25 rebuild timing")
    parser.add_argument("--ingest-files", type=int, default=300,
                        help="files ingested while 8 clients search (the 'searches during an ingest' row)")
    parser.add_argument("--only-during-ingest", action="store_true",
                        help="run only the 'searches during an ingest' row (writes bench/results/load_ingest.md)")
    args = parser.parse_args(argv)
    if args.only_during_ingest:
        return _during_ingest_only(args)
    clients = [int(c) for c in args.clients.split(",") if c.strip()]
    if not (SCIFACT / "corpus.jsonl").exists():
        print(f"SciFact not found at {SCIFACT}; nothing to measure")
        return 1

    from rag_core.config import Settings
    from rag_core.embeddings import get_embedder
    from rag_core.stores.chroma.server import ChromaServer

    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    docs, chunks, queries = load_scifact(args.docs)
    rows, ingest = [], {}
    with tempfile.TemporaryDirectory(prefix="rag-load-") as tmp:
        embedder = get_embedder(args.embedder, Settings(data_dir=Path(tmp) / "x"), cache_dir=Path(tmp) / "cache")
        with ChromaServer(Path(tmp) / "server-db") as server:
            settings = Settings(data_dir=Path(tmp) / "server", chroma_host=server.host, chroma_port=server.port)
            index, ingest["server"] = build_index("load-server", settings, embedder, docs, chunks)
            for n in clients:
                rows.append({"mode": "server", **run_load(index, queries, args.queries, n, args.k, server.process.pid)})
                print(rows[-1], flush=True)
            # The same load again: memory should plateau once connection pools and caches are warm.
            rows.append({"mode": "server (repeat)",
                         **run_load(index, queries, args.queries, max(clients), args.k, server.process.pid)})
            print(rows[-1], flush=True)
            two, refresh_s = two_instances(Path(tmp), server, "load-server", args.embedder, args.queries,
                                           max(clients), args.k, index)
            rows.append(two)
            print(rows[-1], f"refresh delay {refresh_s:.2f} s", flush=True)
            # And once more under tracemalloc (not timed): Python-heap growth would be a leak in our code.
            tracemalloc.start()
            run_load(index, queries, args.queries, max(clients), args.k, None)
            gc.collect()
            python_growth_kb = tracemalloc.get_traced_memory()[0] / 1024
            tracemalloc.stop()
        embedded = Settings(data_dir=Path(tmp) / "embedded")
        index, ingest["embedded"] = build_index("load-embedded", embedded, embedder, docs, chunks)
        for n in clients:
            rows.append({"mode": "embedded", **run_load(index, queries, args.queries, n, args.k, None)})
            print(rows[-1], flush=True)
        during_ingest = searches_during_ingest(Path(tmp) / "during-ingest", args.embedder, max(clients),
                                               args.ingest_files)
    bm25_s = bm25_rebuild_seconds(chunks, args.bm25_chunks)

    qps = {(r["mode"], r["clients"]): r["qps"] for r in rows}
    lines = [
        f"Hybrid search load test · {len(docs)} SciFact abstracts · embedder {embedder.id} · k={args.k} · "
        f"{args.queries} queries per run · {os.cpu_count()} CPU cores (shared)",
        "",
        "| mode | clients | QPS | p50 ms | p95 ms | p99 ms | client RSS MB before → after | "
        "server RSS MB before → after | QPS vs embedded |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |",
    ]
    for r in rows:
        on_server = r["mode"].startswith("server")
        server_mem = f"{r['server_rss']:.0f} → {r['server_rss_after']:.0f}" if on_server else "—"
        ratio = r["qps"] / qps[("embedded", r["clients"])] if ("embedded", r["clients"]) in qps else float("nan")
        if r["mode"] == "server, 2 instances":
            server_mem = "—"
        lines.append(
            f"| {r['mode']} | {r['clients']} | {r['qps']:.0f} | {r['p50']:.1f} | {r['p95']:.1f} | {r['p99']:.1f} "
            f"| {r['client_rss']:.0f} → {r['client_rss_after']:.0f} | {server_mem} | {ratio:.2f}× |"
        )
    lines += [
        "",
        f"Ingest (add_chunks, embedding included): server {ingest['server']:.0f} chunks/s, "
        f"embedded {ingest['embedded']:.0f} chunks/s.",
        f"BM25 rebuild (bm25s, stemmed, stop words) over {args.bm25_chunks:,} sentence chunks: {bm25_s:.1f} s.",
        f"Two instances (\"server, 2 instances\"): two more processes, each with its own data folder, open the "
        f"server's index (their caches pulled from it) and serve {args.queries} queries each at the same time, "
        f"{max(clients)} client threads apiece; QPS is their sum, latencies the worse of the two, client RSS the sum. "
        f"Refresh delay: one instance ingested a document and another, searching every 20 ms, found it "
        f"{refresh_s:.2f} s after the ingest returned (RAG_SYNC_S={Settings().sync_s:g}).",
        f"Python heap still held after a third run of {args.queries} queries at {max(clients)} clients "
        f"(tracemalloc, gc'd): {python_growth_kb:.0f} KB. The client RSS growth is native and comes with new "
        "client threads: the embedding cache opens one SQLite connection per thread (with one long-lived "
        "thread, or with the cache off, RSS stays flat over 4,000+ queries).",
        f"Machine load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores "
        "(other jobs share them, so absolute figures are pessimistic; the ratios compare like with like).",
    ]
    lines += ["", during_ingest_table(during_ingest)]
    table = "\n".join(lines)
    print(table)
    publish("load", table)
    return 0


def _during_ingest_only(args) -> int:
    """Only the row of searches during an ingest (``--only-during-ingest``)."""
    clients = max(int(c) for c in args.clients.split(",") if c.strip())
    with tempfile.TemporaryDirectory(prefix="rag-load-ingest-") as tmp:
        row = searches_during_ingest(Path(tmp), args.embedder, clients, args.ingest_files)
    text = during_ingest_table(row) + (f"\n\nMachine load average while measuring: {os.getloadavg()[0]:.1f} on "
                                       f"{os.cpu_count()} cores (shared).")
    print(text)
    publish("load_ingest", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
