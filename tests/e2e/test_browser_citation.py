"""A citation in the Agent Playground opens the Chunk Explorer on the cited chunk in a real browser: the Source
view (not the tab left open before), the chunk outlined and scrolled into view, the index's chunking settings,
and a URL that opens the same chunk again."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.e2e.serving import REPO, require_browser, serve_app
from tests.e2e.test_browser import ARTIFACTS, _settle

pytestmark = pytest.mark.browser

PREPARE = """
from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig, get_settings
from rag_core.serving.configstore import ConfigStore
from rag_core.loaders.document_store import DocumentStore
from rag_core.loaders import load_bytes
from rag_core.services import open_index

settings = get_settings()
config = RAGConfig(name="default", embedding=EmbeddingConfig(embedder="hash"),
                   chunking=ChunkingConfig(max_tokens=96, overlap=8))
ConfigStore.for_settings(settings).save(config)
text = "# Wrenfall guide\\n\\n" + "".join(
    f"## Topic {i}\\n\\nTopic {i} covers chapter {i} of the manual in words that fill a passage or two.\\n\\n"
    for i in range(40)) + ("## Keys\\n\\nTo rotate the API key, open Settings, choose Keys and press Rotate. "
                           "The old key stops working after one hour.\\n")
doc, _ = DocumentStore(settings.data_dir).add(load_bytes("guide.md", text.encode()))
open_index(config, settings).ingest([doc])
"""


def test_citation_opens_the_cited_chunk_on_source(browser, tmp_path):
    require_browser()
    env = {**os.environ, "RAG_DATA_DIR": str(tmp_path), "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-c", PREPARE], cwd=REPO, env=env, check=True, timeout=300)
    with serve_app(tmp_path) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        try:
            page.goto(url)
            _settle(page)
            page.locator('[data-testid="stSidebarNav"]').get_by_text("Chunk Explorer", exact=True).click()
            _settle(page)
            page.locator('[data-testid="stRadio"]').get_by_text("Charts", exact=True).click()  # the last tab used
            _settle(page)
            page.locator('[data-testid="stSidebarNav"]').get_by_text("Agent Playground", exact=True).click()
            _settle(page)
            chat = page.locator('[data-testid="stChatInputTextArea"]')
            chat.fill("How do I rotate the API key?")
            chat.press("Enter")
            _settle(page, 180_000)
            citation = page.locator('[data-testid="stButton"] button').filter(has_text="attach_file").first
            citation.click()
            _settle(page)
            assert "/chunk_explorer?" in page.url and "max_tokens=96" in page.url and "chunk=" in page.url
            source = page.locator('[data-testid="stRadio"] label').filter(has_text="Source").locator("input")
            assert source.is_checked()
            selected = page.locator("#selected-chunk")
            selected.wait_for(timeout=30_000)
            assert "rotate the API key" in selected.inner_text()
            page.wait_for_timeout(500)  # the scroll runs as the HTML is drawn
            box = page.locator(".chunk-source").bounding_box()
            chunk_box = selected.bounding_box()
            assert box["y"] <= chunk_box["y"] <= box["y"] + box["height"], "the cited chunk is not scrolled to"
            assert "settings the cited index was built with (structure 96 tok, overlap 8)" in page.inner_text("body")
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "citation_opens_explorer.png"), full_page=True)
            assert page.locator('[data-testid="stException"]').count() == 0
            assert "Traceback (most recent call last)" not in page.content()
            link = page.url  # the same chunk from its link, in a fresh session
            fresh = context.new_page()
            fresh.goto(link)
            _settle(fresh)
            fresh.locator("#selected-chunk").wait_for(timeout=30_000)
            assert "rotate the API key" in fresh.locator("#selected-chunk").inner_text()
        finally:
            context.close()
