"""The agent's types: a policy's ``Action``, the live ``AgentRun`` the loop owns, each ``AgentStep`` and the
final ``AgentResult``, the ``AgentState`` a conversation carries, and the ``Policy`` protocol.

Policies read the run and return an ``Action``; only the loop (``rag_core.agent.loop``) writes into the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from rag_core.agent.context import AgentContext
from rag_core.agent.plan import QuestionPlan, plan_question
from rag_core.agent.tools import ToolBox, ToolOutcome
from rag_core.config import RAGConfig
from rag_core.types import Hit


@dataclass(slots=True)
class Action:
    """A policy's decision: which tool with which arguments, and why (the reason shown in the timeline)."""

    tool: str
    args: dict[str, Any] | str | None
    reason: str
    llm_tokens: int = 0
    llm_retries: list[str] = field(default_factory=list)
    call_id: str | None = None
    # Repairs the policy made before the tool saw the call (e.g. a call recovered from the reply's text).
    repairs: list[str] = field(default_factory=list)
    # Things the person should know about this step (a cut-off reply, another model answering ...).
    notes: list[str] = field(default_factory=list)
    # For ``done``: the answer was quoted by the extractive answerer, and why the LLM did not write it.
    extractive: bool = False
    fallback: str | None = None
    # The part of the question this action works on (the tools rank within it; empty: the whole question), and the
    # parts the policy split the question into (the loop's extractive answer covers each; empty: not split).
    focus_query: str = ""
    sub_queries: list[str] = field(default_factory=list)
    # False: a search ranks every chunk, also those already retrieved in this turn (a part of the question is
    # ranked on its own, whatever earlier searches found); True: it skips them (new material only).
    exclude_retrieved: bool = True
    # For ``done``: citations the policy attributed by word overlap (the model cited none): labelled, never the
    # model's own.
    attributed: list[str] = field(default_factory=list)


class SwitchPolicy(Exception):  # noqa: N818 - a hand-over, not an error
    """Raised by a policy's ``next_action`` to hand the rest of the question to ``policy`` (``reason`` is shown)."""

    def __init__(self, policy: Policy, reason: str) -> None:
        super().__init__(reason)
        self.policy = policy
        self.reason = reason


class Policy(Protocol):
    """Chooses the next action from the run so far; ``observe`` is told each outcome."""

    name: str

    def begin(self, run: AgentRun) -> None: ...

    def next_action(self, run: AgentRun) -> Action: ...

    def observe(self, run: AgentRun, action: Action, outcome: ToolOutcome) -> None: ...


@dataclass(slots=True)
class Turn:
    question: str
    answer: str
    citations: list[str]


@dataclass(slots=True)
class AgentState:
    """What a conversation carries between questions: turns, queries, retrieved ids and the last context."""

    turns: list[Turn] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    retrieved_ids: list[str] = field(default_factory=list)
    context_hits: list[Hit] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"turns": [{"question": t.question, "answer": t.answer, "citations": list(t.citations)}
                          for t in self.turns],
                "queries": list(self.queries), "retrieved_ids": list(self.retrieved_ids),
                "context_ids": [h.chunk.id for h in self.context_hits]}


@dataclass(slots=True)
class AgentStep:
    """One step of the loop, everything the timeline shows about it."""

    step: int
    policy: str
    reason: str
    tool: str
    args: dict[str, Any]
    ok: bool = True
    error: str | None = None
    route: str | None = None
    route_reason: str | None = None
    intent: str | None = None
    k: int | None = None
    k_by_iteration: list[int] = field(default_factory=list)
    filters: dict[str, Any] = field(default_factory=dict)
    hits: list[dict[str, Any]] = field(default_factory=list)
    confidence: float | None = None
    confidence_by_iteration: list[float] = field(default_factory=list)
    threshold: float = 0.0
    granularity: str | None = None
    dedup_removed: list[dict[str, Any]] = field(default_factory=list)
    replaced: list[dict[str, Any]] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    context_tokens_in: int = 0
    context_tokens_out: int = 0
    context_budget: int = 0
    llm_tokens: int = 0
    llm_retries: list[str] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)
    observation: str = ""
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__}
        data["elapsed_ms"] = round(self.elapsed_ms, 2)
        return data


