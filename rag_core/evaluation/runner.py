"""Run question sets against configurations × strategies and measure what each returned.

For every question, configuration and strategy (``vector``, ``keyword``, ``hybrid``, ``auto`` or ``agent``) the
runner records the ranked chunks, which answer targets they found (see ``questions.ranked_targets``), hit@k,
recall@k, MRR, nDCG@10, whether every target is in the retrieved context (``complete``), context tokens, steps and
latency, and keeps a slimmed trace for the drill-down. Questions the documents do not answer (type ``null``) have no
retrieval metrics; the agent is scored on whether it said it found nothing (``said_not_found`` on those,
``false_not_found`` on answerable ones). Results are aggregated per configuration × strategy, per intent and per
question type; a metric's mean is over the records that have it. Indexes come from ``index_factory`` (or are opened
with ``open_index``, passed in by the caller: ``rag_core.services.open_index``) and receive any document they lack
before the run starts; the agent's LLM policies use the ``llm`` the caller opened, and so does ``auto`` as its
router (``Retriever.for_config``: routed as in the Retrieval Lab).
"""

from __future__ import annotations

import functools
import hashlib
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rag_core.agent import ask
from rag_core.config import RAGConfig, Settings, get_settings
from rag_core.evaluation.beir import IndexOpener, open_beir_index
from rag_core.evaluation.metrics import hit_at_k, mean, mrr, ndcg_at_k, recall_at_k
from rag_core.evaluation.questions import Question, QuestionSet, chunk_matches, load_beir, ranked_targets
from rag_core.retrieval import Retriever
from rag_core.types import EVAL_STRATEGIES, Chunk, Document, Progress

STRATEGIES = EVAL_STRATEGIES
KS = (1, 3, 5, 10)
QUALITY_METRICS = ("hit@1", "hit@3", "hit@5", "hit@10", "recall@5", "recall@10", "mrr", "ndcg@10", "complete")
# The agent's "not found" answers: wanted on unanswerable questions, a miss on answerable ones (lower is better).
NOT_FOUND_METRICS = ("said_not_found", "false_not_found")
MAX_TRACE_TEXT = 400


@dataclass(slots=True)
class Outcome:
    """What one strategy returned for one question."""

    ranked: list[tuple[Chunk, str]]
    context_tokens: int
    steps: int
    trace: dict[str, Any] = field(default_factory=dict)
    route: str = ""
    answer: str = ""
    # The agent's cited chunks (with their source names) and whether its answer is grounded; None: not an agent.
    cited: list[tuple[Chunk, str]] = field(default_factory=list)
    grounded: bool | None = None
    # False: the agent decided the documents do not answer the question; None: not an agent.
    found: bool | None = None


Executor = Callable[[str, str, RAGConfig, Any, Settings], Outcome]


@dataclass(slots=True)
class EvalRun:
    """One evaluation run: per-question records, summaries, and how it ended (complete, cancelled, failed)."""

    id: str
    created: str
    question_set: dict[str, Any]
    configs: list[dict[str, Any]]
    strategies: list[str]
    records: list[dict[str, Any]] = field(default_factory=list)
    status: str = "running"
    elapsed_s: float = 0.0
    label: str = ""
    note: str = ""

    @property
    def summary(self) -> list[dict[str, Any]]:
        return summarise(self.records, ("config", "strategy"))

    @property
    def by_intent(self) -> list[dict[str, Any]]:
        return summarise(self.records, ("config", "strategy", "intent"))

    @property
    def by_type(self) -> list[dict[str, Any]]:
        return summarise(self.records, ("config", "strategy", "type"))

    @property
    def total(self) -> int:
        return len(self.question_set.get("questions", [])) * len(self.configs) * len(self.strategies)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "created": self.created, "question_set": self.question_set, "configs": self.configs,
                "strategies": self.strategies, "records": self.records, "status": self.status,
                "elapsed_s": self.elapsed_s, "label": self.label, "note": self.note, "summary": self.summary}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalRun:
        fields = ("id", "created", "question_set", "configs", "strategies", "records", "status", "elapsed_s",
                  "label", "note")
        return cls(**{name: data[name] for name in fields if name in data})


def score_question(question: Question, outcome: Outcome, ks: Sequence[int] = KS) -> dict[str, float]:
    """hit@k and recall@k for each k, MRR, nDCG@10 and ``complete`` (every target retrieved) of one outcome against
    the question's targets; for the agent also what its answer cites and whether it said it found nothing.

    An unanswerable question has nothing to find: it gets only ``said_not_found`` (agent runs), never recall."""
    scores: dict[str, float] = {}
    if not question.unanswerable:
        ranked = ranked_targets(question, outcome.ranked)
        targets = question.targets()
        for k in ks:
            scores[f"hit@{k}"] = hit_at_k(ranked, targets, k)
            scores[f"recall@{k}"] = recall_at_k(ranked, targets, k)
        scores["mrr"] = mrr(ranked, targets)
        scores["ndcg@10"] = ndcg_at_k(ranked, targets, 10)
        scores["complete"] = 1.0 if targets and set(targets) <= set(ranked) else 0.0
        if outcome.grounded is not None:  # the agent answered: is the gold evidence among what its answer cites?
            cited = {target for chunk, source in outcome.cited for target in chunk_matches(question, chunk, source)}
            scores["cited"] = len(cited & set(targets)) / len(targets) if targets else 0.0
            scores["grounded"] = 1.0 if outcome.grounded else 0.0
    if outcome.found is not None:  # the agent decided whether the documents answer the question
        scores["said_not_found" if question.unanswerable else "false_not_found"] = 0.0 if outcome.found else 1.0
    return scores


