"""Agent Playground › Connected agents: the tool calls external agents make over MCP (live, from the call log),
each returned chunk opening in the Chunk Explorer; and the hand-over panel (command, client configuration snippet,
**Test the server**)."""

from __future__ import annotations

import json
import shlex
from datetime import datetime

import streamlit as st

from rag_core.agent.agent_types import AgentStep
from rag_core.agent.tools import TOOLS
from rag_core.mcp_server.calllog import read_calls
from rag_core.mcp_server.handover import (
    ServerCheck,
    check_server,
    client_config_json,
    http_client_config,
    shell_command,
)
from ui import costly, explorer_link, jobs, state
from ui.agent import agent_text, agent_view
from ui.safe_text import md_escape, md_inert

REFRESH_S = 2.0
SHOWN = 30
ALL_CLIENTS = "all clients"
CLIENT_KEY, CHECK_KEY, QUERY_KEY, CONFIG_KEY = "mcp_client", "mcp_check", "mcp_check_query", "mcp_handover_config"
LONG_BUILD_KEY = "mcp_long_build"  # a saved configuration's index build estimated long, waiting for a click
CHECKED_FOR_KEY = "mcp_checked_config"  # which configuration's server the check shown tested (None: the active)
ACTIVE = "The active configuration (follows changes)"
AGENT_TOOLS = {tool.mcp_name: tool.name for tool in TOOLS if tool.mcp_name}  # MCP name -> the agent's tool
DEFAULT_QUERY = "how do I get started"


def render() -> None:
    """The Connected agents section: the live call timeline and the hand-over panel, in two tabs."""
    st.subheader(":material/hub: Connected agents (MCP)")
    calls_tab, handover_tab = st.tabs(["Tool calls", "Hand over to your agent"])
    with calls_tab:
        calls_timeline()
    with handover_tab:
        handover_panel()


def _arguments_of(call: dict) -> dict:
    try:
        arguments = json.loads(call.get("arguments") or "{}")
    except ValueError:  # cut at MAX_ARG_CHARS: not JSON any more
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _query_of(call: dict) -> str:
    query = _arguments_of(call).get("query")
    return query if isinstance(query, str) else ""


def call_label(call: dict) -> str:
    """``12:03:04 · claude-desktop · search_documents “…” · 3 chunks · 2.1 kB · 41 ms`` (names escaped)."""
    when = datetime.fromtimestamp(float(call.get("time", 0))).strftime("%H:%M:%S")
    query = _query_of(call)
    what = md_escape(str(call.get("tool", "?"))) + (f" “{md_escape(query[:60])}”" if query else "")
    size = int(call.get("result_chars") or 0)
    parts = [when, md_escape(str(call.get("client") or "unknown")[:60]), what,
             f"{len(call.get('chunk_ids') or [])} chunk(s)", f"{size / 1000:.1f} kB",
             f"{float(call.get('latency_ms', 0)):.0f} ms"]
    return " · ".join(parts) + ("" if call.get("ok") else " · failed")


@st.fragment(run_every=REFRESH_S)
def calls_timeline() -> None:
    """The latest calls, newest first, re-read from the call log every ``REFRESH_S`` seconds."""
    calls = state.guarded(lambda: read_calls(state.settings(), limit=500), "Reading the MCP call log")
    if calls is None:
        return
    if not calls:
        st.info("No agent has called the tools yet. Hand the server over (next tab) and its calls appear here, "
                "live.")
        return
    clients = sorted({str(c.get("client") or "unknown") for c in calls})
    chosen = st.selectbox("Client", [ALL_CLIENTS, *clients], key=CLIENT_KEY)
    shown = [c for c in reversed(calls) if chosen == ALL_CLIENTS or str(c.get("client") or "unknown") == chosen]
    st.caption(f"{min(len(shown), SHOWN)} latest of {len(shown)} call(s), newest first · refreshed every "
               f"{REFRESH_S:.0f} s")
    index = state.guarded(state.active_index, "Opening the index")
    for call in shown[:SHOWN]:
        with st.expander(call_label(call)):
            render_call(call, index)


