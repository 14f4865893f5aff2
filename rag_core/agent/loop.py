"""The agent loop: a policy picks a tool, the tool runs, the context grows — one streamed ``AgentStep`` per turn.

``run_agent`` is a generator: it yields each ``AgentStep`` as soon as it happens (the Playground fills its
timeline from it) and yields the ``AgentResult`` last. ``ask`` runs it to the end. The loop owns the rules
every policy plays by: max steps, max retrievals, repeated-query rejection, exclusion of chunks already
retrieved, de-duplicated context within a token budget, multi-turn state, a wall-clock budget per question
(``RAG_LLM_TIME_BUDGET_S``: past it the run ends with what it has), a policy handing over to another
(``SwitchPolicy``), falling back to the offline policy when the LLM endpoint fails or the model's answer cannot
be used (the time budget ran out, it repeated itself, it was cut off), and saying whether the answer is grounded:
every sentence supported by a retrieved passage it cites (``rag_core.agent.grounding``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rag_core.agent.agent_types import Action, AgentResult, AgentRun, AgentState, AgentStep, Policy, SwitchPolicy, Turn
from rag_core.agent.answer import NOT_FOUND, extractive_answer, part_answer
from rag_core.agent.context import AgentContext
from rag_core.agent.coverage import PART_COVERED, embedder_id, judge_coverage, not_found_answer, text_relevance
from rag_core.agent.grounding import Grounding, check_grounding, citation_sources, covered_evidence
from rag_core.agent.plan import QuestionPlan
from rag_core.agent.plan_model import plan_with_model
from rag_core.agent.policies import make_policy
from rag_core.agent.policies.offline import OfflinePolicy
from rag_core.agent.tools import RETRIEVAL_TOOLS, DoneArgs, ToolArgumentError, ToolBox, ToolOutcome, validate_arguments
from rag_core.config import RAGConfig, Settings
from rag_core.errors import LLMError
from rag_core.index.protocol import SearchIndex
from rag_core.llm import LLMOutOfTime
from rag_core.retrieval.retriever import VECTORS_DOWN, Retriever
from rag_core.retrieval.rewrite import check_query
from rag_core.types import Hit

log = logging.getLogger(__name__)
DEFAULT_TIME_BUDGET_S = 60.0
# What a model policy raises on a reply shaped like nothing it expects: the run falls back to the offline policy
# (the client checks replies at the boundary; this is the net under it).
MODEL_DATA_ERRORS = (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError)


def _to_hits(outcome: ToolOutcome, toolbox: ToolBox, score: float) -> list[Hit]:
    if outcome.hits:
        return [h if h.source_name else Hit(h.chunk, h.score, h.confidence, h.ranks, h.scores, toolbox.label(h.chunk))
                for h in outcome.hits]
    return [Hit(chunk=c, score=score, confidence=score, source_name=toolbox.source_name(c.doc_id))
            for c in outcome.chunks]


def time_budget_s(settings: Settings | None, llm: Any) -> float:
    """Seconds one question may take: the settings' ``llm_time_budget_s``, else the client's, else 60."""
    if settings is not None:
        return float(settings.llm_time_budget_s)
    return float(getattr(llm, "time_budget_s", DEFAULT_TIME_BUDGET_S))


def grounding_of(context: AgentContext, answer: str, found: bool = True, *, extractive: bool = False,
                 covered: set[str] | None = None, question: str = "") -> Grounding:
    """Whether the answer is grounded: a "not found" answer never is (it says so); any other is checked sentence by
    sentence against the context (``check_grounding``; quotes of an extractive answer must be ``covered``)."""
    if not context.hits:
        return Grounding(False, "ungrounded: nothing was retrieved, so the answer rests on no document")
    if not found or answer.strip() == NOT_FOUND:
        return Grounding(False, "ungrounded: nothing relevant was found in the retrieved chunks (the answer says so)")
    return check_grounding(answer, context.hits, extractive=extractive, covered=covered, question=question)


@dataclass(slots=True)
class _Ending:
    """How the loop ended: the answer it has (None: none yet), its citations, and why it stopped."""

    policy: Policy
    answer: str | None = None
    citations: list[str] = field(default_factory=list)
    attributed: list[str] = field(default_factory=list)
    stop_reason: str = ""
    extractive: bool = False
    fallback: str | None = None


def run_agent(
    question: str,
    index: SearchIndex,
    config: RAGConfig,
    settings: Settings | None = None,
    policy: Policy | str | None = None,
    state: AgentState | None = None,
    *,
    retriever: Retriever | None = None,
    llm: Any = None,
    on_answer_text: Any = None,
    plan: QuestionPlan | None = None,
) -> Iterator[AgentStep | AgentResult]:
    """Answer ``question`` step by step; yields each ``AgentStep`` as it happens, then the ``AgentResult``.

    ``on_answer_text(piece)`` receives the final answer as it is streamed, when a model writes it (``llm-answer``).
    ``plan``: the question's plan made elsewhere (the bench's upper bound for a model's plan); None: the configured
    model writes it, else the rules.
    """
    question = check_query(question, noun="question")
    if retriever is None:
        retriever = Retriever.for_config(index, config.retrieval, settings, llm)
    if policy is None or isinstance(policy, str):
        policy = make_policy(policy or config.agent.policy, settings, llm)
    state = state if state is not None else AgentState()
    budget_s = time_budget_s(settings, llm)
    # The budget bounds runs that use a model (the offline policy alone takes no network and needs none).
    deadline = time.monotonic() + budget_s if policy.name != "offline" else None
    router = getattr(retriever, "llm", None)
    if router is not None and hasattr(router, "bounded") and deadline is not None:
        retriever = retriever.with_llm(router.bounded(deadline))  # the router's calls share the question's deadline
    context = AgentContext(config.agent.context_budget, config.retrieval.dedup_threshold, index.embed_texts)
    if state.context_hits:
        context.add(state.context_hits, count_offered=False)
    run = AgentRun(question=question, config=config, toolbox=ToolBox(index, retriever), context=context,
                   state=state, on_text=on_answer_text, deadline=deadline, plan=plan)
    client = getattr(policy, "client", None) or llm
    if plan is None and policy.name != "offline" and client is not None and config.agent.plan_by_model:
        plan, note = plan_with_model(question, client, deadline)
        if plan is not None:
            run.plan = plan
        run.warn(note)
    started = time.perf_counter()
    ending = _Ending(policy)
    yield from _steps(run, ending, f"the time budget of {budget_s:g} s (RAG_LLM_TIME_BUDGET_S) ran out")
    yield _finish(run, ending, index, started)


def _stopped_step(run: AgentRun, policy: Policy, tool: str, reason: str, error: str, started: float) -> AgentStep:
    """The step recording why the loop could not go on (the time budget ran out, the LLM endpoint failed)."""
    context = run.context
    step = AgentStep(step=len(run.steps) + 1, policy=policy.name, reason=reason, tool=tool, args={}, ok=False,
                     error=error, threshold=run.threshold, context_tokens_in=context.tokens,
                     context_tokens_out=context.tokens, context_budget=context.capacity,
                     elapsed_ms=(time.perf_counter() - started) * 1000)
    run.steps.append(step)
    return step


def _steps(run: AgentRun, ending: _Ending, out_of_time: str) -> Iterator[AgentStep]:
    """The loop: ask the policy, run its tool, yield the step, until ``done``, no steps left or no time left.
    Records in ``ending`` the answer ``done`` gave (if any), the policy that gave it and why the loop stopped."""
    policy = ending.policy
    policy.begin(run)
    while run.steps_left > 0:
        step_started = time.perf_counter()
        if run.deadline is not None and time.monotonic() >= run.deadline:
            ending.stop_reason = f"{out_of_time} after {len(run.steps)} steps; answered from what was found"
            ending.fallback = ending.fallback or _time_fallback(run, out_of_time)
            break
        try:
            action = policy.next_action(run)
        except SwitchPolicy as switch:
            run.warn(switch.reason)
            policy = ending.policy = switch.policy
            policy.begin(run)
            continue
        except LLMOutOfTime as e:
            yield _stopped_step(run, policy, "out_of_time", "the question's time budget ran out", str(e), step_started)
            ending.stop_reason = f"{out_of_time} while waiting for the LLM; answered from what was found"
            ending.fallback = ending.fallback or _time_fallback(run, out_of_time)
            break
        except (LLMError, *MODEL_DATA_ERRORS) as e:
            if not isinstance(e, LLMError) and policy.name == "offline":
                raise  # a fault of ours: no model's reply is involved
            failure = str(e) if isinstance(e, LLMError) else f"unusable reply: {type(e).__name__}: {str(e)[:200]}"
            ending.fallback = f"LLM failed ({failure}); continued with the offline policy"
            if getattr(run.toolbox.retriever, "llm", None) is not None:
                # The LLM router would hit the same failing endpoint on every search: this question's retriever
                # goes on without it (the caller's keeps its own).
                run.toolbox.retriever = run.toolbox.retriever.with_llm(None)
            yield _stopped_step(run, policy, "fallback", "the LLM endpoint failed", failure, step_started)
            policy = ending.policy = OfflinePolicy()
            policy.begin(run)
            continue
        # The loop keeps what the policy decided about the question's parts (the tools rank within the focus).
        run.sub_queries = list(action.sub_queries) or run.sub_queries
        run.current_query = action.focus_query or run.current_query
        step, outcome = _execute(run, action, policy.name)
        step.elapsed_ms = (time.perf_counter() - step_started) * 1000
        run.steps.append(step)
        for note in action.notes:
            run.warn(note)
        if outcome is not None:
            policy.observe(run, action, outcome)
        yield step
        if action.tool == "done" and step.ok:
            done = DoneArgs.model_validate(step.args)
            ending.answer, ending.citations = done.answer, done.citations
            ending.attributed = [c for c in action.attributed if c in done.citations]
            ending.stop_reason = "done: " + action.reason
            ending.extractive = policy.name == "offline" or action.extractive
            ending.fallback = action.fallback or ending.fallback
            break


def _show_answer(run: AgentRun, answer: str, citations: list[str], note: str = "") -> None:
    """The timeline's last step shows the answer given, when it is ``done`` (``note`` added to its reason)."""
    if run.steps and run.steps[-1].tool == "done":
        run.steps[-1].args = {"answer": answer, "citations": citations}
        run.steps[-1].reason += note


