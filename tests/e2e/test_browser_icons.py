"""Icons in Debian's Chromium, which has no emoji font: each is a Material Symbols glyph (drawn from the font
Streamlit serves, so a box-wide ligature, not its name spelled out) and no emoji is left in the page (issue 25)."""

from __future__ import annotations

import pytest

from tests.app.test_icons import emoji_in
from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import ARTIFACTS, _settle

pytestmark = pytest.mark.browser

# Streamlit draws an icon parameter as [data-testid=stIconMaterial] and a ":material/…:" in Markdown as a span
# role=img; both spell the icon's name, which the font's ligature turns into one glyph.
_ICONS_JS = """() => [...document.querySelectorAll(
        '[data-testid="stIconMaterial"], span[role="img"][aria-label$=" icon"]')]
    .filter(e => e.getBoundingClientRect().width > 0)
    .map(e => ({name: e.innerText, width: e.getBoundingClientRect().width, font: getComputedStyle(e).fontFamily,
                size: parseFloat(getComputedStyle(e).fontSize)}))"""


@pytest.fixture(scope="module")
def empty_app(tmp_path_factory):
    require_browser()
    with serve_app(tmp_path_factory.mktemp("icons_data")) as url:
        yield url


@pytest.mark.parametrize("path", ["evaluate", "documents"])
def test_icons_are_material_glyphs_not_emoji(empty_app, page, path):
    elsewhere = []  # a Material icon used as favicon (a page's icon by default) is fetched from fonts.gstatic.com
    page.on("request", lambda r: elsewhere.append(r.url) if not r.url.startswith((empty_app, "data:", "blob:"))
            else None)
    page.goto(f"{empty_app}/{path}")
    _settle(page)
    assert elsewhere == []
    assert page.evaluate("() => document.querySelector('link[rel*=icon]').href").startswith("data:image/svg+xml")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"icons_{path}.png"))
    assert emoji_in(page.inner_text("body")) == []
    icons = page.evaluate(_ICONS_JS)
    names = {icon["name"] for icon in icons}
    assert {"home", "description", "view_agenda", "science", "smart_toy", "leaderboard", "explore"} <= names
    if path == "evaluate":
        assert {"play_arrow", "emoji_events", "grid_on", "settings", "inventory_2"} <= names  # the tabs
    for icon in icons:  # a ligature the font did not turn into a glyph is as wide as its name ("leaderboard")
        assert "Material Symbols" in icon["font"] and icon["width"] <= 1.6 * icon["size"], icon
    fonts_ready = page.evaluate("() => document.fonts.check('16px \"Material Symbols Rounded\"', 'home')")
    assert fonts_ready
