"""The Playground's Connected agents view in a real browser, fed by a real MCP session: an SDK client calls the
stdio server while the page is open, the call appears without a reload (the live timeline), and its chunk opens
in the Chunk Explorer (the Explorer drawn in full, though the timeline refreshed while it opened)."""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from rag_core.loaders import load_bytes
from tests.e2e.serving import REPO, index_with_hash_embedder, require_browser, serve_app
from tests.e2e.test_browser import ARTIFACTS, _settle

pytestmark = pytest.mark.browser

GUIDE = ("# Wrenfall guide\n\n## Keys\n\nTo rotate the API key, open Settings, choose Keys and press Rotate. The old "
         "key stops working after one hour.\n\n## Timeouts\n\nThe request timeout defaults to 30 seconds.\n")
CLIENT = "browser-test-agent"


async def _agent_session(data_dir) -> list[str]:
    from mcp import types
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {**os.environ, "RAG_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "rag_core", "serve-mcp"], env=env, cwd=REPO)
    info = types.Implementation(name=CLIENT, version="1")
    async with stdio_client(params) as (read, write), ClientSession(read, write, client_info=info) as session:
        await session.initialize()
        result = await session.call_tool("search_documents", {"query": "rotate the API key", "max_results": 1})
    return [c["chunk_id"] for c in result.structured_content["chunks"]]


def test_a_real_agent_session_shows_live_and_its_chunk_opens_in_the_explorer(browser, tmp_path):
    require_browser()
    index_with_hash_embedder(tmp_path, [load_bytes("guide.md", GUIDE.encode())])
    with serve_app(tmp_path) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(url)
            _settle(page)
            page.locator('[data-testid="stSidebarNav"]').get_by_text("Agent Playground", exact=True).click()
            _settle(page)
            page.get_by_text("No agent has called the tools yet").wait_for(timeout=30_000)
            # While the page stays open, no reload; in a thread: Playwright's sync API holds this thread's loop.
            with ThreadPoolExecutor(1) as pool:
                chunk_ids = pool.submit(anyio.run, _agent_session, tmp_path).result(timeout=180)
            assert len(chunk_ids) == 1
            call = page.locator('[data-testid="stExpander"]').filter(has_text=CLIENT).first
            call.wait_for(timeout=30_000)  # drawn by the timeline's own refresh
            assert "search_documents “rotate the API key” · 1 chunk(s)" in call.inner_text()
            call.locator("summary").click()
            page.wait_for_timeout(500)
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "connected_agents.png"), full_page=True)
            # A link, followed by the browser while the timeline keeps refreshing (explorer_link.chunk_page_link).
            call.get_by_role("link").filter(has_text="guide.md").first.click()
            _settle(page)
            assert "/chunk_explorer?" in page.url and f"chunk={chunk_ids[0]}" in page.url
            page.screenshot(path=str(ARTIFACTS / "connected_agents_explorer.png"), full_page=True)
            page.locator("#selected-chunk").wait_for(timeout=90_000)  # a loaded machine: the Explorer chunks first
            assert "rotate the API key" in page.locator("#selected-chunk").inner_text()
            assert page.locator('[data-testid="stException"]').count() == 0
            assert "Traceback (most recent call last)" not in page.content()
        finally:
            context.close()
