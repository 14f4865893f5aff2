"""Agent Playground: chat with the agent and watch every step — route, k, confidence, zoom, de-dup, tokens."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit.errors import StreamlitAPIException

from rag_core.agent import AgentResult, AgentState, run_agent
from rag_core.agent.answer import NOT_FOUND
from rag_core.types import POLICY_NAMES
from ui import agent_text, state
from ui.router import through_app
from ui.state import KEEP
from ui.text import md_escape, md_inert, safe_markdown

through_app()

CHAT_KEY, STATE_KEY, COMPARE_KEY, POLICY_KEY = "agent_chat", "agent_state", "agent_compare", "agent_policy"
LLM_HELP = ("No LLM is configured, so the **offline policy** is used (deterministic, extractive answers). To use a "
            "model, set `RAG_LLM_BASE_URL` (e.g. `http://127.0.0.1:11434/v1`), `RAG_LLM_API_KEY` and `RAG_LLM_MODEL`, "
            "then restart the app.")
POLICIES = list(POLICY_NAMES)
POLICY_HELP = ("**offline**: a deterministic planner, extractive answers. **llm**: the model calls the search tools "
               "itself (needs a model that calls tools). **llm-answer**: the offline planner retrieves and the model "
               "only writes the cited answer (for small local models; chosen automatically when the model cannot "
               "call tools).")


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def step_label(step, index) -> str:
    """``Step 2 · Searched sections for “…” · 41 ms`` (the raw call is shown inside the step)."""
    return (f"Step {step.step} · {agent_text.step_title(step, index)} · {step.elapsed_ms:.0f} ms"
            + ("" if step.ok else " · failed"))


def render_step(step, box) -> None:
    """Everything about one step, inside ``box`` (an ``st.status`` or expander)."""
    box.markdown(f"**Why:** {md_escape(step.reason)}")
    box.code(agent_text.raw_call(step), language=None)
    if step.error:
        box.error(md_inert(step.error))
    facts = []
    if step.route:
        facts.append(f"route **{step.route}** ({md_escape(step.route_reason or '')})")
    if step.k_by_iteration:
        facts.append(f"k {' → '.join(map(str, step.k_by_iteration))}")
    if step.confidence is not None:
        verdict = "≥" if step.confidence >= step.threshold else "<"
        facts.append(f"confidence {step.confidence:.2f} {verdict} threshold {step.threshold:.2f}")
    if step.granularity:
        facts.append(f"granularity **{step.granularity}**")
    if step.filters:
        facts.append(f"filters {md_escape(step.filters)}")
    facts.append(f"context {step.context_tokens_in} → {step.context_tokens_out} of {step.context_budget} tokens")
    if step.llm_tokens:
        facts.append(f"LLM tokens {step.llm_tokens}")
    box.markdown(" · ".join(facts))
    for retry in step.llm_retries:
        box.caption(f"retry: {md_inert(retry)}")
    if step.hits:
        box.dataframe(pd.DataFrame(step.hits)[["confidence", "score", "source", "heading", "granularity", "tokens",
                                              "chunk_id"]], hide_index=True)
    removed = step.dedup_removed + step.replaced
    if removed:
        box.caption("Removed from the context: " + md_inert("; ".join(
            f"{r['chunk_id']} ({r['tokens']} tok): {r['reason']}" for r in removed)))


class AnswerStream:
    """The final answer shown as the model writes it (``llm-answer``), below the steps, until the result is drawn."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.box = None

    def add(self, piece: str) -> None:
        if self.box is None:
            self.box = st.empty()
        self.pieces.append(piece)
        self.box.markdown(safe_markdown("".join(self.pieces)) + " ▌")

    def clear(self) -> None:
        if self.box is not None:
            self.box.empty()


def confidence_figure(result: AgentResult) -> go.Figure:
    """Confidence per retrieval iteration against the threshold the run used (not today's slider value)."""
    threshold = next(s.threshold for s in result.steps if s.confidence_by_iteration)
    points = [(f"s{s.step}·i{i}", c, k) for s in result.steps for i, (c, k) in
              enumerate(zip(s.confidence_by_iteration, s.k_by_iteration, strict=False), start=1)]
    figure = go.Figure(go.Scatter(x=[p[0] for p in points], y=[p[1] for p in points], mode="lines+markers",
                                  text=[f"k={p[2]}" for p in points], name="confidence"))
    figure.add_trace(go.Bar(x=[p[0] for p in points], y=[p[2] / 20 for p in points], name="k (÷20)", opacity=0.3))
    figure.add_hline(y=threshold, line_dash="dash", line_color="red", annotation_text=f"threshold {threshold}")
    figure.update_layout(height=250, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis_range=[0, 1.05],
                         xaxis_title="step · retrieval iteration", yaxis_title="confidence")
    return figure


def gauge(tokens: int, budget: int) -> go.Figure:
    figure = go.Figure(go.Indicator(mode="gauge+number", value=tokens, number={"suffix": f" / {budget}"},
                                    title={"text": "context tokens", "font": {"size": 14}},
                                    gauge={"axis": {"range": [0, budget]}, "threshold": {"value": budget}}))
    figure.update_layout(height=220, margin={"l": 40, "r": 40, "t": 50, "b": 0})
    return figure


