"""A page's URL opened first on a fresh server (a bookmark, a shared link) is served through app.py's navigation."""

from __future__ import annotations

import pytest

from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import _settle

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("path", ["retrieval_lab", "chunk_explorer"])  # the explorer halts early (no documents)
def test_first_request_to_a_page_url_gets_the_app_sidebar(browser, tmp_path, path):
    require_browser()
    # A fresh server per case: the bug only showed when a page URL was the server's very first request.
    with serve_app(tmp_path) as url:
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        try:
            page.goto(f"{url}/{path}")
            _settle(page)
            sidebar = page.locator('section[data-testid="stSidebar"]').inner_text()
            # app.py's sidebar (title, configuration badge) and its navigation sections, not a folder's file list.
            assert "Agentic RAG Studio" in sidebar
            assert "Active config" in sidebar
            assert "Studio" in sidebar and "Retrieval" in sidebar
            assert "\napp\n" not in f"\n{sidebar}\n"
            assert page.url.rstrip("/").endswith(path)
        finally:
            context.close()
