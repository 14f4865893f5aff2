"""An MCP server (official ``mcp`` SDK, low-level ``Server``) whose tools are the agent's own (agent/tools.py).

The low-level server is used rather than ``MCPServer`` decorators so that names, descriptions and JSON schemas
come from the agent's ``ToolSpec`` rows unchanged (one source of truth). Every call runs through
``ToolBox.execute``, which validates the arguments and never raises for bad input; the result text keeps the
untrusted-document wrapping.
"""

from __future__ import annotations

import logging
import threading

import anyio
from mcp import types
from mcp.server.lowlevel.server import Server

from rag_core.agent.tools import TOOLS, ToolBox, ToolOutcome, tool_definitions, untrusted_text

log = logging.getLogger(__name__)

# MCP name of each agent tool served, from its ToolSpec row ("done" is the agent's own ending: not served).
MCP_NAMES = {tool.name: tool.mcp_name for tool in TOOLS if tool.mcp_name}
AGENT_NAMES = {mcp: agent for agent, mcp in MCP_NAMES.items()}
CALL_TIMEOUT_S = 30.0
MAX_CONCURRENT_CALLS = 4


SEARCH_NOTE = (" Arguments left out take the served configuration's values, so a query alone searches as the "
               "Retrieval Lab does.")


def mcp_tools() -> list[types.Tool]:
    """The served tools, named, described and typed by the agent's tool definitions.

    ``search_documents`` drops the argument defaults from its schema: a left-out argument keeps the served
    configuration's value (``ToolBox(config_defaults=True)``), not the agent's default.
    """
    by_name = {d["function"]["name"]: d["function"] for d in tool_definitions()}
    tools = []
    for name in MCP_NAMES:
        description, schema = by_name[name]["description"], by_name[name]["parameters"]
        if name == "search":
            for prop in schema.get("properties", {}).values():
                prop.pop("default", None)
            description += SEARCH_NOTE
        tools.append(types.Tool(name=MCP_NAMES[name], description=description, input_schema=schema))
    return tools


def openai_tools() -> list[dict]:
    """The served tools as OpenAI function-calling definitions (their MCP names)."""
    return [{"type": "function", "function": {"name": t.name, "description": t.description,
                                              "parameters": t.input_schema}} for t in mcp_tools()]