def call_step(call: dict) -> AgentStep:
    """A logged call as the agent's own step, so it is drawn as the agent's steps are: its tool's title, and for a
    search its route, relevance and hits. A search's left-out granularity is the one it ran with."""
    tool = str(call.get("tool") or "?")
    step = AgentStep(step=0, policy="mcp", reason="", tool=AGENT_TOOLS.get(tool, tool), args=_arguments_of(call),
                     ok=bool(call.get("ok")), error=call.get("error"), elapsed_ms=float(call.get("latency_ms") or 0))
    if step.tool == "search" and call.get("granularity"):
        step.args.setdefault("granularity", call["granularity"])
    for name in ("route", "route_reason", "confidence", "granularity", "k_by_iteration", "hits"):
        if call.get(name) is not None:
            setattr(step, name, call[name])
    step.threshold = float(call.get("threshold") or 0.0)
    return step


def render_call(call: dict, index) -> None:
    """One call: the agent's step title, its arguments (shown as code: they come from the agent), its error, the
    agent's facts line and hits table (``agent_view.render_step_facts``), its chunks as links to the Explorer."""
    step = call_step(call)
    st.markdown(f"**{agent_text.step_title(step, index)}**")
    st.code(call.get("arguments") or "{}", language="json")
    if call.get("error"):
        st.error(md_inert(call["error"]))
    agent_view.render_step_facts(step, st)
    chunk_ids, doc_ids = call.get("chunk_ids") or [], call.get("doc_ids") or []
    if not chunk_ids:
        return
    with st.container(horizontal=True, gap="small"):
        for position, chunk_id in enumerate(chunk_ids):
            doc_id = doc_ids[position] if position < len(doc_ids) else ""
            chunk = index.get(chunk_id) if index is not None else None
            if chunk is not None:
                label, full = agent_text.citation_label(index.doc_name(chunk.doc_id) or chunk.doc_id, chunk.heading)
                doc_id = chunk.doc_id
            else:
                label, full = f"chunk {chunk_id[:8]}", "not in the serving index any more"
            # A link, not a button: this is drawn inside the timeline's refreshing fragment (chunk_page_link).
            explorer_link.chunk_page_link(doc_id, chunk_id, f"{position + 1}. {label}",
                                          f"{full}\n\nOpen chunk `{chunk_id}` in the Chunk Explorer",
                                          chunking=index.chunking if chunk is not None else None,
                                          disabled=not doc_id)


def _served_line(config_name: str | None) -> None:
    """What the chosen configuration serves, and whether its index is there yet."""
    from rag_core.stores.collections import read_manifest

    active = state.active_config()
    tools = "`search_documents`, `list_documents`, `list_sections`, `read_section`, `zoom_in`, `zoom_out`"
    if config_name is None:
        st.markdown(f"The server serves the index of the active configuration (**{md_escape(active.name)}**) with "
                    "its retrieval settings, and follows a re-index or a change of settings without a restart. "
                    f"Tools: {tools}.")
        return
    saved = state.guarded(lambda: state.config_store().load(config_name), "The saved configuration")
    if saved is None:
        return
    st.markdown(f"The server serves the saved configuration **{md_escape(config_name)}** as it is saved (a "
                "snapshot): its retrieval settings over the index built with its chunking and embedder. "
                f"Tools: {tools}.")
    if saved.index_key() == active.index_key():
        return
    collection = saved.collection_name()
    building = next((j for j in jobs.runner().active() if j.collection == collection), None)
    if building is not None:
        st.info(f"Its index (`{collection}`) is being built: {md_escape(jobs.progress_text(building))}. Tool calls "
                "answer from what it holds so far.")
    elif not (read_manifest(collection, state.settings()) or {}).get("documents"):  # none, or opened empty
        st.warning("Its index is not built yet (its chunking or embedder differs from the active configuration's); "
                   "until it is, every tool call says so. Build it here from the studio's documents, or from "
                   f"files with `python -m rag_core ingest PATH --config {shlex.quote(config_name)}`.")
        if st.button("Build its index", key="mcp_build_index", icon=":material/build:",
                     help="A background job indexes the studio's stored documents with this configuration's "
                          "chunking and embedder; the active configuration is not changed."):
            _build_index(saved)
        _confirm_long_build(saved)


