"""What a trial measures: a configuration's questions scored at the user's budget, and the indexes it needs.

Evidence-span sets (and answer-text or section sets) are scored on the context that fits the budget (a chunk the
budget cuts counts only with the part shown): a question's place recall is the share of its places in that context
(``complete``: all of them), as ``bench docsqa`` counts it; the agent's "not found" answers are recorded on
unanswerable and answerable questions. Ranking sets (relevant ids only) are scored by nDCG@10 and recall@10 of the
ranked hits. Every score comes from the evaluation runner's ``score_question`` over an ``Outcome``; context tokens
and latency are the second objectives.
"""

from __future__ import annotations

import dataclasses
import hashlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.config import RAGConfig, Settings
from rag_core.evaluation.metrics import recall_at_k
from rag_core.evaluation.questions import Question, ranked_targets
from rag_core.evaluation.runner import Outcome, default_execute, score_question
from rag_core.retrieval import Retriever
from rag_core.tokens import decode, encode
from rag_core.tuning.memo import MemoIndex
from rag_core.types import Chunk, Document

PLACE_RECALL = "place_recall"
NDCG = "ndcg@10"


def primary_metric(questions: Sequence[Question]) -> str:
    """``place_recall`` when the questions name what to find in the text, ``ndcg@10`` for ranking sets."""
    spans = any(q.evidence or q.answer_texts or q.doc or q.heading for q in questions)
    return PLACE_RECALL if spans or not questions else NDCG


@dataclass(slots=True)
class QuestionScore:
    """One question under one configuration: its primary score (None: not counted, e.g. unanswerable)."""

    question_id: str
    score: float | None
    metrics: dict[str, float]
    context_tokens: int
    latency_ms: float
    error: str = ""


def budget_outcome(question: str, strategy: str, config: RAGConfig, index, settings: Settings, llm: Any = None
                   ) -> Outcome:
    """What the user reads at the budget: the agent's context, or the search hits that fit ``token_budget`` (only
    those are de-duplicated: ``Retriever.retrieve(context_only=True)``, the same context for far less embedding)."""
    if strategy == "agent":
        return default_execute(question, "agent", config, index, settings, llm)
    result = Retriever.for_config(index, config.retrieval, settings, llm).retrieve(question, context_only=True)
    included = {entry["chunk_id"] for entry in result.context.included}
    shown = {entry["chunk_id"]: entry["shown_tokens"] for entry in result.context.truncated}
    ranked = [(_as_shown(hit.chunk, shown.get(hit.chunk.id)), hit.source_name) for hit in result.hits
              if hit.chunk.id in included]
    return Outcome(ranked=ranked, context_tokens=int(result.context.tokens), steps=len(result.iterations),
                   route=result.route)


def _as_shown(chunk: Chunk, shown_tokens: int | None) -> Chunk:
    """The chunk as the context shows it: a truncated one cut to its first ``shown_tokens`` tokens."""
    if shown_tokens is None:
        return chunk
    return dataclasses.replace(chunk, text=decode(encode(chunk.text)[:shown_tokens]), tokens=shown_tokens)


def ranked_outcome(question: str, strategy: str, config: RAGConfig, index, settings: Settings, llm: Any = None
                   ) -> Outcome:
    """Every ranked hit (ranking sets are scored by rank, not by what fits the budget)."""
    if strategy == "agent":
        return default_execute(question, "agent", config, index, settings, llm)
    return default_execute(question, config.retrieval.strategy, config, index, settings, llm)


def score_one(question: Question, strategy: str, config: RAGConfig, index, settings: Settings, metric: str,
              llm: Any = None) -> QuestionScore:
    """Answer one question and score it (a failing question scores zero and says why)."""
    execute = budget_outcome if metric == PLACE_RECALL else ranked_outcome
    started = time.perf_counter()
    error = ""
    try:
        outcome = execute(question.question, strategy, config, index, settings, llm)
    except Exception as e:  # noqa: BLE001 - one failing question must not end a trial
        outcome = Outcome(ranked=[], context_tokens=0, steps=0)
        error = f"{type(e).__name__}: {e}"
    latency_ms = (time.perf_counter() - started) * 1000
    metrics = score_question(question, outcome)
    score: float | None = None
    if not question.unanswerable:
        if metric == PLACE_RECALL:
            targets = question.targets()
            found = ranked_targets(question, outcome.ranked)
            metrics[PLACE_RECALL] = recall_at_k(found, targets, max(1, len(found))) if found else 0.0
        score = metrics.get(metric, 0.0)
    return QuestionScore(question.id, score, metrics, outcome.context_tokens, latency_ms, error)