def citation_label(source_name: str, heading: str, limit: int = 32) -> tuple[str, str]:
    """A short button label (the document and its innermost heading, cut with an ellipsis) and the full
    ``source › heading path`` for the button's tooltip. Names and headings are shown as written."""
    full = f"{source_name} › {heading}" if heading else source_name
    inner = heading.rsplit(" › ", 1)[-1] if heading else ""
    short = _short(source_name, limit) + (f" › {_short(inner, limit)}" if inner else "")
    return md_escape(short), md_escape(full)


def render_answer(result: AgentResult, turn: int, index) -> None:
    """The answer (sources named, not chunk ids), its clickable citations (one short button each, flowing onto
    new lines) and how it stopped."""
    if result.fallback:
        st.warning(f"The LLM endpoint failed; the offline policy answered instead. {md_inert(result.fallback)}")
    for note in result.warnings:
        st.info(md_inert(note))
    if not result.grounded and result.answer.strip() != NOT_FOUND:  # "not found" is an honest answer
        st.warning(f"**Ungrounded answer** ({md_inert(result.grounding)}): it is not backed by a retrieved passage; "
                   "check the documents before relying on it.")
    st.markdown(agent_text.readable_answer(result.answer, index))  # sources named; no images, HTML or odd links
    by_id = {h.chunk.id: h for h in result.context_hits}
    with st.container(horizontal=True, gap="small"):
        for chunk_id in result.citations:
            hit = by_id[chunk_id]
            label, full = citation_label(hit.source_name, hit.chunk.heading)
            if st.button(f"📎 {label}", key=f"cite-{turn}-{chunk_id}",
                         help=f"{full}\n\nOpen chunk `{chunk_id}` in the Chunk Explorer"):
                try:
                    state.goto("explorer", doc_id=hit.chunk.doc_id, chunk_id=chunk_id)
                except StreamlitAPIException:  # page not registered (e.g. this page run on its own)
                    st.info(f"Open the Chunk Explorer: chunk `{chunk_id}` of {md_escape(hit.source_name)} is "
                            "pre-selected there.")
    st.caption(f"Stopped: {md_inert(result.stop_reason)} · {md_inert(result.grounding)} · {len(result.steps)} steps · "
               f"{result.elapsed_ms:.0f} ms · "
               f"de-dup kept {result.dedup_saved_tokens} tokens out ({result.dedup_saving_pct:.0f}% of new material)")


def render_details(result: AgentResult, turn: int) -> None:
    """The confidence chart and token gauge, the context receipt and the export button (full width when
    compared: squeezed into half a page the gauge's title was clipped)."""
    left, right = st.columns([2, 1])
    if any(s.confidence_by_iteration for s in result.steps):
        left.plotly_chart(confidence_figure(result), key=f"conf-{turn}")
    right.plotly_chart(gauge(result.context_tokens, result.context.get("budget", 0) or 1), key=f"gauge-{turn}")
    with st.expander("Context receipt: exactly what the model saw"):
        st.code(result.context_text or "(empty context)", language=None)
    st.download_button("Export trace (JSON)", result.to_json(), file_name=f"agent-trace-{turn}.json",
                       mime="application/json", key=f"export-{turn}")


def one_shot(question: str, index, config):
    """One-shot top-5 hybrid RAG on the same question (None, with a message, when it fails)."""
    from rag_core.retrieval.dynamic import Retriever

    retrieval = config.retrieval.one_shot()
    return state.guarded(lambda: Retriever(index, retrieval, state.settings()).retrieve(question), "One-shot RAG")


def render_one_shot(question: str, result, index) -> None:
    """The one-shot result answered by the same extractive answerer as the offline agent."""
    from rag_core.agent.answer import EXTRACTIVE_NOTE, extractive_answer

    answer = extractive_answer(question, result.hits).text.replace(EXTRACTIVE_NOTE, "*Extractive answer:*")
    st.markdown(agent_text.readable_answer(answer, index))
    st.caption(f"1 retrieval · {len(result.hits)} chunks · {result.context.tokens} context tokens · "
               f"confidence {result.confidence:.2f} · {result.elapsed_ms:.0f} ms")
    with st.expander("One-shot context"):
        st.code(result.context.text or "(empty)", language=None)


# Side by side, a Markdown table in an answer ran past its half of the page ("Descr…", "Postg…"): tables in chat
# messages take the message's width and wrap their cells instead.
FIT_TABLES_CSS = ("<style>[data-testid='stChatMessage'] table{table-layout:fixed;width:100%}"
                  "[data-testid='stChatMessage'] th,[data-testid='stChatMessage'] td{overflow-wrap:anywhere}</style>")


