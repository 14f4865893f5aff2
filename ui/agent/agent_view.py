"""Agent Playground renderers: each step, the answer with its citations, the confidence chart and token gauge,
the one-shot baseline beside it, and the live run."""

from __future__ import annotations

import time

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import rag_core.agent
from rag_core.agent import AgentResult, AgentState
from rag_core.agent.answer import NOT_FOUND
from ui import engineer, explorer_link, state
from ui.agent import agent_grounding_view, agent_plan_view, agent_text
from ui.safe_text import md_escape, md_inert, safe_markdown


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
    render_step_facts(step, box)


def render_step_facts(step, box) -> None:
    """What a step found, inside ``box``: the facts line (route, relevance against the threshold, granularity;
    results asked, filters and tokens held for engineers), retries, the hits table and what left the context. The
    Connected agents view draws an MCP client's calls with it too (``ui.agent.mcp_view``)."""
    details = engineer.shown()  # result counts, filters, token accounting, raw scores and ids: engineer details
    facts = []
    if step.route:
        facts.append(f"route **{step.route}** ({md_escape(step.route_reason or '')})")
    if step.k_by_iteration and details:
        facts.append(f"results asked {' → '.join(map(str, step.k_by_iteration))}")
    if step.confidence is not None:
        verdict = "≥" if step.confidence >= step.threshold else "<"
        facts.append(f"relevance {step.confidence:.2f} {verdict} threshold {step.threshold:.2f}")
    if step.granularity:
        facts.append(f"granularity **{step.granularity}**")
    if step.filters and details:
        facts.append(f"filters {md_escape(step.filters)}")
    if details and step.context_budget:  # an agent's step (an MCP call holds no context of the agent's)
        # While it searches the agent may hold more than its final budget (it trims when it answers).
        facts.append(f"held {step.context_tokens_in} → {step.context_tokens_out} tokens "
                     f"(room while searching {step.context_budget})")
    if step.llm_tokens:
        facts.append(f"LLM tokens {step.llm_tokens}")
    box.markdown(" · ".join(facts))
    for retry in step.llm_retries:
        box.caption(f"retry: {md_inert(retry)}")
    if step.hits:
        columns = ["confidence", "score", "source", "heading", "granularity", "tokens", "chunk_id"] if details \
            else ["confidence", "source", "heading"]
        box.dataframe(pd.DataFrame(step.hits)[columns].rename(columns={"confidence": "relevance"}),
                      hide_index=True)
    removed = step.dedup_removed + step.replaced
    if removed:
        box.caption("Removed from the context: " + md_inert("; ".join(
            f"{r['chunk_id']} ({r['tokens']} tok): {r['reason']}" for r in removed)))


class AnswerStream:
    """The final answer shown as the model writes it (``llm-answer``), below the steps, until the result is drawn."""

    # Redrawn at most this often: each redraw renders the whole answer so far, so redrawing on every piece made a
    # long answer cost time quadratic in its length.
    REDRAW_S = 0.25

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.box = None
        self.drawn_at = 0.0

    def add(self, piece: str) -> None:
        if self.box is None:
            self.box = st.empty()
        self.pieces.append(piece)
        now = time.monotonic()
        if now - self.drawn_at >= self.REDRAW_S:
            self.drawn_at = now
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
                                  text=[f"k={p[2]}" for p in points], name="relevance"))
    if engineer.shown():  # how many results each iteration asked for, on its own axis
        figure.add_trace(go.Bar(x=[p[0] for p in points], y=[p[2] for p in points], name="results asked",
                                opacity=0.3, yaxis="y2"))
        figure.update_layout(yaxis2={"overlaying": "y", "side": "right", "title": "results asked",
                                     "rangemode": "tozero", "tickformat": "d"})
    figure.add_hline(y=threshold, line_dash="dash", line_color="red", annotation_text=f"threshold {threshold}")
    figure.update_layout(height=250, margin={"l": 10, "r": 10, "t": 30, "b": 10}, yaxis_range=[0, 1.05],
                         xaxis_title="step · retrieval iteration", yaxis_title="relevance")
    return figure