def _build_index(saved, *, confirmed: bool = False) -> None:
    """Queue the saved configuration's own index over every stored document (the active one stays as it is); a
    build estimated long on this machine waits for the user's choice (``_confirm_long_build``) unless confirmed."""
    docs = state.guarded(lambda: state.document_store().list(), "The stored documents") or []
    if not docs:
        st.info("No document is stored yet: add some on the Documents page first.")
        return
    with st.spinner(f"Opening the index of '{saved.name}' (a new embedder loads its model)…"):
        index = state.guarded(lambda: state.index_for(saved), "Opening its index")
    if index is None:
        return
    if not confirmed:
        found = costly.long_estimate(index, docs)
        if found is not None:
            st.session_state[LONG_BUILD_KEY] = {"config": saved.name, **costly.estimate_fields(found)}
            st.rerun()
    jobs.runner().submit_ingest(index, docs, title=f"Indexing {len(docs)} document(s) for '{saved.name}'")
    st.rerun()


def _confirm_long_build(saved) -> None:
    """A long build's estimate and the choice: build now (later jobs wait behind it) or not now."""
    pending = st.session_state.get(LONG_BUILD_KEY)
    if not pending or pending["config"] != saved.name:
        return
    docs = state.guarded(lambda: state.document_store().list(), "The stored documents") or []
    picked = costly.choice(md_inert(f"Building the index of '{saved.name}' ({len(docs)} document(s))"), docs,
                           LONG_BUILD_KEY, go="Build anyway", stop="Don't build now", key="mcp_long_build",
                           either_way="Nothing is queued until you choose; the active configuration is not changed.")
    if picked == "stop":
        st.rerun()
    if picked == "go":
        _build_index(saved, confirmed=True)


def handover_panel() -> None:
    """The exact command and the client configuration for the active configuration or a saved one, and a real
    check of that server."""
    settings = state.settings()
    chosen = st.selectbox("Configuration to serve", [ACTIVE, *state.config_store().list()], key=CONFIG_KEY,
                          help="A saved configuration (a tuning study's winner, say) is served as saved; the active "
                               "one follows every change made in the studio.")
    config_name = None if chosen == ACTIVE else chosen
    _served_line(config_name)
    st.markdown("**Desktop agents (stdio)**: add this to the client's MCP configuration (Claude Desktop: "
                "`claude_desktop_config.json`; Cursor: `.cursor/mcp.json`; any `mcpServers` client).")
    st.code(client_config_json(settings.data_dir, config_name), language="json")
    st.markdown("**The same from a terminal**")
    st.code(shell_command(settings.data_dir, config_name), language="bash")
    st.markdown("**Over streamable HTTP**: start the server, then give the client its URL (a host other than "
                "127.0.0.1 needs `RAG_MCP_TOKEN`).")
    st.code(shell_command(settings.data_dir, config_name, http=True), language="bash")
    st.code(json.dumps(http_client_config(), indent=2), language="json")
    st.caption("Agents that take OpenAI function definitions: `python -m rag_core tools --json`.")
    query = st.text_input("Test query", value=DEFAULT_QUERY, key=QUERY_KEY)
    if st.button("Test the server", key="mcp_test", icon=":material/play_arrow:"):
        if not query.strip():
            st.warning("Type a test query first.")
        else:
            with st.spinner("Starting the server over stdio, listing its tools, running one search…"):
                st.session_state[CHECK_KEY] = check_server(settings.data_dir, query, config_name)
                st.session_state[CHECKED_FOR_KEY] = config_name
    check = st.session_state.get(CHECK_KEY)
    if check is not None and st.session_state.get(CHECKED_FOR_KEY) == config_name:  # this server's check only
        render_check(check)


def render_check(check: ServerCheck) -> None:
    if not check.ok:
        st.error(f"Test failed after {check.elapsed_ms / 1000:.1f} s: {md_inert(check.error)}")
        return
    st.success(f"The server answered in {check.elapsed_ms / 1000:.1f} s: {len(check.tools)} tools "
               f"({', '.join(check.tools)}); the search for “{md_escape(check.query)}” returned "
               f"{len(check.chunks)} chunk(s), a context of {check.context_tokens} tokens.")
    if check.chunks:
        rows = [{"chunk_id": c.get("chunk_id"), "heading": " › ".join(c.get("heading_path") or []),
                 "granularity": c.get("granularity"), "score": c.get("score")} for c in check.chunks]
        st.dataframe(rows, hide_index=True)