@dataclass(slots=True)
class AgentResult:
    """The final answer, its citations, the whole trace and the exact context the answer was drawn from."""

    question: str
    answer: str
    citations: list[str]
    steps: list[AgentStep]
    context: dict[str, Any]
    context_hits: list[Hit]
    stop_reason: str
    policy: str
    extractive: bool
    llm_tokens: int = 0
    elapsed_ms: float = 0.0
    dedup_saved_tokens: int = 0
    dedup_saving_pct: float = 0.0
    dedup_offered_tokens: int = 0
    fallback: str | None = None
    # True when every sentence of the answer is supported by a retrieved passage it cites (rag_core.agent.grounding;
    # at least one is, none is not); ``grounding`` says why or why not.
    grounded: bool = False
    grounding: str = ""
    warnings: list[str] = field(default_factory=list)
    # False when the run decided the documents do not answer the question (the answer then says so); why.
    found: bool = True
    found_reason: str = ""
    # The question's plan (kind, why, parts) and each part's coverage by the final context (``PartCoverage``).
    plan: dict[str, Any] = field(default_factory=dict)
    parts: list[dict[str, Any]] = field(default_factory=list)
    # The sentences no passage they rest on supports (``{sentence, reason}``), and each passage the answer rests on
    # with who chose it (``{chunk_id, source: model|quote|overlap, attributed}``; overlap: not the model's own).
    unsupported: list[dict[str, str]] = field(default_factory=list)
    citation_sources: list[dict[str, Any]] = field(default_factory=list)

    @property
    def context_text(self) -> str:
        return self.context.get("text", "")

    @property
    def context_tokens(self) -> int:
        return int(self.context.get("tokens", 0))

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "citations": list(self.citations),
            "policy": self.policy,
            "extractive": self.extractive,
            "stop_reason": self.stop_reason,
            "fallback": self.fallback,
            "steps": [s.to_dict() for s in self.steps],
            "context": self.context,
            "context_chunks": [{"chunk_id": h.chunk.id, "doc_id": h.chunk.doc_id, "source": h.source_name,
                                "heading_path": h.chunk.heading_path, "granularity": h.chunk.granularity,
                                "tokens": h.chunk.tokens, "text": h.chunk.text} for h in self.context_hits],
            "llm_tokens": self.llm_tokens,
            "elapsed_ms": round(self.elapsed_ms, 2),
            "dedup_saved_tokens": self.dedup_saved_tokens,
            "dedup_saving_pct": round(self.dedup_saving_pct, 2),
            "dedup_offered_tokens": self.dedup_offered_tokens,
            "grounded": self.grounded,
            "grounding": self.grounding,
            "warnings": list(self.warnings),
            "found": self.found,
            "found_reason": self.found_reason,
            "plan": self.plan,
            "parts": list(self.parts),
            "unsupported": [dict(u) for u in self.unsupported],
            "citation_sources": [dict(c) for c in self.citation_sources],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2, default=str)


@dataclass
class AgentRun:
    """The live state of one question: what policies read to decide; only the loop writes into it."""

    question: str
    config: RAGConfig
    toolbox: ToolBox
    context: AgentContext
    state: AgentState
    steps: list[AgentStep] = field(default_factory=list)
    retrievals: int = 0
    queries: list[str] = field(default_factory=list)
    retrieved_ids: list[str] = field(default_factory=list)
    searched: set[tuple[str, str, str]] = field(default_factory=set)
    # The latest ``sub_queries`` and ``focus_query`` the policy's actions named.
    sub_queries: list[str] = field(default_factory=list)
    current_query: str = ""
    # ``time.monotonic()`` past which no LLM call may run (None: no budget), and notes for the person.
    deadline: float | None = None
    warnings: list[str] = field(default_factory=list)
    # Receives the final answer's text piece by piece while a model writes it (None: not streamed).
    on_text: Any = None
    # The question's plan (``plan_question``), made once: the policies search by it, the loop scores its parts.
    plan: QuestionPlan | None = None

    def __post_init__(self) -> None:
        if self.plan is None:
            self.plan = plan_question(self.question)

    def warn(self, note: str) -> None:
        if note and note not in self.warnings:
            self.warnings.append(note)

    @property
    def max_steps(self) -> int:
        return self.config.agent.max_steps

    @property
    def steps_left(self) -> int:
        return self.max_steps - len(self.steps)

    @property
    def threshold(self) -> float:
        return self.config.retrieval.min_confidence