class Backend:
    """Opens the served index and a retriever for the served configuration, both re-read on every call.

    ``collection`` None serves the index serving the active configuration (``rag_core.serving.activestate``): during a
    re-index the complete old one, after the swap the new one, without a restart. ``config_name`` (a saved
    configuration, e.g. the one a tuning study saved) serves its retrieval settings over the index built with its
    own chunking and embedder: the active one's when they are the same (followed across re-indexes as above),
    else its own collection (``ingest --config NAME`` builds it; a clear tool error until then).
    """

    def __init__(self, collection: str | None = None, config_name: str | None = None) -> None:
        self.collection = collection
        self.config_name = config_name
        self._key: tuple | None = None
        self._index_key: tuple | None = None
        self._index = None
        self._toolbox: ToolBox | None = None
        self._lock = threading.Lock()

    def _retrieval_config(self, settings):
        if self.config_name:
            from rag_core.cli.config_cmd import saved_config

            return saved_config(self.config_name).retrieval
        from rag_core.serving.activestate import active_config

        return active_config(settings).retrieval

    def _open_index(self, settings):
        """The served index, reopened only when what serves changed (a re-index swapped the pointer)."""
        from rag_core import services

        collection = self.collection or self._saved_collection(settings)
        if collection:
            key: tuple = ("collection", collection)
        else:
            from rag_core.serving.activestate import pointer

            found = pointer(settings)
            key = ("serving", found.serving.model_dump_json(), found.generation)
        if self._index is None or key != self._index_key:
            if collection:
                self._index = self._open_collection(services, collection, settings)
            else:
                spec = found.serving
                self._index = services.open_index(spec.config(), settings, spec.collection)
            self._index_key = key
        return self._index

    def _open_collection(self, services, collection: str, settings):
        from rag_core.errors import IndexError_

        try:
            return services.open_collection(collection, settings)
        except IndexError_ as e:
            if self.collection:
                raise
            raise IndexError_(f"the index of configuration {self.config_name!r} ({collection}) is not built yet: "
                              f"build it with python -m rag_core ingest PATH --config {self.config_name}, or make "
                              "the configuration active in the studio (it re-indexes the documents)") from e

    def _saved_collection(self, settings) -> str | None:
        """The collection of the saved configuration served, or None when the active configuration's index is it
        (same chunking and embedder: then the serving pointer is followed)."""
        if not self.config_name:
            return None
        from rag_core.cli.config_cmd import saved_config
        from rag_core.serving.activestate import active_config

        saved = saved_config(self.config_name)
        return None if saved.index_key() == active_config(settings).index_key() else saved.collection_name()

    def toolbox(self) -> ToolBox:
        from rag_core.config import get_settings
        from rag_core.services import open_retriever

        settings = get_settings()
        retrieval = self._retrieval_config(settings)
        with self._lock:
            index = self._open_index(settings)
            key = (id(index), retrieval.model_dump_json())
            if self._toolbox is None or key != self._key:
                self._toolbox = ToolBox(index, open_retriever(index, retrieval, settings), config_defaults=True)
                self._key = key
            return self._toolbox

    def call(self, name: str, arguments: dict | None, client: str = "unknown") -> types.CallToolResult:
        """Run one tool call and log it (``calllog``): a log that cannot be written (the Chroma server holding it is
        down) is a warning, not the agent's failure."""
        import time

        from rag_core.config import get_settings
        from rag_core.errors import IndexError_
        from rag_core.mcp_server.calllog import record

        start = time.perf_counter()
        result, outcome = self._call(name, arguments)
        chunks = (result.structured_content or {}).get("chunks", [])
        try:
            record(get_settings(), client=client, tool=name, arguments=arguments or {},
                   chunk_ids=[c["chunk_id"] for c in chunks], doc_ids=[c["doc_id"] for c in chunks],
                   latency_ms=(time.perf_counter() - start) * 1000, ok=not result.is_error,
                   error=result.content[0].text if result.is_error else None,
                   result_chars=sum(len(c.text) for c in result.content if isinstance(c, types.TextContent)),
                   retrieval=step_facts(outcome))
        except IndexError_ as e:
            log.warning("the MCP call log was not written: %s", e)
        return result

    def _call(self, name: str, arguments: dict | None) -> tuple[types.CallToolResult, ToolOutcome | None]:
        agent_name = AGENT_NAMES.get(name)
        if agent_name is None:
            return _error(f"unknown tool {name!r}; tools: {', '.join(MCP_NAMES.values())}"), None
        toolbox = self.toolbox()
        outcome = toolbox.execute(agent_name, arguments or {})
        if not outcome.ok:
            return _error(outcome.error or "the tool failed"), outcome
        structured = {"chunks": [{"chunk_id": c.id, "doc_id": c.doc_id, "heading_path": list(c.heading_path),
                                  "granularity": c.granularity, "tokens": c.tokens} for c in outcome.chunks]}
        if agent_name == "search":
            return search_result(outcome, structured), outcome
        return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.observation)],
                                    structured_content=structured), outcome


def step_facts(outcome: ToolOutcome | None) -> dict | None:
    """What the agent's step timeline shows of a search (``rag_core.agent.loop.describe_retrieval``: route and its
    reason, relevance, results asked, one row per hit), with the threshold and granularity the search ran with (a
    left-out argument took the served configuration's, not the argument model's default)."""
    if outcome is None or outcome.retrieval is None:
        return None
    from rag_core.agent.agent_types import AgentStep
    from rag_core.agent.loop import describe_retrieval

    step = AgentStep(step=0, policy="mcp", reason="", tool=outcome.tool, args=outcome.args)
    describe_retrieval(step, outcome)
    config = outcome.retrieval.config
    return {"route": step.route, "route_reason": step.route_reason, "confidence": step.confidence,
            "threshold": config.min_confidence if config else None,
            "granularity": config.granularity if config else step.granularity,
            "k_by_iteration": step.k_by_iteration, "hits": step.hits}


def search_result(outcome: ToolOutcome, structured: dict) -> types.CallToolResult:
    """A search's Layer-4 context (token-budgeted, ``--- Document N ---`` boundaries, ``[Source: ...]``) wrapped
    as untrusted document text, then which chunk id each document is; structured: the hits and the context's
    account (tokens, budget, included / truncated / dropped)."""
    from rag_core.retrieval.formatting import format_context

    result = outcome.retrieval
    hits = outcome.hits
    structured["chunks"] = [{**row, "score": round(h.confidence, 4)}
                            for row, h in zip(structured["chunks"], hits, strict=True)]
    if not hits:
        return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.observation)],
                                    structured_content={**structured, "route": result.route, "context": None})
    budget = result.config.token_budget
    same = [h.chunk.id for h in hits] == [h.chunk.id for h in result.hits]
    context = result.context if same else format_context(hits, budget=budget)
    scores = {h.chunk.id: h.confidence for h in hits}
    grains = {h.chunk.id: h.chunk.granularity for h in hits}
    names = [f"Document {row['document']} = {row['chunk_id']} ({grains[row['chunk_id']]}, confidence "
             f"{scores[row['chunk_id']]:.2f})" for row in context.included]
    lines = [f"{len(hits)} result(s) for {result.query!r} (route {result.route}, confidence {result.confidence:.2f}); "
             f"context {context.tokens} of {budget} tokens:",
             untrusted_text(context.text, f'source="retrieved context" tokens="{context.tokens}"'),
             "Chunk ids: " + "; ".join(names)]
    if context.dropped:
        lines.append("Left out of the context (token budget): " + ", ".join(d["chunk_id"] for d in context.dropped))
    structured["route"] = result.route
    structured["confidence"] = round(result.confidence, 4)
    structured["context"] = {"tokens": context.tokens, "budget": budget,
                             "included": [row["chunk_id"] for row in context.included],
                             "truncated": [row["chunk_id"] for row in context.truncated],
                             "dropped": [row["chunk_id"] for row in context.dropped]}
    return types.CallToolResult(content=[types.TextContent(type="text", text="\n".join(lines))],
                                structured_content=structured)


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _client(ctx) -> str:
    """The client's name from its initialize request, when the session kept it."""
    try:
        return str(ctx.session.client_params.client_info.name)
    except AttributeError:
        return "unknown"