def _finish(run: AgentRun, ending: _Ending, index: SearchIndex, started: float) -> AgentResult:
    """The result: the answer judged against what the context covers, re-quoted part by part when extractive,
    checked for grounding; the conversation state updated."""
    question, context, policy = run.question, run.context, ending.policy
    answer, citations, extractive, stop_reason = ending.answer, ending.citations, ending.extractive, ending.stop_reason
    if answer is None:
        if not stop_reason:
            stop_reason = f"out of steps ({run.max_steps}) before done; answered extractively from the context"
            if policy.name == "llm":
                stop_reason = f"the model never called done within {run.max_steps} steps; answered extractively"
        extracted = extractive_answer(question, context.hits, run.sub_queries)
        answer, citations, extractive = extracted.text, extracted.citations, True
    held = set(context.ids)
    unknown = [c for c in citations if c not in held]
    citations = [c for c in citations if c in held]
    if unknown:
        stop_reason += f"; dropped citations not in the context: {', '.join(unknown)}"
    down = next((s.route_reason for s in run.steps if VECTORS_DOWN in (s.route_reason or "")), "")
    if down:  # the searches answered by keyword alone (an embedding endpoint or Chroma server down): say so
        run.warn(down[down.index(VECTORS_DOWN):])
    plan = run.plan
    coverage, found, found_reason = judge_coverage(question, plan, context.hits, index)
    if found and answer.strip() == NOT_FOUND and context.hits:
        # No passage shares the question's words, but the evidence is relevant (a paraphrased question): quote the
        # best passages of the context rather than claim the documents are silent.
        extracted = extractive_answer(question, context.hits, run.sub_queries, min_score=0.0)
        answer, citations, extractive = extracted.text, extracted.citations, True
    if not found:
        if not extractive:
            run.warn(f"the model's answer was not shown: {found_reason}")
        answer, citations = not_found_answer(found_reason, context.hits), []
        extractive = True
        _show_answer(run, answer, [], f"; not found: {found_reason}")
    covered = covered_evidence(coverage, context.hits) if extractive and found else None
    if covered is not None and context.hits:
        # What a person reads: each part of the plan answered, in its order, by the units of its own evidence
        # that answer it (``answer.part_answer``), a part under the threshold saying so. The policy's answer (the
        # passages holding most of the question's words) quoted 0.172 of the FastAPI places at 1,500 tokens.
        embed, embedder = getattr(index, "embed_texts", None), embedder_id(index)
        quoted = part_answer(question, coverage, context.hits,
                             lambda queries, texts: text_relevance(queries, texts, embed, embedder),
                             threshold=PART_COVERED)
        if quoted.citations:
            answer, citations = quoted.text, quoted.citations
            # A question part under the threshold with no other to answer quotes its closest passages under a
            # heading that says so: they are its evidence, checked as such (each quote against the passage it cites).
            covered |= set(quoted.closest)
            _show_answer(run, answer, citations)
    checked = grounding_of(context, answer, found, extractive=extractive, covered=covered, question=question)
    attributed = [] if extractive else list(dict.fromkeys([*ending.attributed, *checked.attributed]))
    sources = citation_sources(citations, [c for c in citations if c not in attributed], attributed, extractive)
    state = run.state
    state.turns.append(Turn(question=question, answer=answer, citations=citations))
    state.queries.extend(q for q in run.queries if q not in state.queries)
    state.retrieved_ids.extend(i for i in run.retrieved_ids if i not in state.retrieved_ids)
    state.context_hits = list(context.hits)
    return AgentResult(
        question=question, answer=answer, citations=citations, steps=run.steps,
        context={**context.formatted().to_dict(), "trimmed": [  # chunks cut to their most relevant units (compress)
            {"chunk_id": h.chunk.id, "tokens": h.chunk.tokens, "trimmed_from": h.chunk.metadata["trimmed_from"],
             "units_kept": h.chunk.metadata.get("units_kept", "")}
            for h in context.hits if "trimmed_from" in h.chunk.metadata]},
        context_hits=list(context.hits), stop_reason=stop_reason, policy=policy.name, extractive=extractive,
        llm_tokens=sum(s.llm_tokens for s in run.steps), elapsed_ms=(time.perf_counter() - started) * 1000,
        dedup_saved_tokens=context.dedup_saved_tokens, dedup_saving_pct=context.dedup_saving_pct(),
        dedup_offered_tokens=context.offered_tokens, fallback=ending.fallback, grounded=checked.grounded,
        grounding=checked.reason,
        warnings=list(run.warnings), found=found, found_reason=found_reason, plan=plan.to_dict(),
        parts=[part.to_dict() for part in coverage], unsupported=checked.unsupported, citation_sources=sources,
    )