def summarise_scores(scores: Sequence[QuestionScore], metric: str) -> dict[str, float]:
    """Means over the counted questions: the primary ``quality``, every other metric, tokens and p50 latency."""
    counted = [s.score for s in scores if s.score is not None]
    summary: dict[str, float] = {"quality": round(statistics.fmean(counted), 4) if counted else 0.0,
                                 "questions": float(len(scores))}
    names = dict.fromkeys(name for s in scores for name in s.metrics)
    for name in names:
        values = [s.metrics[name] for s in scores if name in s.metrics]
        summary[name] = round(statistics.fmean(values), 4)
    summary["context_tokens"] = round(statistics.fmean(s.context_tokens for s in scores), 1) if scores else 0.0
    summary["latency_ms"] = round(statistics.median(s.latency_ms for s in scores), 1) if scores else 0.0
    summary["errors"] = float(sum(1 for s in scores if s.error))
    return summary


class BuildStopped(Exception):
    """An index build stopped by ``should_stop`` (time up or cancelled)."""


class BuildTooSlow(BuildStopped):
    """An index build given up early: at the pace measured it would end after ``finish_by``."""


IndexOpener = Callable[..., Any]  # (config, settings, collection=NAME) -> index: rag_core.services.open_index


@dataclass
class IndexCache:
    """One index per distinct chunking (and embedder), built once from ``documents`` and reused by every trial
    with that chunking; the embedding cache of ``open_index`` makes a rebuild of known texts cheap. Each index is
    handed out as a ``MemoIndex``: later trials' searches of the same questions are answered from memory.

    ``known`` maps an index key to an existing collection (the user's own, built with the current chunking)."""

    documents: Sequence[Document]
    open_index: IndexOpener
    settings: Settings
    prefix: str
    known: dict[str, str] = field(default_factory=dict)
    _open: dict[str, Any] = field(default_factory=dict)
    build_seconds: list[float] = field(default_factory=list)

    def collection_for(self, config: RAGConfig) -> str:
        key = config.index_key()
        if key in self.known:
            return self.known[key]
        digest = hashlib.sha256(f"{self.prefix}|{key}".encode()).hexdigest()[:12]
        return f"tune-{digest}"

    def has(self, config: RAGConfig) -> bool:
        return config.index_key() in self._open

    def built_configs(self) -> list[str]:
        return list(self._open)

    def get(self, config: RAGConfig, should_stop: Callable[[], bool] | None = None, *,
            finish_by: float | None = None, clock: Callable[[], float] = time.monotonic) -> tuple[Any, bool]:
        """(index, built now): the index of ``config``'s chunking, with every document in it.

        ``should_stop`` is polled while the documents are embedded: when true the build is rolled back (the index
        commits atomically; what was embedded stays in the embedding cache) and ``BuildStopped`` raised.
        ``finish_by`` (a ``clock`` time): once a twentieth of the build is done, its pace says when it would end;
        if after ``finish_by`` it is given up at once (``BuildTooSlow``) and its projected length is kept in
        ``build_seconds``, rather than spending the rest of a study on a build that cannot finish (a first build of
        the FastAPI docs took 7 minutes at a load of 8: a 5-minute study lost 4 of its minutes to one)."""
        key = config.index_key()
        if key in self._open:
            return self._open[key], False
        started = time.perf_counter()
        index = self.open_index(config, self.settings, collection=self.collection_for(config))
        present = {entry.get("doc_id") for entry in index.documents()}
        missing = [doc for doc in self.documents if doc.id not in present]
        if missing:
            pace: list[tuple[float, int, int]] = []  # (clock, done, total) when this stage's count was first seen

            def check(done: int, total: int, label: str = "") -> None:
                if should_stop is not None and should_stop():
                    raise BuildStopped(f"stopped while building the index ({done} of {total} chunks embedded)")
                if finish_by is None or total <= 0:
                    return
                now = clock()
                if not pace or pace[0][2] != total:
                    pace[:] = [(now, done, total)]
                elif total > done >= pace[0][1] + max(1, total // 20):
                    end = now + (total - done) * (now - pace[0][0]) / (done - pace[0][1])
                    if end > finish_by:
                        self.build_seconds.append(time.perf_counter() - started + end - now)
                        raise BuildTooSlow(f"the index would take {end - now:.0f} s more, {end - finish_by:.0f} s "
                                           f"past the time budget ({done} of {total} embedded)")

            index.ingest(list(missing), progress=check)
        index = MemoIndex(index)  # nothing writes to it while the study runs: its searches are remembered
        self._open[key] = index
        if missing:
            self.build_seconds.append(time.perf_counter() - started)
        return index, bool(missing)

    def expected_build_s(self) -> float:
        """The mean time a new chunking took to build (0.0 before one was built)."""
        return statistics.fmean(self.build_seconds) if self.build_seconds else 0.0
