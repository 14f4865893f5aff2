"""The MCP server over stdio, driven by the SDK's own client: tool listing, search equal to the in-process search,
navigation by returned ids, and bad arguments / unknown ids answered as tool errors (never a traceback)."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from rag_core.agent.tools import ToolBox
from rag_core.cli import main

DOC = ("# Keys\n\nTo rotate the API key, open Settings and press Rotate.\n\n# Billing\n\n"
       "Business extra runs cost 3 USD per 100,000.\n")


@pytest.fixture
def collection(tmp_path, capsys):
    doc = tmp_path / "guide.md"
    doc.write_text(DOC)
    assert main(["ingest", str(doc), "--collection", "mcp-test", "--embedder", "hash"]) == 0
    capsys.readouterr()
    return "mcp-test"


async def _session_calls(collection: str, calls: list[tuple[str, dict]]):
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag_core", "serve-mcp", "--collection",
                                                                 collection], env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def test_stdio_lists_tools_and_search_matches_in_process(collection):
    from rag_core.config import get_settings
    from rag_core.services import open_collection, open_retriever
    from rag_core.serving.activestate import active_config

    calls = [("search_documents", {"query": "rotate the API key", "max_results": 3}),
             ("list_documents", {})]
    tools, (search, docs) = anyio.run(_session_calls, collection, calls)
    names = {t.name for t in tools.tools}
    assert names == {"search_documents", "list_documents", "list_sections", "read_section", "zoom_in", "zoom_out"}
    schema = next(t for t in tools.tools if t.name == "search_documents").input_schema
    assert schema["properties"]["max_results"]["maximum"] == 20
    assert not search.is_error and "<untrusted_document" in search.content[0].text
    served = [c["chunk_id"] for c in search.structured_content["chunks"]]
    settings = get_settings()
    index = open_collection(collection, settings)
    local = ToolBox(index, open_retriever(index, active_config(settings).retrieval, settings),
                    config_defaults=True).execute(
        "search", {"query": "rotate the API key", "max_results": 3})
    assert served and served == [c.id for c in local.chunks]
    assert not docs.is_error and "guide.md" in docs.content[0].text


def test_stdio_bad_arguments_are_tool_errors(collection):
    calls = [("search_documents", {"query": "x" * 5000}), ("search_documents", {"query": "key", "max_results": 99}),
             ("search_documents", {"query": "key", "focus_area": "poems"}), ("zoom_out", {"chunk_id": "nope"}),
             ("read_section", {"doc_id": "nope", "section_id": "nope"}), ("no_such_tool", {})]
    _, results = anyio.run(_session_calls, collection, calls)
    for result in results:
        text = result.content[0].text
        assert result.is_error, text
        assert "Traceback" not in text
    assert "max_results" in results[1].content[0].text
    assert "unknown tool" in results[-1].content[0].text


def test_stdio_calls_are_logged(collection, data_dir):
    from rag_core.mcp_server.calllog import read_calls

    calls = [("search_documents", {"query": "rotate the API key", "max_results": 2}), ("zoom_out", {"chunk_id": "x"})]
    _, (search, _bad) = anyio.run(_session_calls, collection, calls)
    logged = read_calls(data_dir)
    assert [c["tool"] for c in logged] == ["search_documents", "zoom_out"]
    assert logged[0]["chunk_ids"] == [c["chunk_id"] for c in search.structured_content["chunks"]]
    assert logged[0]["ok"] and not logged[1]["ok"] and logged[0]["latency_ms"] > 0


def test_stdio_client_name_from_initialize_is_logged(collection, data_dir):
    from mcp import types

    from rag_core.mcp_server.calllog import read_calls

    async def run():
        params = StdioServerParameters(command=sys.executable, args=["-m", "rag_core", "serve-mcp", "--collection",
                                                                     collection], env=dict(os.environ))
        info = types.Implementation(name="cursor-like-agent", version="0.9")
        async with stdio_client(params) as (read, write), ClientSession(read, write, client_info=info) as session:
            await session.initialize()
            await session.call_tool("list_documents", {})
            await session.call_tool("search_documents", {"query": "rotate the API key"})

    anyio.run(run)
    logged = read_calls(data_dir)
    assert [c["client"] for c in logged] == ["cursor-like-agent", "cursor-like-agent"]
    assert logged[1]["result_chars"] > 0