def _time_fallback(run: AgentRun, out_of_time: str) -> str:
    """The fallback of a run whose time budget ran out before the model answered (with a warning saying so)."""
    run.warn(f"the model's answer was not used: {out_of_time} before it answered")
    return f"{out_of_time} before the model answered; answered extractively from what was found"


def ask(question: str, index: SearchIndex, config: RAGConfig, settings: Settings | None = None,
        **kwargs: Any) -> AgentResult:
    """Run the agent to the end and return its ``AgentResult``."""
    result = None
    for event in run_agent(question, index, config, settings, **kwargs):
        result = event
    assert isinstance(result, AgentResult)
    return result


def _execute(run: AgentRun, action: Action, policy_name: str) -> tuple[AgentStep, ToolOutcome | None]:
    """Run ``action`` under the loop's rules; returns its step and the tool outcome."""
    context = run.context
    step = AgentStep(step=len(run.steps) + 1, policy=policy_name, reason=action.reason, tool=action.tool,
                     args=action.args if isinstance(action.args, dict) else {"_raw": action.args},
                     threshold=run.threshold, context_tokens_in=context.tokens, context_budget=context.capacity,
                     llm_tokens=action.llm_tokens, llm_retries=list(action.llm_retries))
    outcome = _guarded_outcome(run, action)
    if outcome is None:
        excluded = run.retrieved_ids + run.state.retrieved_ids if action.exclude_retrieved else []
        outcome = run.toolbox.execute(action.tool, action.args, exclude_ids=excluded,
                                      previous_queries=run.state.queries + run.queries,
                                      focus_query=run.current_query or run.question)
    step.ok, step.error, step.repairs = outcome.ok, outcome.error, action.repairs + outcome.repairs
    step.observation = outcome.observation
    if outcome.ok:
        step.args = outcome.args
    if outcome.ok and action.tool == "search":
        run.retrievals += 1
        run.queries.append(outcome.args["query"])
        describe_retrieval(step, outcome)
    searched = outcome.ok and outcome.retrieval is not None
    if searched:
        # The retriever de-duplicates its hits against the held context: what it removed, out of all it found,
        # is part of the agent's saving (material offered = found before de-dup).
        for drop in outcome.retrieval.dedup.dropped:
            step.dedup_removed.append({"chunk_id": drop.chunk_id, "tokens": drop.tokens, "step": "dedup",
                                       "reason": drop.reason})
            context.dedup_saved_tokens += drop.tokens
        context.offered_tokens += outcome.retrieval.dedup.tokens_saved + sum(
            h.chunk.tokens for h in outcome.retrieval.hits)
    if outcome.ok and action.tool in RETRIEVAL_TOOLS:
        score = max((h.confidence for h in context.hits), default=0.5)
        report = context.add(_to_hits(outcome, run.toolbox, score), replaces=outcome.replaces,
                             count_offered=not searched)
        run.retrieved_ids.extend(c.id for c in outcome.chunks if c.id not in run.retrieved_ids)
        step.added, step.replaced = report.added, report.replaced
        step.dedup_removed += report.removed
        step.granularity = step.granularity or outcome.info.get("granularity")
    step.context_tokens_out = context.tokens
    return step, outcome