def summarise(records: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Mean metrics, tokens and steps, and median latency, grouped by ``keys``; rows in first-seen order."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault(tuple(record.get(k) or "—" for k in keys), []).append(record)
    rows = []
    for group_key, group in groups.items():
        row: dict[str, Any] = dict(zip(keys, group_key, strict=True))
        row["questions"] = len(group)
        for name in dict.fromkeys(m for r in group for m in r["metrics"]):  # e.g. no recall on unanswerable ones
            row[name] = round(mean([r["metrics"][name] for r in group if name in r["metrics"]]), 4)
        row["context_tokens"] = round(mean([r["context_tokens"] for r in group]), 1)
        row["steps"] = round(mean([r["steps"] for r in group]), 2)
        row["latency_ms_p50"] = round(statistics.median(r["latency_ms"] for r in group), 1)
        row["errors"] = sum(1 for r in group if r.get("error"))
        rows.append(row)
    return rows


def slim(value: Any, limit: int = MAX_TRACE_TEXT) -> Any:
    """A JSON-ready copy of a trace with long strings cut to ``limit`` characters (traces stay small on disk)."""
    if isinstance(value, dict):
        return {str(k): slim(v, limit) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [slim(v, limit) for v in value]
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"… [{len(value) - limit} more characters]"
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def check_counts(questions: int, configs: int, settings: Settings, what: str) -> None:
    """Refuse more questions or configurations than ``settings`` allow, naming the setting that raises the limit."""
    if questions > settings.max_questions:
        raise ValueError(f"{what} holds {questions:,} questions; at most {settings.max_questions:,} are allowed "
                         "(RAG_MAX_QUESTIONS)")
    if configs > settings.max_eval_configs:
        raise ValueError(f"{what} holds {configs} configurations; at most {settings.max_eval_configs} are allowed "
                         "(RAG_MAX_EVAL_CONFIGS)")


def run_id(question_set: QuestionSet, configs: Sequence[RAGConfig], strategies: Sequence[str]) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    digest = hashlib.sha256(
        f"{question_set.name}|{[c.model_dump_json() for c in configs]}|{list(strategies)}|{time.time_ns()}".encode()
    ).hexdigest()[:6]
    return f"{stamp}-{digest}"


def check_strategies(strategies: Sequence[str]) -> list[str]:
    if not strategies:
        raise ValueError(f"pick at least one strategy: {', '.join(STRATEGIES)}")
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown:
        raise ValueError(f"unknown strategy {', '.join(unknown)}; choose from {', '.join(STRATEGIES)}")
    return list(dict.fromkeys(strategies))


def run_evaluation(
    question_set: QuestionSet,
    configs: Sequence[RAGConfig],
    strategies: Sequence[str],
    *,
    settings: Settings | None = None,
    documents: Sequence[Document] | None = None,
    index_factory: Callable[[RAGConfig], Any] | None = None,
    execute: Executor | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    on_finish: Callable[[EvalRun], None] | None = None,
    label: str = "",
    open_index: IndexOpener | None = None,
    llm: Any = None,
) -> EvalRun:
    """Evaluate every question with every configuration × strategy.

    ``documents`` are ingested into each configuration's index when it lacks them. ``cancel`` is polled
    between questions; a cancelled or interrupted run keeps what it measured and says so in ``status``.
    ``on_finish`` receives the run however it ends (the page stores it there, even when Streamlit interrupts
    the script because the user pressed Cancel). Without ``index_factory``, indexes are opened with
    ``open_index``; ``llm`` is the client of the agent's LLM policies and of ``auto``'s router (None: offline only).
    """
    if not question_set.questions:
        raise ValueError("the question set is empty")
    if not configs:
        raise ValueError("pick at least one configuration")
    strategies = check_strategies(strategies)
    settings = settings or get_settings()
    check_counts(len(question_set.questions), len(configs), settings, "the evaluation")
    index_factory = index_factory or _default_index_factory(question_set, settings, progress, open_index)
    execute = execute or functools.partial(default_execute, llm=llm)
    run = EvalRun(id=run_id(question_set, configs, strategies), created=datetime.now(UTC).isoformat(timespec="seconds"),
                  question_set=question_set.to_dict(), configs=[c.model_dump() for c in configs],
                  strategies=strategies, label=label)
    started = time.perf_counter()
    total, done = run.total, 0
    try:
        for config in configs:
            if progress:
                progress(done, total, f"opening the index of '{config.name}'")
            index = index_factory(config)
            if documents:
                _ensure_documents(index, documents, progress, done, total, config.name)
            for strategy in strategies:
                for question in question_set.questions:
                    if cancel and cancel():
                        run.status = "cancelled"
                        run.note = f"cancelled after {done} of {total} question runs"
                        return run
                    run.records.append(_evaluate_one(question, strategy, config, index, settings, execute))
                    done += 1
                    if progress:
                        progress(done, total, f"{config.name} · {strategy} · {question.id}")
        run.status = "complete"
        return run
    except BaseException as e:  # keep partial results whatever stops the run (cancel click, error, Ctrl-C)
        run.status = "cancelled" if not isinstance(e, Exception) else "failed"
        run.note = f"stopped after {done} of {total} question runs" + (
            f": {type(e).__name__}: {e}" if isinstance(e, Exception) else "")
        raise
    finally:
        run.elapsed_s = round(time.perf_counter() - started, 2)
        if on_finish:
            on_finish(run)


def _evaluate_one(question: Question, strategy: str, config: RAGConfig, index, settings: Settings,
                  execute: Executor) -> dict[str, Any]:
    record: dict[str, Any] = {"question_id": question.id, "question": question.question, "intent": question.intent,
                              "type": question.type, "config": config.name, "strategy": strategy}
    started = time.perf_counter()
    try:
        outcome = execute(question.question, strategy, config, index, settings)
    except Exception as e:  # one failing question must not end the run; it scores zero and says why
        agent = strategy == "agent"  # an agent that failed did not ground an answer, nor say "not found"
        outcome = Outcome(ranked=[], context_tokens=0, steps=0, grounded=False if agent else None,
                          found=True if agent else None)
        record["error"] = f"{type(e).__name__}: {e}"
    record["latency_ms"] = round((time.perf_counter() - started) * 1000, 2)
    record["metrics"] = score_question(question, outcome)
    record["context_tokens"] = outcome.context_tokens
    record["steps"] = outcome.steps
    record["route"] = outcome.route
    record["answer"] = slim(outcome.answer, 600)
    found = ranked_targets(question, outcome.ranked)
    record["hits"] = [
        {"rank": rank, "chunk_id": chunk.id, "doc": source or chunk.doc_id, "heading": " › ".join(chunk.heading_path),
         "granularity": chunk.granularity, "tokens": chunk.tokens, "found": not found[rank - 1].startswith("miss:"),
         "text": slim(chunk.text, 240)}
        for rank, (chunk, source) in enumerate(outcome.ranked[:10], start=1)
    ]
    record["trace"] = slim(outcome.trace)
    return record


def _ensure_documents(index, documents: Sequence[Document], progress: Progress | None, done: int, total: int,
                      name: str) -> None:
    present = {entry.get("doc_id") for entry in index.documents()}
    missing = [doc for doc in documents if doc.id not in present]
    if not missing:
        return

    def report(chunk_done: int, chunk_total: int, label: str = "") -> None:
        if progress:
            progress(done, total, f"indexing {len(missing)} document(s) for '{name}': {chunk_done}/{chunk_total}")

    index.ingest(list(missing), progress=report)


def _default_index_factory(question_set: QuestionSet, settings: Settings, progress: Progress | None,
                           open_index: IndexOpener | None) -> Callable[[RAGConfig], Any]:
    if open_index is None:
        raise ValueError("run_evaluation needs an index_factory or open_index (rag_core.services.open_index)")
    if question_set.kind == "beir":
        dataset = load_beir(question_set.source)

        def report(done: int, total: int, label: str = "") -> None:
            if progress:
                progress(0, 1, f"{label} the {dataset.name} corpus: {done}/{total} (embeddings are cached)")

        return lambda config: open_beir_index(dataset, config.embedding.embedder, settings, report,
                                              open_index=open_index)

    return lambda config: open_index(config, settings)


def default_execute(question: str, strategy: str, config: RAGConfig, index, settings: Settings,
                    llm: Any = None) -> Outcome:
    """Answer ``question`` with the real retriever (one strategy) or the agent (``llm``: its LLM policies' client,
    and the router of ``auto``, as in the Retrieval Lab)."""
    if strategy == "agent":
        return _run_agent(question, config, index, settings, llm)
    retrieval = config.retrieval.model_copy(update={"strategy": strategy})
    result = Retriever.for_config(index, retrieval, settings, llm).retrieve(question)
    ranked = [(hit.chunk, hit.source_name) for hit in result.hits]
    return Outcome(ranked=ranked, context_tokens=int(result.context.tokens), steps=len(result.iterations),
                   trace=result.to_dict(), route=f"{result.route}: {result.route_reason}")


def _run_agent(question: str, config: RAGConfig, index, settings: Settings, llm: Any = None) -> Outcome:
    result = ask(question, index, config, settings, llm=llm)
    ranked = [(hit.chunk, hit.source_name) for hit in result.context_hits]  # the context the answer is drawn from
    citations = set(result.citations)
    cited = [(chunk, source) for chunk, source in ranked if chunk.id in citations]
    return Outcome(ranked=ranked, context_tokens=result.context_tokens, steps=len(result.steps),
                   trace=result.to_dict(), route="agent", answer=result.answer, cited=cited, grounded=result.grounded,
                   found=result.found)