class CallGate:
    """At most ``limit`` tool calls run at once; one more is refused at once ("busy, retry"), never queued.

    The worker thread gives its slot back when it really ends, so a call cut off by the timeout still holds its
    slot while it runs on: slow requests cannot pile up threads or starve the app sharing the machine.
    """

    def __init__(self, limit: int = MAX_CONCURRENT_CALLS) -> None:
        if not 1 <= limit <= 64:
            raise ValueError(f"the concurrent call limit must be between 1 and 64 (got {limit})")
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)

    def try_enter(self) -> bool:
        return self._slots.acquire(blocking=False)

    def leave(self) -> None:
        self._slots.release()

    def run(self, func, *args):
        """Run ``func`` in the worker thread, then free the slot ``try_enter`` took."""
        try:
            return func(*args)
        finally:
            self.leave()


def busy_message(limit: int) -> str:
    return f"busy: {limit} tool call(s) already running on this server; retry in a moment"


def build_server(backend: Backend, gate: CallGate | None = None) -> Server:
    gate = gate or CallGate()
    # The calls' own worker threads: never short of one while the gate admits a call (the SDK's stdio transport
    # reads stdin through anyio's shared default threads), and a timed-out call holds its thread until it ends.
    threads = anyio.CapacityLimiter(gate.limit)

    async def list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools())

    async def call_tool(ctx, params) -> types.CallToolResult:
        if not gate.try_enter():
            return _error(busy_message(gate.limit))
        try:
            with anyio.fail_after(CALL_TIMEOUT_S):
                return await anyio.to_thread.run_sync(gate.run, backend.call, params.name, params.arguments,
                                                      _client(ctx), abandon_on_cancel=True, limiter=threads)
        except TimeoutError:
            return _error(f"{params.name} took longer than {CALL_TIMEOUT_S:.0f} s")
        except Exception as e:  # noqa: BLE001 - a client gets a tool error, never a traceback
            return _error(f"{params.name} failed: {e}")

    return Server("agentic-rag-studio", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(backend: Backend, max_calls: int = MAX_CONCURRENT_CALLS) -> None:
    from mcp.server.stdio import stdio_server

    server = build_server(backend, CallGate(max_calls))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def http_app(backend: Backend, host: str = "127.0.0.1", port: int = 8765, token: str | None = None,
             max_calls: int = MAX_CONCURRENT_CALLS):
    """The streamable-HTTP app: Host/Origin checks (DNS rebinding) always on; a bearer token when ``token``."""
    from mcp.server.transport_security import TransportSecuritySettings

    if host not in LOCAL_HOSTS and not token:
        raise ValueError(f"binding {host} needs a bearer token: set RAG_MCP_TOKEN")
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"] + ([f"{host}:*"] if host not in LOCAL_HOSTS else [])
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=origins)
    app = build_server(backend, CallGate(max_calls)).streamable_http_app(transport_security=security, host=host)
    if token:
        app.add_middleware(_BearerMiddleware, token=token)
    return app


class _BearerMiddleware:
    """Refuses a request without ``Authorization: Bearer <token>`` (constant-time compare)."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope, receive, send):
        import hmac

        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            given = headers.get(b"authorization", b"").decode("latin-1")
            if not hmac.compare_digest(given, f"Bearer {self.token}"):
                from starlette.responses import PlainTextResponse

                await PlainTextResponse("missing or wrong bearer token", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def serve_http(backend: Backend, host: str, port: int, token: str | None,
               max_calls: int = MAX_CONCURRENT_CALLS) -> None:
    import uvicorn

    uvicorn.run(http_app(backend, host, port, token, max_calls), host=host, port=port, log_level="warning")