def gauge(tokens: int, budget: int) -> go.Figure:
    figure = go.Figure(go.Indicator(mode="gauge+number", value=tokens, number={"suffix": f" / {budget}"},
                                    title={"text": "context tokens", "font": {"size": 14}},
                                    gauge={"axis": {"range": [0, budget]}, "threshold": {"value": budget}}))
    figure.update_layout(height=220, margin={"l": 40, "r": 40, "t": 50, "b": 0})
    return figure


def chunk_buttons(hits, turn: int, key: str, prefix: str = "", note: str = "") -> None:
    """One short button per chunk (document › heading, flowing onto new lines) that opens it in the Chunk
    Explorer; the full source and heading path in its tooltip."""
    with st.container(horizontal=True, gap="small"):
        for hit in hits:
            chunk_id = hit.chunk.id
            label, full = agent_text.citation_label(hit.source_name, hit.chunk.heading)
            if st.button(f"{prefix}{label}", key=f"{key}-{turn}-{chunk_id}",
                         help=f"{note}{full}\n\nOpen chunk `{chunk_id}` in the Chunk Explorer"):
                explorer_link.open_hit(hit)  # on Source, with the index's settings (a web result: its address)


def render_answer(result: AgentResult, turn: int, index) -> None:
    """The answer (sources named, not chunk ids), its clickable citations and how it stopped; the plan and its
    checklist for a question in several parts; for a question the documents do not answer, a banner and the
    closest places instead of an answer."""
    found = getattr(result, "found", True)  # a result kept from before "not found" existed
    agent_grounding_view.render_fallback(result)
    for note in result.warnings:
        st.info(md_inert(note))
    if not found:
        agent_plan_view.render_not_found(result)
    elif not result.grounded and result.answer.strip() != NOT_FOUND:  # "not found" is an honest answer
        agent_grounding_view.render_not_grounded(result)
    agent_plan_view.render_plan(result, index)
    if found:
        # sources named (web results too); no images, HTML or odd links
        st.markdown(agent_text.readable_answer(result.answer, index, result.context_hits))
        by_id = {h.chunk.id: h for h in result.context_hits}
        cited, attributed = agent_grounding_view.split_citations(result)
        chunk_buttons([by_id[c] for c in cited], turn, "cite", prefix=":material/attach_file: ")
        if attributed:  # found by word overlap, not cited by the model: labelled, never shown as its own
            st.caption("Matched by word overlap (the model did not cite these):")
            chunk_buttons([by_id[c] for c in attributed], turn, "overlap", prefix="≈ ",
                          note="Attributed by word overlap, not cited by the model: ")
    elif result.context_hits:
        st.caption(":material/near_me: **Closest places found: closest, not an answer**")
        chunk_buttons(result.context_hits[: agent_plan_view.CLOSEST], turn, "closest",
                      note="Closest, not an answer: ")
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
    trimmed = result.context.get("trimmed", [])  # what the loop recorded (rag_core.agent.compress)
    if trimmed:  # a question of several parts: more places, fewer sentences each
        saved = sum(t["trimmed_from"] - t["tokens"] for t in trimmed)
        st.caption(f":material/content_cut: {len(trimmed)} of {len(result.context_hits)} chunks trimmed to their most "
                   f"relevant sentences so more places fit ({saved} tokens left out; `[…]` marks a cut)")
    with st.expander("Context receipt: exactly what the model saw"):
        st.code(result.context_text or "(empty context)", language=None)
    st.download_button("Export trace (JSON)", result.to_json(), file_name=f"agent-trace-{turn}.json",
                       mime="application/json", key=f"export-{turn}")


def one_shot(question: str, index, config):
    """One-shot top-5 hybrid RAG on the same question (None, with a message, when it fails); the same baseline
    the guided demo compares the agent with when it picks its question."""
    retrieval = config.retrieval.one_shot()
    with st.spinner("One-shot search: one hybrid search for the top 5 chunks…"):
        return state.guarded(lambda: state.retriever(index, retrieval).retrieve(question), "One-shot RAG")


