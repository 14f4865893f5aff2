"""The MCP server over streamable HTTP on 127.0.0.1: the SDK's client lists tools and searches; a foreign Origin
is refused; a bearer token, when set, is required; a non-local bind without a token is refused; ``tools --json``
prints the same tools as OpenAI definitions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from rag_core.cli import main
from rag_core.mcp_server.server import mcp_tools

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def collection(tmp_path, capsys):
    doc = tmp_path / "guide.md"
    doc.write_text("# Keys\n\nTo rotate the API key, open Settings and press Rotate.\n")
    assert main(["ingest", str(doc), "--collection", "mcp-http", "--embedder", "hash"]) == 0
    capsys.readouterr()
    return "mcp-http"


def _start(collection: str, token: str | None = None):
    port = _free_port()
    env = dict(os.environ)
    env.pop("RAG_MCP_TOKEN", None)
    if token:
        env["RAG_MCP_TOKEN"] = token
    proc = subprocess.Popen([sys.executable, "-m", "rag_core", "serve-mcp", "--collection", collection, "--http",
                             "--port", str(port)], env=env)
    deadline = time.monotonic() + 120  # the SDK and rag_core imports take 10+ s on a loaded 2-core machine
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise AssertionError("the MCP HTTP server did not start")


async def _search(url: str):
    async with streamable_http_client(url) as streams, ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool("search_documents", {"query": "rotate the API key"})
    return tools, result


def test_http_client_lists_and_searches_and_foreign_origin_is_refused(collection):
    proc, url = _start(collection)
    try:
        tools, result = anyio.run(_search, url)
        assert {t.name for t in tools.tools} == {t.name for t in mcp_tools()}
        assert not result.is_error and result.structured_content["chunks"]
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "evil", "version": "1"}}}
        refused = httpx.post(url, json=init, headers={"Origin": "http://evil.example",
                                                       "Accept": "application/json, text/event-stream"})
        assert refused.status_code in (400, 403), refused.text
    finally:
        proc.terminate()
        proc.wait(10)


def test_http_token_is_required_when_set(collection):
    proc, url = _start(collection, token="s3cret")
    try:
        assert httpx.post(url, json={}).status_code == 401
        assert httpx.post(url, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401
    finally:
        proc.terminate()
        proc.wait(10)


def test_non_local_bind_without_token_is_refused(collection, capsys, monkeypatch):
    monkeypatch.delenv("RAG_MCP_TOKEN", raising=False)
    assert main(["serve-mcp", "--collection", collection, "--http", "--host", "0.0.0.0"]) == 2
    assert "RAG_MCP_TOKEN" in capsys.readouterr().err


def test_tools_json_is_openai_definitions(capsys):
    assert main(["tools", "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)
    assert [t["function"]["name"] for t in tools] == [t.name for t in mcp_tools()]
    assert tools[0]["type"] == "function" and "query" in tools[0]["function"]["parameters"]["properties"]
