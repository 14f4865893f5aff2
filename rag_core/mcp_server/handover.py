"""Handing the server over to an agent: the exact command, the client configuration snippet, and a real check.

``check_server`` starts ``serve-mcp`` over stdio as a subprocess with the SDK's own client, lists its tools and
runs one search, as an MCP client configured from the snippet would; every failure becomes a one-line message.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SERVER_NAME = "agentic-rag-studio"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
CHECK_CLIENT = "agentic-rag-studio (Test the server)"


def serve_args(config_name: str | None = None, *, http: bool = False, port: int = 8765) -> list[str]:
    """The ``serve-mcp`` arguments: the index serving the active configuration (followed across re-indexes)."""
    args = ["-m", "rag_core", "serve-mcp"]
    if config_name:
        args += ["--config", config_name]
    if http:
        args += ["--http", "--port", str(port)]
    return args


def server_env(data_dir: Path | str) -> dict[str, str]:
    """What the client must pass so the server reads this studio's data and finds the project."""
    return {"RAG_DATA_DIR": str(Path(data_dir).resolve()), "PYTHONPATH": str(PROJECT_ROOT)}


def shell_command(data_dir: Path | str, config_name: str | None = None, *, http: bool = False,
                  python: str = sys.executable) -> str:
    """The command to paste in a terminal (environment, interpreter and arguments, shell-quoted)."""
    env = " ".join(f"{key}={shlex.quote(value)}" for key, value in server_env(data_dir).items())
    return f"{env} {shlex.join([python, *serve_args(config_name, http=http)])}"


def client_config(data_dir: Path | str, config_name: str | None = None, *, python: str = sys.executable) -> dict:
    """The ``mcpServers`` entry (Claude Desktop / Cursor / generic stdio clients) for this studio."""
    return {"mcpServers": {SERVER_NAME: {"command": python, "args": serve_args(config_name),
                                         "env": server_env(data_dir)}}}


def http_client_config(port: int = 8765) -> dict:
    """The ``mcpServers`` entry of a client that connects to a running ``serve-mcp --http``."""
    return {"mcpServers": {SERVER_NAME: {"url": f"http://127.0.0.1:{port}/mcp"}}}


def client_config_json(data_dir: Path | str, config_name: str | None = None, *, python: str = sys.executable) -> str:
    return json.dumps(client_config(data_dir, config_name, python=python), indent=2)


@dataclass(slots=True)
class ServerCheck:
    """What ``check_server`` saw: the tools listed, the search's chunks and context size, or the error."""

    ok: bool
    tools: list[str] = field(default_factory=list)
    query: str = ""
    chunks: list[dict] = field(default_factory=list)
    context_tokens: int = 0
    elapsed_ms: float = 0.0
    error: str = ""


async def _check(data_dir, config_name, query: str, errlog) -> ServerCheck:
    from mcp import types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=serve_args(config_name),
                                   env={**os.environ, **server_env(data_dir)})
    info = types.Implementation(name=CHECK_CLIENT, version="1")
    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write, client_info=info) as session:
        await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        result = await session.call_tool("search_documents", {"query": query})
    if result.is_error:
        text = result.content[0].text if result.content else "no message"
        return ServerCheck(ok=False, tools=tools, query=query, error=f"the search failed: {text}")
    structured = result.structured_content or {}
    return ServerCheck(ok=True, tools=tools, query=query, chunks=list(structured.get("chunks", [])),
                       context_tokens=int((structured.get("context") or {}).get("tokens", 0)))


async def _with_timeout(data_dir, config_name, query: str, errlog, timeout_s: float) -> ServerCheck:
    import anyio

    try:
        with anyio.fail_after(timeout_s):
            return await _check(data_dir, config_name, query, errlog)
    except TimeoutError:
        return ServerCheck(ok=False, query=query, error=f"the server did not answer within {timeout_s:.0f} s")


def _failure(error: BaseException, stderr: str) -> str:
    """One line: the server's own last error line when it printed one, else the client's error."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = next((line for line in reversed(lines) if "error" in line.lower()), lines[-1] if lines else "")
    cause = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return f"the server did not start or stopped: {said[:300] or cause[:300]}"


def check_server(data_dir: Path | str, query: str, config_name: str | None = None,
                 timeout_s: float = 90.0) -> ServerCheck:
    """Start the server over stdio, list its tools, run one search; never raises."""
    import anyio

    started = time.perf_counter()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            check = anyio.run(_with_timeout, data_dir, config_name, query, errlog, timeout_s)
        except Exception as e:  # noqa: BLE001 - the panel shows one line, never a traceback
            errlog.seek(0)
            check = ServerCheck(ok=False, query=query, error=_failure(e, errlog.read()))
    check.elapsed_ms = (time.perf_counter() - started) * 1000
    return check
