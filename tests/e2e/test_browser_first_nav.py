"""A fresh server's first page load never lists a ``pages/`` folder's files as navigation, in a real browser
(Debian chromium via Playwright, marker ``browser``).

Until a session has called ``st.navigation``, Streamlit runs an app with a ``pages/`` folder beside its main script
in its older folder mode and sends a navigation of the folder's file names (``app``, ``agent_playground``, …;
following ``app`` logged "The page that you have requested does not seem to exist"); under load it stayed on screen
until ``app.py``'s own navigation arrived (issue 35 item 10). ``client.showSidebarNavigation = false`` is no cure:
Streamlit 1.67 applies it to ``st.navigation``'s sidebar menu too (``streamlit/commands/navigation.py``), so the
pages live in ``views/``. Checked on what the server sends (every navigation message over the websocket), not on a
race, and on the sidebar once drawn.
"""

from __future__ import annotations

import pytest

from tests.e2e.serving import index_with_hash_embedder, require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _settle

pytestmark = pytest.mark.browser

TITLES = ["Home", "Documents", "Chunk Explorer", "Retrieval Lab", "Agent Playground", "Evaluate"]


@pytest.fixture(scope="module")
def fresh_url(tmp_path_factory):
    """A server no session has opened yet (the folder mode ends for the whole server at the first navigation)."""
    require_browser()
    data_dir = tmp_path_factory.mktemp("first_nav_data")
    index_with_hash_embedder(data_dir, [])
    with serve_app(data_dir) as url:
        yield url


def _navigations(page) -> list[tuple[str, list[str]]]:
    """(position, page names) of every navigation message the server sends this page, as they arrive."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    from streamlit.proto.Navigation_pb2 import Navigation

    seen: list[tuple[str, list[str]]] = []

    def frame(payload) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg()
        try:
            msg.ParseFromString(payload)
        except Exception:  # noqa: BLE001 - not a ForwardMsg (none expected): nothing to record
            return
        if msg.WhichOneof("type") == "navigation":
            seen.append((Navigation.Position.Name(msg.navigation.position),
                         [p.page_name for p in msg.navigation.app_pages]))

    page.on("websocket", lambda ws: ws.on("framereceived", frame))
    return seen


def test_the_first_load_of_a_fresh_server_shows_only_the_apps_own_navigation(fresh_url, page):
    seen = _navigations(page)
    page.goto(fresh_url)
    _settle(page)
    assert seen, "no navigation message arrived"
    shown = [names for position, names in seen if position != "HIDDEN"]
    assert shown and all(names == TITLES for names in shown), seen  # never "app", "agent_playground", …
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert all(title in nav for title in TITLES) and "agent_playground" not in nav and "app\n" not in nav + "\n"
    _check_clean(page, "first_load_navigation")
