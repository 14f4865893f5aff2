"""The server's bounds, in process through the SDK's in-memory transport: at most N tool calls at once (one more is
refused with "busy, retry"), a call cut off by the timeout keeps its slot until its thread ends, and the client's
name from its initialize request reaches the backend."""

from __future__ import annotations

import threading

import anyio
import pytest
from mcp import types
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession

from rag_core.mcp_server import server as mcp_server
from rag_core.mcp_server.server import CallGate, build_server


class BlockingBackend:
    """Each call waits until ``release`` is set; records the client names it was called with."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.clients: list[str] = []
        self.running = 0
        self.ended = threading.Event()

    def call(self, name, arguments, client="unknown"):
        self.clients.append(client)
        self.running += 1
        try:
            assert self.release.wait(20), "the test never released the call"
            return types.CallToolResult(content=[types.TextContent(type="text", text=f"{name} done")])
        finally:
            self.running -= 1
            self.ended.set()


async def _session(backend, gate, client_name, body):
    transport = InMemoryTransport(build_server(backend, gate))
    info = types.Implementation(name=client_name, version="1.0")
    async with transport as (read, write), ClientSession(read, write, client_info=info) as session:
        await session.initialize()
        return await body(session)


def test_one_call_over_the_limit_is_refused_busy_and_the_others_finish():
    backend, gate = BlockingBackend(), CallGate(2)
    results: dict[int, types.CallToolResult] = {}

    async def body(session):
        async def one(i):
            results[i] = await session.call_tool("search_documents", {"query": f"q{i}"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(one, 0)
            tg.start_soon(one, 1)
            with anyio.fail_after(10):
                while backend.running < 2:
                    await anyio.sleep(0.01)
            await one(2)  # both slots are taken: answered at once, not queued
            assert results[2].is_error and "busy" in results[2].content[0].text
            assert "retry" in results[2].content[0].text
            backend.release.set()
        return results

    anyio.run(_session, backend, gate, "probe", body)
    assert [results[i].is_error for i in (0, 1)] == [False, False]
    assert len(backend.clients) == 2  # the refused call never reached the backend


def test_a_timed_out_call_keeps_its_slot_until_its_thread_ends(monkeypatch):
    monkeypatch.setattr(mcp_server, "CALL_TIMEOUT_S", 0.3)
    backend, gate = BlockingBackend(), CallGate(1)

    async def body(session):
        first = await session.call_tool("search_documents", {"query": "slow"})
        second = await session.call_tool("search_documents", {"query": "next"})
        backend.release.set()
        with anyio.fail_after(10):
            while backend.running:
                await anyio.sleep(0.01)
        await anyio.sleep(0.05)
        third = await session.call_tool("search_documents", {"query": "after"})
        return first, second, third

    first, second, third = anyio.run(_session, backend, gate, "probe", body)
    assert first.is_error and "took longer than" in first.content[0].text
    assert second.is_error and "busy" in second.content[0].text
    assert not third.is_error, third.content[0].text


def test_the_client_name_from_initialize_reaches_the_backend():
    backend = BlockingBackend()
    backend.release.set()

    async def body(session):
        return await session.call_tool("list_documents", {})

    result = anyio.run(_session, backend, CallGate(1), "claude-desktop-test", body)
    assert not result.is_error
    assert backend.clients == ["claude-desktop-test"]


@pytest.mark.parametrize("limit", [0, 65])
def test_the_limit_is_checked(limit):
    with pytest.raises(ValueError, match="between 1 and 64"):
        CallGate(limit)
