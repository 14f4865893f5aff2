"""MCP tool-call latency: ``search_documents`` over stdio and streamable HTTP against the same search in process.

``python -m bench mcp [--queries N] [--embedder hash|minilm] [--data-dir DIR]``. The FastAPI docs (155 Markdown
files, ``../shared/corpora/fastapi_docs``) are indexed once with the default configuration (and the embedder
named) in a bench data directory (``$RAG_BENCH_DIR/mcp-<embedder>``), made the active configuration, and served by
``python -m rag_core serve-mcp`` (the index serving the active configuration). Queries: the FastAPI docs QA
questions. In the same run, each query alone (``{"query": q}``):

* in-process search: ``Retriever.retrieve`` as the Retrieval Lab runs it (``services.open_retriever``);
* in-process tool: the server's own ``Backend.call`` (the search, the Layer-4 context, the call log), no transport;
* stdio: one SDK client per server subprocess (how desktop agents run it);
* HTTP: SDK streamable-HTTP clients against one ``serve-mcp --http`` server (``--max-calls 8``).

With 1 client every query runs in turn; with 8, the queries are dealt round-robin to 8 clients (8 threads in
process, 8 stdio servers, 8 HTTP sessions on one server) running at once. Reported: p50 / p95 per path and the
overhead ratio of each MCP path's p50 to the in-process search's at the same concurrency (target: stdio ≤ 2x with
1 client). Every query is searched once before timing, so its embedding is in the persistent embedding cache for
every path alike: the figures are search + transport, without the model's forward pass. Writes
``bench/results/mcp.md``.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.results_file import publish

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
DEFAULT_DATA_DIR = Path(os.environ.get("RAG_BENCH_DIR", "/tmp/rag_bench"))
WARMUP = 3
CLIENTS = (1, 8)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def questions(limit: int) -> list[str]:
    import json

    lines = (SHARED / "datasets" / "fastapi_docs_qa" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines if line.strip()][:limit]


def prepare(data_dir: Path, embedder: str):
    """The FastAPI docs indexed with the default configuration, made active; returns the settings and config."""
    from rag_core.config import EmbeddingConfig, RAGConfig, Settings
    from rag_core.loaders import load_path
    from rag_core.services import open_index
    from rag_core.serving.activestate import activate

    data_dir.mkdir(parents=True, exist_ok=True)
    settings = Settings(data_dir=data_dir)
    config = RAGConfig(name="bench-mcp", embedding=EmbeddingConfig(embedder=embedder))
    index = open_index(config, settings)
    if not index.documents():
        root = SHARED / "corpora" / "fastapi_docs" / "docs" / "en" / "docs"
        docs = [load_path(p, name=str(p.relative_to(root))) for p in sorted(root.rglob("*.md"))]
        tick = time.perf_counter()
        index.ingest(docs)
        print(f"  indexed {len(docs)} FastAPI docs in {time.perf_counter() - tick:.0f} s", flush=True)
    activate(settings, config)
    return settings, config


def dealt(queries: list[str], clients: int) -> list[list[str]]:
    return [queries[i::clients] for i in range(clients)]


def timed_threads(call, queries: list[str], clients: int) -> list[float]:
    """Milliseconds per call, ``clients`` threads each running its share of ``queries`` in turn."""
    def run(share: list[str]) -> list[float]:
        out = []
        for query in share:
            tick = time.perf_counter()
            call(query)
            out.append((time.perf_counter() - tick) * 1000)
        return out

    with ThreadPoolExecutor(clients) as pool:
        return [ms for part in pool.map(run, dealt(queries, clients)) for ms in part]


async def _client_calls(connect, share: list[str], warm: list[str]) -> list[float]:
    from mcp.client.session import ClientSession

    out = []
    async with connect() as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        for query in warm:
            await session.call_tool("search_documents", {"query": query})
        for query in share:
            tick = time.perf_counter()
            result = await session.call_tool("search_documents", {"query": query})
            out.append((time.perf_counter() - tick) * 1000)
            if result.is_error:
                raise RuntimeError(f"search_documents failed: {result.content[0].text}")
    return out


def timed_mcp(connect, queries: list[str], clients: int) -> list[float]:
    """Milliseconds per ``search_documents`` call, ``clients`` SDK sessions at once (each warmed up first)."""
    import anyio

    results: list[list[float]] = []

    async def main() -> None:
        async def one(share):
            results.append(await _client_calls(connect, share, queries[:WARMUP]))

        async with anyio.create_task_group() as group:
            for share in dealt(queries, clients):
                group.start_soon(one, share)

    anyio.run(main)
    return [ms for part in results for ms in part]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http(env: dict) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "serve-mcp", "--http", "--port", str(port),
                             "--max-calls", "8"], env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the MCP HTTP server did not start within 120 s")


def measure(settings, config, queries: list[str]) -> dict[tuple[str, int], list[float]]:
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client

    from rag_core.mcp_server.handover import server_env
    from rag_core.mcp_server.server import Backend
    from rag_core.services import open_retriever, open_serving_index

    os.environ["RAG_DATA_DIR"] = str(settings.data_dir)  # the in-process Backend reads the same settings
    index = open_serving_index(settings)
    retriever = open_retriever(index, config.retrieval, settings)
    backend = Backend()
    # Every query once first: its embedding lands in the persistent embedding cache that every path (and every
    # server process) reads, so no path pays the model's forward pass and another does not (the order would decide).
    for query in queries:
        retriever.retrieve(query)
    for query in queries[:WARMUP]:
        backend.call("search_documents", {"query": query}, "bench")
    env = {**os.environ, **server_env(settings.data_dir)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag_core", "serve-mcp"], env=env)
    times: dict[tuple[str, int], list[float]] = {}
    proc, url = start_http(env)
    try:
        for clients in CLIENTS:
            times["in-process search", clients] = timed_threads(retriever.retrieve, queries, clients)
            times["in-process tool", clients] = timed_threads(
                lambda q: backend.call("search_documents", {"query": q}, "bench"), queries, clients)
            times["stdio", clients] = timed_mcp(lambda: stdio_client(params), queries, clients)
            times["HTTP", clients] = timed_mcp(lambda: streamable_http_client(url), queries, clients)
            print(f"  {clients} client(s) done", flush=True)
    finally:
        proc.terminate()
        proc.wait(10)
    return times


def report(times: dict[tuple[str, int], list[float]], embedder: str, queries: int) -> str:
    lines = [f"# MCP tool-call latency (`python -m bench mcp --queries {queries} --embedder {embedder}`)", "",
             f"FastAPI docs (155 files), default configuration, {embedder} embedder; {queries} FastAPI QA questions, "
             "each a `search_documents` call with the query alone (equal to the Retrieval Lab's search), query "
             "embeddings cached for every path alike. Ratio: "
             "p50 over the in-process search's p50 at the same concurrency. Machine: 2 shared cores "
             f"(load average {os.getloadavg()[0]:.1f} at the end of the run).", "",
             "| path | clients | calls | p50 ms | p95 ms | mean ms | p50 ratio |", "|---|---|---|---|---|---|---|"]
    for (path, clients), values in times.items():
        base = statistics.median(times["in-process search", clients])
        lines.append(f"| {path} | {clients} | {len(values)} | {statistics.median(values):.1f} | "
                     f"{pct(values, 95):.1f} | {statistics.mean(values):.1f} | "
                     f"{statistics.median(values) / base:.2f}x |")
    stdio = statistics.median(times["stdio", 1]) / statistics.median(times["in-process search", 1])
    lines += ["", f"Target: stdio p50 ≤ 2x the in-process search with 1 client: **{stdio:.2f}x** "
                  f"({'met' if stdio <= 2 else 'not met'})."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench mcp", description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=40, help="FastAPI QA questions timed (default 40)")
    parser.add_argument("--embedder", choices=("hash", "minilm"), default="minilm")
    parser.add_argument("--data-dir", type=Path, default=None, help="default: $RAG_BENCH_DIR/mcp-<embedder>")
    args = parser.parse_args(argv)
    if args.queries < 8:
        parser.error("--queries must be at least 8 (8 clients share them)")
    settings, config = prepare(args.data_dir or DEFAULT_DATA_DIR / f"mcp-{args.embedder}", args.embedder)
    queries = questions(args.queries)
    text = report(measure(settings, config, queries), args.embedder, len(queries))
    print(text)
    print(f"\nwrote {publish('mcp', text)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