def render_one_shot(question: str, result, index, coverage: list[dict] | None = None):
    """The one-shot result answered by the same extractive answerer as the offline agent, and where the parts of
    the question its context misses go: drawn from ``coverage`` (kept with an earlier turn) when given, else left
    for ``render_one_shot_parts`` once the agent has planned (a model may plan other parts than the rules).
    Returns that place."""
    from rag_core.agent.answer import EXTRACTIVE_NOTE, extractive_answer

    answer = extractive_answer(question, result.hits).text.replace(EXTRACTIVE_NOTE, "*Extractive answer:*")
    st.markdown(agent_text.readable_answer(answer, index, result.hits))
    parts_box = st.container()
    if coverage is not None:
        with parts_box:
            agent_plan_view.render_one_shot_parts(coverage)
    st.caption(f"1 retrieval · {len(result.hits)} chunks · {result.context.tokens} context tokens · "
               f"confidence {result.confidence:.2f} · {result.elapsed_ms:.0f} ms")
    with st.expander("One-shot context"):
        st.code(result.context.text or "(empty)", language=None)
    return parts_box


def render_one_shot_parts(parts_box, question: str, baseline, index, plan: dict | None) -> list[dict] | None:
    """Into ``parts_box`` (``render_one_shot``'s), the parts of the agent's plan the one-shot context misses;
    returns that coverage, kept with the turn."""
    with parts_box:
        coverage = agent_plan_view.one_shot_coverage(question, baseline.hits, index, plan)
        agent_plan_view.render_one_shot_parts(coverage)
    return coverage


# Side by side, a Markdown table in an answer ran past its half of the page ("Descr…", "Postg…"), and the one-shot
# column's table with a long "description" column ran into the agent's step list: tables in chat messages and in
# columns take their box's width and wrap their cells instead, and what still does not fit (a long code name)
# scrolls inside its own column.
_FITTED = ("[data-testid='stChatMessage']", "[data-testid='stColumn']")
FIT_TABLES_CSS = ("<style>" + ",".join(f"{box} table" for box in _FITTED) + "{table-layout:fixed;width:100%}"
                  + ",".join(f"{box} th,{box} td" for box in _FITTED) + "{overflow-wrap:anywhere}"
                  "[data-testid='stColumn']{min-width:0}"
                  "[data-testid='stColumn'] [data-testid='stMarkdownContainer']{overflow-x:auto}</style>")


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


def run_live(question: str, index, config, settings, policy: str, conversation: AgentState, llm):
    """Run the agent, each step drawn as a status box as it ends and the answer as the model writes it; the
    result (None when the run ends without one)."""
    final = None
    live = AnswerStream()
    # rag_core.agent.run_agent read at call time (tests wrap it).
    # a step (an LLM call, its retries) can take seconds: say so while the steps stream in below
    with st.spinner(f"The agent ({policy} policy) is working: it searches, zooms and reads, then answers; "
                    "each step appears here as it happens…"):
        for event in rag_core.agent.run_agent(question, index, config, settings, policy=policy, state=conversation,
                                              llm=llm, on_answer_text=live.add):
            if isinstance(event, AgentResult):
                final = event
            else:
                box = st.status(step_label(event, index), state="complete" if event.ok else "error", expanded=False)
                render_step(event, box)
    live.clear()  # the finished answer, with its citations, is drawn in its place
    return final


def render_turn(turn: int, question: str, result: AgentResult, index, baseline=None, coverage=None) -> None:
    """An earlier turn: the question, the one-shot side when it was compared (with the parts it missed), the
    steps, answer and details."""
    one_shot_box, answer_box, details_box = turn_layout(question, baseline is not None, result.policy)
    if baseline is not None:
        with one_shot_box:
            parts_box = render_one_shot(question, baseline, index, coverage)
        if coverage is None and index is not None:  # not kept with the turn (it could not be scored then)
            render_one_shot_parts(parts_box, question, baseline, index, getattr(result, "plan", None))
    with answer_box:
        for step in result.steps:
            icon = ":material/check_circle:" if step.ok else ":material/warning:"
            render_step(step, st.expander(step_label(step, index), icon=icon))
        render_answer(result, turn, index)
    with details_box:
        render_details(result, turn)
