"""Searches while an ingest runs (issue 39.10): ``clients`` threads, as the Retrieval Lab's sessions in one app
process, each run hybrid searches through the app's ``Retriever`` while the app's job runner ingests ``files``
shared-corpus documents into the same index; the same searches without the ingest for comparison.

Reported per phase: searches, completed within ``SETTLE_S``, p50 / p95 / max latency. One Streamlit process serves
every browser session from threads, so threads here stand for sessions (the page rendering is left out).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / ".." / "shared" / "corpora"
SETTLE_S = 180.0  # a search slower than this counts as never settled (the measure)
QUERIES = ["how do I declare a request body", "dependency injection with yield", "validate an email field",
           "background tasks after a response", "custom validators on a model", "path parameters with types",
           "settings from environment variables", "serialize a datetime to JSON", "OAuth2 password flow",
           "computed fields in a model"]


def corpus_documents(limit: int) -> list:
    """``limit`` Markdown files of the shared corpora (245), loaded as the app loads an upload; past the end they
    come again under ``copy<n>/`` names (new documents of the same text)."""
    from rag_core.loaders import load_path

    paths = sorted(CORPORA.glob("*/**/*.md"))
    return [load_path(path, name=(f"copy{i // len(paths)}/" if i >= len(paths) else "")
                      + str(path.relative_to(CORPORA)))
            for i, path in ((i, paths[i % len(paths)]) for i in range(limit))]


def _search_phase(index, settings, clients: int, until, per_client: int) -> dict:
    """``clients`` threads searching until ``until()`` is true (at least ``per_client`` searches each)."""
    from rag_core.config import RetrievalConfig
    from rag_core.retrieval.retriever import Retriever

    latencies: list[float] = []
    lock = threading.Lock()

    def client(offset: int) -> None:
        retriever = Retriever(index, RetrievalConfig(strategy="hybrid"), settings)
        done = 0
        while done < per_client or not until():
            started = time.perf_counter()
            retriever.retrieve(QUERIES[(offset + done) % len(QUERIES)])
            with lock:
                latencies.append(time.perf_counter() - started)
            done += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=SETTLE_S * 4)
    values = np.asarray(latencies or [float("nan")])
    return {"searches": len(latencies), "settled": int(np.sum(values <= SETTLE_S)),
            "unsettled": sum(t.is_alive() for t in threads), "p50_s": float(np.percentile(values, 50)),
            "p95_s": float(np.percentile(values, 95)), "max_s": float(values.max()),
            "wall_s": time.perf_counter() - started}


def searches_during_ingest(data_dir: Path, embedder_name: str = "hash", clients: int = 8, files: int = 300,
                           per_client: int = 5, seed_files: int = 20) -> dict:
    """The row: searches with no job running, then while an ingest of ``files`` documents runs."""
    from rag_core.config import Settings
    from rag_core.embeddings import get_embedder
    from rag_core.index import Index
    from rag_core.serving.jobs import JobRunner

    settings = Settings(data_dir=data_dir)
    embedder = get_embedder(embedder_name, settings, cache_dir=Path(data_dir) / "cache")
    docs = corpus_documents(files + seed_files)
    index = Index.open("load-ingest", settings, embedder, None)
    index.ingest(docs[:seed_files])  # something to find before the big ingest commits
    idle = _search_phase(index, settings, clients, lambda: True, per_client)
    runner = JobRunner(data_dir)
    started = time.perf_counter()
    job = runner.submit_ingest(index, docs[seed_files:], title=f"bench: {files} files")
    state = {"over": False}

    def over() -> bool:
        if not state["over"]:
            status = runner.get(job.id)
            state["over"] = status is None or not status.active
        return state["over"]

    during = _search_phase(index, settings, clients, over, per_client)
    runner.wait(job.id, timeout=SETTLE_S * 10)
    return {"clients": clients, "files": len(docs) - seed_files, "embedder": embedder.id, "idle": idle,
            "during": during, "ingest_s": time.perf_counter() - started}


def table(row: dict) -> str:
    lines = [f"Searches during an ingest · {row['clients']} client threads (sessions) · hybrid, k as configured · "
             f"ingest of {row['files']} shared-corpus files · embedder {row['embedder']} · ingest took "
             f"{row['ingest_s']:.0f} s", "",
             "| phase | searches | settled ≤ 180 s | p50 s | p95 s | max s |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for phase in ("idle", "during"):
        r = row[phase]
        lines.append(f"| {'no job' if phase == 'idle' else 'ingest running'} | {r['searches']} | {r['settled']} | "
                     f"{r['p50_s']:.2f} | {r['p95_s']:.2f} | {r['max_s']:.2f} |")
    return "\n".join(lines)
