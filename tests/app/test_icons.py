"""Icons are Streamlit Material icons or words, never emoji: Debian's Chromium has no emoji font and draws a box
for each (issue 25). Typographic characters that the DejaVu fonts draw (–, —, →, ·, …, ✓, ✗, ⏎) stay allowed."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig
from tests.app.apptest_helpers import studio_app

ROOT = Path(__file__).resolve().parents[2]
APP_SOURCES = sorted([ROOT / "app.py", *(ROOT / "views").glob("*.py"), *(ROOT / "ui").rglob("*.py")])

# Blocks of pictographs and symbols that browsers draw from an emoji font, plus the characters that turn text into
# emoji presentation (variation selector 16, zero-width joiner, keycap) and the fullwidth forms no font here has.
EMOJI_RANGES = [
    (0x2300, 0x23FF),  # Miscellaneous Technical: ⏳ ⏹ ⌛ …
    (0x2600, 0x27BF),  # Miscellaneous Symbols, Dingbats: ⚠ ⚙ ✅ ❌ ✂ …
    (0x2B00, 0x2BFF),  # arrows and shapes drawn as emoji: ⭐ ⬆ …
    (0xFE0F, 0xFE0F), (0x200D, 0x200D), (0x20E3, 0x20E3),
    (0xFF00, 0xFFEF),  # halfwidth and fullwidth forms
    (0x1F000, 0x1FAFF),  # 🏠 📄 🧩 🔬 🤖 📊 📎 🏆 …
]
# In those blocks, but plain typography that DejaVu Sans draws (checked with `fc-list :charset=<hex>`).
ALLOWED = {"✓", "✗", "⏎"}
MATERIAL = re.compile(r":material/([a-z0-9_]+):")


def is_emoji(char: str) -> bool:
    return char not in ALLOWED and any(low <= ord(char) <= high for low, high in EMOJI_RANGES)


def emoji_in(text: str) -> list[str]:
    return [f"U+{ord(c):04X} {unicodedata.name(c, '?')}" for c in text if is_emoji(c)]


@pytest.mark.parametrize("char", ["🏠", "📎", "⚠", "✅", "⏳", "\ufe0f", "🏆", "＆"])
def test_the_scan_finds_emoji(char):
    assert emoji_in(f"label {char} text")


@pytest.mark.parametrize("char", ["–", "—", "→", "·", "…", "✓", "✗", "⏎", "‹", "›", "≥", "×", "÷", "Δ", "¶", "↗"])
def test_the_scan_allows_typography(char):
    assert emoji_in(f"label {char} text") == []


@pytest.mark.parametrize("path", APP_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_app_sources_use_no_emoji(path):
    found = [f"line {number}: {', '.join(emoji_in(line))}"
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if emoji_in(line)]
    assert found == [], "use ':material/<name>:' or words instead: " + "; ".join(found)


def test_material_icon_names_are_written_in_snake_case():
    names = {name for path in APP_SOURCES for name in MATERIAL.findall(path.read_text(encoding="utf-8"))}
    assert {"home", "leaderboard", "attach_file"} <= names  # the navigation and the citation buttons use them


def test_navigation_and_titles_show_material_icons(data_dir):
    at = studio_app(RAGConfig(name="icons", embedding=EmbeddingConfig(embedder="hash")), timeout=60).run()
    assert not at.exception
    assert at.title[0].value.startswith(":material/explore:")
    assert at.sidebar.markdown[0].value.startswith("### :material/explore:")
