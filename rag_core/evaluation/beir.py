"""Evaluate the project's retrievers on a BEIR folder (corpus, queries, qrels): BM25, dense or hybrid.

The corpus goes into a regular ``Index`` as pre-chunked documents (one chunk per abstract: title + text), and the
queries are ranked by the app's ``Retriever`` (``beir_config`` maps the options to a ``RetrievalConfig``), so the
figures measure the same vector store, BM25 index and fusion the app uses. The index is kept in the data
directory under a collection named after the dataset and embedder; a second run reuses it (and the embedding
cache makes rebuilding cheap).
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.config import DEFAULT_RRF_K, ChunkingConfig, RAGConfig, RetrievalConfig, Settings, get_settings
from rag_core.evaluation.metrics import evaluate_run
from rag_core.evaluation.questions import BeirDataset
from rag_core.index import Filters
from rag_core.retrieval.retriever import Retriever
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Document, Progress

RETRIEVERS = ("bm25", "dense", "hybrid")
# The ``RetrievalConfig.strategy`` each BEIR retriever name stands for.
BEIR_STRATEGIES = {"bm25": "keyword", "dense": "vector", "hybrid": "hybrid"}
FUSIONS = ("rrf", "weighted")
# Opens an index: ``open_index(config, settings, collection=name)``, as ``rag_core.services.open_index`` does.
IndexOpener = Callable[..., Any]


@dataclass(slots=True)
class BeirReport:
    """Mean metrics of one retriever on one dataset, plus the run itself and per-query latency."""

    dataset: str
    retriever: str
    k: int
    metrics: dict[str, float]
    latency_ms: dict[str, float]
    settings: dict[str, Any] = field(default_factory=dict)
    run: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self, include_run: bool = False) -> dict[str, Any]:
        data = {"dataset": self.dataset, "retriever": self.retriever, "k": self.k, **self.metrics,
                "latency_ms": self.latency_ms, "settings": self.settings}
        if include_run:
            data["run"] = self.run
        return data


def beir_documents(dataset: BeirDataset) -> tuple[list[Document], list[Chunk]]:
    """One document and one paragraph-level chunk per corpus entry; chunk id and doc id are the BEIR id."""
    docs, chunks = [], []
    for position, (doc_id, (title, text)) in enumerate(dataset.corpus.items()):
        body = f"{title}\n\n{text}" if title and text else (title or text)
        docs.append(Document(id=doc_id, name=f"{dataset.name}:{doc_id}", doc_type="text", size=len(body.encode()),
                             created="", text=body, metadata={"beir": dataset.name}))
        chunks.append(Chunk(
            id=doc_id, doc_id=doc_id, granularity="paragraph", chunk_type="prose", text=body, start=0,
            end=len(body), tokens=count_tokens(body), heading_path=[title] if title else [], verbatim=True,
            position=position, metadata={"source_name": f"{dataset.name}:{doc_id}"},
        ))
    return docs, chunks


def collection_for(dataset: BeirDataset, embedder: str) -> str:
    """Chroma-safe collection name for a dataset and embedder."""
    safe = re.sub(r"[^A-Za-z0-9_-]+", "-", dataset.name).strip("-_")[:40] or "beir"
    return f"beir-{safe}-{embedder}"


def open_beir_index(dataset: BeirDataset, embedder: str, settings: Settings | None = None,
                    progress: Progress | None = None, *, open_index: IndexOpener):
    """The dataset's index, built on first use (embeddings cached in the data directory).

    ``open_index`` opens an index of a configuration under a collection name (the callers pass
    ``rag_core.services.open_index``: the wiring sits above the engine).
    """
    settings = settings or get_settings()
    config = RAGConfig(chunking=ChunkingConfig(max_tokens=8192, overlap=0), embedding={"embedder": embedder})
    index = open_index(config, settings, collection=collection_for(dataset, embedder))
    indexed = {entry["doc_id"] for entry in index.documents()}
    missing = [doc_id for doc_id in dataset.corpus if doc_id not in indexed]
    if missing:
        docs, chunks = beir_documents(dataset)
        wanted = set(missing)
        docs = [d for d in docs if d.id in wanted]
        chunks = [c for c in chunks if c.doc_id in wanted]

        def report(done: int, total: int, label: str = "") -> None:
            if progress:
                progress(done, total, "indexing")

        index.add_chunks(docs, chunks, progress=report)
    return index


def beir_config(retriever: str, fusion: str = "rrf", rrf_k: int = DEFAULT_RRF_K,
                weight: float = 0.5) -> RetrievalConfig:
    """The ``RetrievalConfig`` of a BEIR run: ``bm25``, ``dense`` and ``hybrid`` are the keyword, vector and hybrid
    strategies; ``weight`` is the vector share in weighted fusion (``hybrid_weight``)."""
    check_options(retriever, fusion)
    # A copy, not a validation: BEIR has long taken any RRF constant ≥ 1 (``rrf_fuse`` checks it), the product's
    # settings cap it at 1,000. One chunk per abstract: no sections to rank passages with.
    return RetrievalConfig().model_copy(update={
        "strategy": BEIR_STRATEGIES[retriever], "fusion": fusion, "rrf_k": rrf_k, "hybrid_weight": weight,
        "section_weight": 0.0})


def run_queries(index, dataset: BeirDataset, retriever: str, depth: int = 100, fusion: str = "rrf",
                rrf_k: int = DEFAULT_RRF_K, weight: float = 0.5, progress: Progress | None = None,
                ) -> tuple[dict[str, list[str]], list[float]]:
    """Ranked document ids per judged query (``depth`` deep) and each query's latency in milliseconds.

    Ranked by the app's ``Retriever`` (``Retriever.ranked``), one pass over the whole corpus: the top ``depth`` of
    BM25, of cosine, or of the fusion of both ``depth``-deep lists.
    """
    config = beir_config(retriever, fusion, rrf_k, weight)
    search = Retriever.for_config(index, config)
    run: dict[str, list[str]] = {}
    latencies: list[float] = []
    total = len(dataset.queries)
    for done, (qid, text) in enumerate(dataset.queries.items(), start=1):
        started = time.perf_counter()
        hits = search.ranked(config.strategy, text, depth, Filters(), candidates=depth, calibrate=False)
        ranked = [hit.chunk.doc_id for hit in hits]
        latencies.append((time.perf_counter() - started) * 1000)
        run[qid] = [doc_id for doc_id in ranked if doc_id != qid]  # BEIR ignores a document identical to the query
        if progress:
            progress(done, total, "searching")
    return run, latencies


def check_options(retriever: str, fusion: str) -> None:
    if retriever not in RETRIEVERS:
        raise ValueError(f"unknown retriever '{retriever}'; choose one of {', '.join(RETRIEVERS)}")
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion '{fusion}'; choose one of {', '.join(FUSIONS)}")


def score_run(run: dict[str, list[str]], dataset: BeirDataset, k: int = 10) -> dict[str, float]:
    """nDCG@k, Recall@k, Recall@100 and MRR@k (plus Hit@k) over the judged queries."""
    if k < 1:
        raise ValueError(f"--k must be ≥ 1 (got {k})")
    scores = evaluate_run(run, dataset.qrels, ks=sorted({k, 100}))
    keep = [f"ndcg@{k}", f"recall@{k}", "recall@100", f"mrr@{k}", f"hit@{k}"]
    return {name: round(scores[name], 6) for name in keep} | {"queries": int(scores["queries"])}


def evaluate_beir(dataset: BeirDataset, retriever: str = "bm25", k: int = 10, embedder: str | None = None,
                  fusion: str = "rrf", rrf_k: int = DEFAULT_RRF_K, weight: float = 0.5,
                  settings: Settings | None = None,
                  progress: Progress | None = None, index=None,
                  open_index: IndexOpener | None = None) -> BeirReport:
    """Index (or reuse) the corpus, run every judged query, and score the run.

    ``embedder`` defaults to ``hash`` for BM25 alone (no model needed) and ``minilm`` otherwise. Without ``index``,
    the corpus is indexed with ``open_index`` (as in ``open_beir_index``).
    """
    check_options(retriever, fusion)
    limit = (settings or get_settings()).max_questions
    if len(dataset.queries) > limit:  # a dataset built in code: refused before any indexing or search
        raise ValueError(f"{dataset.name}: {len(dataset.queries):,} judged queries; at most {limit:,} per "
                         "evaluation (RAG_MAX_QUESTIONS)")
    embedder = embedder or ("hash" if retriever == "bm25" else "minilm")
    if index is None:
        if open_index is None:
            raise ValueError("evaluate_beir needs an index or open_index (rag_core.services.open_index)")
        index = open_beir_index(dataset, embedder, settings, progress, open_index=open_index)
    depth = max(100, k)
    run, latencies = run_queries(index, dataset, retriever, depth, fusion, rrf_k, weight, progress)
    latency = {"p50": round(statistics.median(latencies), 2),
               "p95": round(_percentile(latencies, 95), 2)} if latencies else {}
    options: dict[str, Any] = {"embedder": embedder, "depth": depth}
    if retriever == "hybrid":
        options |= {"fusion": fusion, "rrf_k": rrf_k} if fusion == "rrf" else {"fusion": fusion, "weight": weight}
    return BeirReport(dataset=dataset.name, retriever=retriever, k=k, metrics=score_run(run, dataset, k),
                      latency_ms=latency, settings=options, run=run)


def _percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    position = (len(ordered) - 1) * pct / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
