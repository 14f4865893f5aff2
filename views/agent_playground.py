"""Agent Playground: chat with the agent and watch every step — route, k, confidence, zoom, de-dup, tokens; and
the calls external agents make over MCP (Connected agents)."""

from __future__ import annotations

import streamlit as st

from rag_core.agent import AgentState
from rag_core.config import field_bounds
from rag_core.types import POLICY_NAMES
from ui import engineer, state
from ui.agent import agent_view, mcp_view
from ui.safe_text import md_escape
from ui.state import KEEP

CHAT_KEY, STATE_KEY, COMPARE_KEY, POLICY_KEY = "agent_chat", "agent_state", "agent_compare", "agent_policy"
LLM_HELP = ("No LLM is configured, so the **offline policy** is used (deterministic, extractive answers). To use a "
            "model, set `RAG_LLM_BASE_URL` (e.g. `http://127.0.0.1:11434/v1`), `RAG_LLM_API_KEY` and `RAG_LLM_MODEL`, "
            "then restart the app.")
POLICIES = list(POLICY_NAMES)
POLICY_HELP = ("**offline**: a deterministic planner, extractive answers. **llm**: the model calls the search tools "
               "itself (needs a model that calls tools). **llm-answer**: the offline planner retrieves and the model "
               "only writes the cited answer (for small local models; chosen automatically when the model cannot "
               "call tools).")

st.title(":material/smart_toy: Agent Playground")
st.html(agent_view.FIT_TABLES_CSS)
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
    # The bounds are the fields' own (AgentConfig, RetrievalConfig), not a second copy.
    knobs = {"max_steps": st.slider("Max steps", *field_bounds("agent.max_steps"), config.agent.max_steps,
                                    key="agent_max_steps", persist_state=KEEP),
             "max_retrievals": st.slider("Max searches", *field_bounds("agent.max_retrievals"),
                                         config.agent.max_retrievals, key="agent_max_retrievals", persist_state=KEEP),
             "context_budget": st.slider("Context budget (tokens)", *field_bounds("agent.context_budget"),
                                         config.agent.context_budget, 100, key="agent_context_budget",
                                         persist_state=KEEP),
             "policy": policy}
    threshold = st.slider("Min confidence", *field_bounds("retrieval.min_confidence"),
                          config.retrieval.min_confidence, 0.05,
                          key="agent_min_confidence", persist_state=KEEP)
    compare = st.toggle("Side by side: one-shot RAG vs agent", key=COMPARE_KEY, persist_state=KEEP)
    knobs["trim_chunks"] = st.toggle(
        "Trim chunks to fit more places", value=config.agent.trim_chunks, key="agent_trim_chunks",
        persist_state=KEEP, help="A question in several parts gathers more than the context holds: keep each "
        "chunk's most relevant sentences (table rows with their header, list items, code whole) instead of leaving "
        "whole chunks out. Off: whole chunks only.")
    engineer.toggle()  # result counts, filters, token accounting, raw scores and chunk ids in the steps
    if st.button("New conversation"):
        st.session_state[CHAT_KEY], st.session_state[STATE_KEY] = [], AgentState()
config = config.model_copy(update={"agent": config.agent.model_copy(update=knobs),
                                   "retrieval": config.retrieval.model_copy(update={"min_confidence": threshold})})
# The chat and the new question render first; the index (and its embedding model) loads after them.
asked = st.chat_input("Ask about your documents") or prefill.get("question")
chat = st.session_state.setdefault(CHAT_KEY, [])
# Earlier turns name their sources through the index they searched (already open, so this costs nothing).
earlier_index = state.guarded(lambda: state.index_for(config), "Opening the index") if chat else None
for turn, (question, result, *one_shot_side) in enumerate(chat):  # earlier turns; one-shot side kept if compared
    agent_view.render_turn(turn, question, result, earlier_index, *one_shot_side)
if asked:
    one_shot_box, answer_box, details_box = agent_view.turn_layout(asked, compare, policy)
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
    baseline = coverage = parts_box = None
    if compare:
        with one_shot_box:
            baseline = agent_view.one_shot(asked, index, config)
            if baseline is not None:  # its answer; the parts of the agent's plan it missed come once the agent ran
                parts_box = agent_view.render_one_shot(asked, baseline, index)
    with answer_box:
        conversation = st.session_state.setdefault(STATE_KEY, AgentState())
        llm = state.llm() if policy != "offline" else None
        result = state.guarded(lambda: agent_view.run_live(asked, index, config, settings, policy, conversation, llm),
                               "The agent")
        if result is not None:
            agent_view.render_answer(result, len(chat), index)
    if baseline is not None:  # the agent's parts (a model's when it planned), or the rules' if the agent failed
        coverage = agent_view.render_one_shot_parts(parts_box, asked, baseline, index,
                                                    result.plan if result is not None else None)
    if result is not None:
        with details_box:
            agent_view.render_details(result, len(chat))
        chat.append((asked, result, baseline, coverage))
mcp_view.render()  # Connected agents: external agents' MCP calls, live, and the hand-over panel