def _guarded_outcome(run: AgentRun, action: Action) -> ToolOutcome | None:
    """The loop's own refusals (budget, repeats, bad done) as tool errors; None when the tool may run."""
    args = action.args if isinstance(action.args, dict) else {"_raw": action.args}
    if action.tool == "none":  # the model's reply held no tool call: the reason says what it held
        return ToolOutcome.failure("none", args, action.reason)
    if action.tool == "done":
        try:
            done, repairs = validate_arguments("done", action.args)
        except ToolArgumentError as e:
            return ToolOutcome.failure("done", args, str(e))
        return ToolOutcome(tool="done", args=done.model_dump(), ok=True, observation="Answer recorded.",
                           repairs=repairs)
    if action.tool == "search":
        if run.retrievals >= run.config.agent.max_retrievals:
            return ToolOutcome.failure("search", args, f"retrieval budget used ({run.config.agent.max_retrievals} "
                                       "searches); answer from the context with done")
        try:
            parsed, _ = validate_arguments("search", action.args)
        except ToolArgumentError:
            return None  # the tool reports the argument error itself
        key = (" ".join(parsed.query.lower().split()), parsed.granularity, parsed.focus_area)
        if key in run.searched:
            return ToolOutcome.failure("search", args, f"already searched for {parsed.query!r} at {parsed.granularity} "
                                       "granularity in this turn; rephrase, change granularity, zoom, or call done")
        run.searched.add(key)
    return None


def describe_retrieval(step: AgentStep, outcome: ToolOutcome) -> None:
    """Fill ``step`` with what the timeline shows of a search (also for the MCP server's call log)."""
    result = outcome.retrieval
    step.route, step.route_reason, step.intent = result.route, result.route_reason, result.intent
    step.confidence = round(float(result.confidence), 4)
    step.k_by_iteration = [it.k for it in result.iterations]
    step.confidence_by_iteration = [round(float(it.confidence), 4) for it in result.iterations]
    step.k = step.k_by_iteration[-1] if step.k_by_iteration else len(outcome.hits)
    step.filters = dict(result.iterations[-1].filters) if result.iterations else {}
    step.granularity = outcome.args.get("granularity")
    step.hits = [{"chunk_id": h.chunk.id, "doc_id": h.chunk.doc_id, "source": h.source_name,
                  "heading": h.chunk.heading, "granularity": h.chunk.granularity, "chunk_type": h.chunk.chunk_type,
                  "tokens": h.chunk.tokens, "score": round(float(h.score), 6),
                  "confidence": round(float(h.confidence), 4)} for h in outcome.hits]
