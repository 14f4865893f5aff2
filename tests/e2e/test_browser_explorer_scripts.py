"""The Chunk Explorer's source view, redrawn with a chunk selected, leaves no JavaScript error in the console."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.e2e.serving import REPO, require_browser, serve_app
from tests.e2e.test_browser import _settle

pytestmark = pytest.mark.browser

NOTE = "# Deploy\n\nRun the release script.\n\n## Rollback\n\nRevert the tag and redeploy.\n"


def test_explorer_redraw_with_a_selected_chunk_has_no_console_errors(browser, tmp_path):
    require_browser()
    data = tmp_path / "data"
    note = tmp_path / "deploy.md"
    note.write_text(NOTE)
    env = {**os.environ, "RAG_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1", "ANONYMIZED_TELEMETRY": "False"}
    subprocess.run([sys.executable, "-m", "rag_core", "ingest", "--collection", "default", "--embedder", "hash",
                    str(note), "--json"], cwd=REPO, env=env, check=True, timeout=600, capture_output=True)
    out = subprocess.run([sys.executable, "-m", "rag_core", "chunk", str(note), "--json"], cwd=REPO, env=env,
                         check=True, timeout=300, capture_output=True, text=True).stdout
    chunk = next(json.loads(line) for line in out.splitlines() if json.loads(line)["granularity"] == "paragraph")
    with serve_app(data) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        try:
            page.goto(f"{url}/chunk_explorer?doc={chunk['doc_id']}&chunk={chunk['id']}")
            _settle(page)
            assert page.locator("#selected-chunk").count() >= 1
            page.get_by_text("type", exact=True).first.click()  # Colour by: type redraws the source view
            _settle(page)
            page.get_by_text("chunk", exact=True).first.click()
            _settle(page)
            assert not [e for e in errors if "already been declared" in e], errors
        finally:
            context.close()