def turn_layout(question: str, compared: bool, policy: str):
    """The user's message, then the one-shot column (or None), the agent's message box, and where the agent's
    charts and receipt go: inside its message, or below both columns at full width when compared."""
    st.chat_message("user").markdown(md_escape(question))
    if not compared:
        answer_box = st.chat_message("assistant")
        return None, answer_box, answer_box
    left, right = st.columns(2)
    left.subheader("One-shot RAG (top-5 hybrid)")
    right.subheader(f"Agent ({policy} policy)")
    return left, right.chat_message("assistant"), st.container()


st.title("🤖 Agent Playground")
st.html(FIT_TABLES_CSS)
config = state.active_config()
settings = state.settings()
prefill = state.take_prefill("agent")
if prefill.get("compare"):
    st.session_state[COMPARE_KEY] = True
with st.sidebar:
    st.subheader("Agent")
    llm_ready = settings.llm_configured
    # Every choice here is kept when the user visits another page and comes back (persist_state=KEEP).
    policy = st.radio("Policy", POLICIES, key=POLICY_KEY, horizontal=True, persist_state=KEEP, help=POLICY_HELP,
                      index=POLICIES.index(config.agent.policy) if llm_ready else 0, disabled=not llm_ready)
    if not llm_ready:
        st.info(LLM_HELP)
    knobs = {"max_steps": st.slider("Max steps", 1, 15, config.agent.max_steps, key="agent_max_steps",
                                    persist_state=KEEP),
             "max_retrievals": st.slider("Max searches", 1, 10, config.agent.max_retrievals,
                                         key="agent_max_retrievals", persist_state=KEEP),
             "context_budget": st.slider("Context budget (tokens)", 200, 8000, config.agent.context_budget, 100,
                                         key="agent_context_budget", persist_state=KEEP),
             "policy": policy}
    threshold = st.slider("Min confidence", 0.0, 1.0, config.retrieval.min_confidence, 0.05,
                          key="agent_min_confidence", persist_state=KEEP)
    compare = st.toggle("Side by side: one-shot RAG vs agent", key=COMPARE_KEY, persist_state=KEEP)
    if st.button("New conversation"):
        st.session_state[CHAT_KEY], st.session_state[STATE_KEY] = [], AgentState()
config = config.model_copy(update={"agent": config.agent.model_copy(update=knobs),
                                   "retrieval": config.retrieval.model_copy(update={"min_confidence": threshold})})
# The chat and the new question render first; the index (and its embedding model) loads after them.
asked = st.chat_input("Ask about your documents") or prefill.get("question")
chat = st.session_state.setdefault(CHAT_KEY, [])
# Earlier turns name their sources through the index they searched (already open, so this costs nothing).
earlier_index = state.guarded(lambda: state.index_for(config), "Opening the index") if chat else None
for turn, (question, result, *baseline) in enumerate(chat):  # earlier turns, one-shot side kept when compared
    baseline = baseline[0] if baseline else None
    one_shot_box, answer_box, details_box = turn_layout(question, baseline is not None, result.policy)
    if baseline is not None:
        with one_shot_box:
            render_one_shot(question, baseline, earlier_index)
    with answer_box:
        for step in result.steps:
            render_step(step, st.expander(("✅ " if step.ok else "⚠️ ") + step_label(step, earlier_index)))
        render_answer(result, turn, earlier_index)
    with details_box:
        render_details(result, turn)
if asked:
    one_shot_box, answer_box, details_box = turn_layout(asked, compare, policy)
index = state.guarded(lambda: state.index_for(config), "Opening the index")
counts = state.guarded(index.count, "Counting chunks") if index is not None else None
if counts is not None and not any(counts.values()):
    st.info(state.empty_index_message())
if asked and counts is None:  # the index could not be opened or read: the error is shown above
    answer_box.warning("The index is unavailable (see the error above), so the agent could not search. "
                       f"Ask again once it is back: “{md_escape(asked)}”")
elif asked and not any(counts.values()):
    answer_box.warning("There is nothing to search yet: load documents on the Documents page, then ask again.")
elif asked:
    baseline = None
    if compare:
        with one_shot_box:
            baseline = one_shot(asked, index, config)
            if baseline is not None:
                render_one_shot(asked, baseline, index)
    with answer_box:
        conversation = st.session_state.setdefault(STATE_KEY, AgentState())
        llm = state.llm() if policy != "offline" else None

        def _run():
            final = None
            live = AnswerStream()
            with st.spinner("The agent is working…"):  # a step (an LLM call, its retries) can take seconds
                for event in run_agent(asked, index, config, settings, policy=policy, state=conversation, llm=llm,
                                       on_answer_text=live.add):
                    if isinstance(event, AgentResult):
                        final = event
                    else:
                        box = st.status(step_label(event, index), state="complete" if event.ok else "error",
                                        expanded=False)
                        render_step(event, box)
            live.clear()  # the finished answer, with its citations, is drawn in its place
            return final

        result = state.guarded(_run, "The agent")
        if result is not None:
            render_answer(result, len(chat), index)
    if result is not None:
        with details_box:
            render_details(result, len(chat))
        chat.append((asked, result, baseline))
