"""The one rule for untrusted text (ui/safe_text.py) and the pages that apply it: no image, raw HTML or odd link left.

``active_parts`` parses what a page hands to Streamlit the way Streamlit's Markdown does (CommonMark + GFM tables,
strikethrough and autolink literals) and lists whatever would fetch, run or link somewhere.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from rag_core.types import Chunk
from tests.app.apptest_helpers import page_app
from ui.explorer import chunk_view
from ui.safe_text import md_escape, md_inert, plot_text, safe_markdown

PAGES = Path(__file__).resolve().parents[2] / "views"
HASH_CONFIG = RAGConfig(name="untrusted-test", embedding=EmbeddingConfig(embedder="hash"))
BEACON = "http://127.0.0.1:8799/answer-beacon.png?q=retention"
HOSTILE = (
    "# Backups <a href='http://evil.test/h'>here</a>\n\n"
    f"The backup retention period is 30 days. ![pixel]({BEACON})\n\n"
    "![ref image][logo] and [a link](https://docs.example.com/backups) and [bad](javascript:alert(1)) "
    "and <http://auto.example/x> and www.bare.example and mail@evil.example and $x^2$ maths.\n\n"
    "<img src=http://evil.test/i.png onerror=alert(1)>\n\n<script>alert('xss')</script>\n\n"
    "| a | b |\n|---|---|\n| ![cell](http://evil.test/cell.png) | c |\n\n"
    "[logo]: http://evil.test/logo.png\n"
)
_PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
# GFM links these in text by itself, after escapes are resolved (so an escape does not stop it; code does).
_LITERAL_LINK = re.compile(r"(https?://|www\.)\w|[\w.+-]+@[\w-]+\.\w", re.IGNORECASE)


def _outside_code(markdown: str) -> str:
    """``markdown`` without its code spans and fences (backtick runs not escaped, paired with the next run of the
    same length), where ``$`` is literal."""
    runs = []  # (start, end) of each backtick run; an escaped first backtick is not part of it
    for m in re.finditer(r"`+", markdown):
        escaped = len(re.search(r"\\*$", markdown[: m.start()]).group(0)) % 2
        if m.end() - m.start() - escaped:
            runs.append((m.start() + escaped, m.end()))
    kept, position, i = [], 0, 0
    while i < len(runs):
        width = runs[i][1] - runs[i][0]
        closing = next((j for j in range(i + 1, len(runs)) if runs[j][1] - runs[j][0] == width), None)
        if closing is None:
            i += 1
            continue
        kept.append(markdown[position : runs[i][0]])
        position, i = runs[closing][1], closing + 1
    return "".join([*kept, markdown[position:]])


def active_parts(markdown: str) -> list[str]:
    """Images, raw HTML, maths and links that are not marked http(s) links, as Streamlit would see them."""
    found, stack = [], list(_PARSER.parse(markdown))
    while stack:
        token = stack.pop()
        if token.type in ("image", "html_inline", "html_block"):
            found.append(f"{token.type}: {token.content or token.attrGet('src')}")
        elif token.type == "link_open":
            href = str(token.attrGet("href"))
            if not href.startswith(("http://", "https://")):
                found.append(f"link: {href}")
        elif token.type == "text" and _LITERAL_LINK.search(token.content):
            found.append(f"literal link: {token.content}")
        stack.extend(token.children or [])
    found += [f"maths: {m.group(0)}" for m in re.finditer(r"(?<!\\)\$[^$`]*\$", _outside_code(markdown))]
    return found


def test_safe_markdown_keeps_formatting_and_leaves_nothing_active():
    shown = safe_markdown(HOSTILE)
    assert active_parts(HOSTILE)  # the check itself sees the hostile parts
    assert active_parts(shown) == []
    assert f"\\[image: pixel\\] ` {BEACON} `" in shown  # alt text and URL, as inert text
    assert "[a link ↗ docs.example.com](<https://docs.example.com/backups>)" in shown  # marked, kept
    assert "javascript" in shown and "alert" in shown  # shown, not a link
    assert "http://evil.test/logo.png" in shown  # the reference image's URL, as text
    assert "# Backups" in shown and "| a | b |" in shown  # heading and table still render
    assert "```html\n<script>alert('xss')</script>\n```" in shown  # raw HTML shown as code


def test_md_escape_and_md_inert_leave_nothing_active():
    assert active_parts(md_escape(HOSTILE)) == []
    # md_inert leaves tags as typed: Streamlit shows raw HTML as text (the browser test checks nothing is fetched).
    assert [part for part in active_parts(md_inert(HOSTILE)) if not part.startswith("html")] == []
    assert md_inert("Chroma server at 127.0.0.1:9 is unreachable") == "Chroma server at 127.0.0.1:9 is unreachable"


def test_plot_text_escapes_html_in_treemap_labels_and_hovers():
    assert plot_text("<a href='http://evil.test'>x</a>") == "&lt;a href=&#x27;http://evil.test&#x27;&gt;x&lt;/a&gt;"
    heading = "<a href='http://evil.test/t'>Setup</a>"
    section = Chunk(id="s1", doc_id="d", text="x", start=0, end=1, granularity="section", chunk_type="prose",
                    tokens=1, heading_path=[heading])
    figure = chunk_view.treemap([section], "<b>doc</b>.md")
    trace = figure.data[0]
    assert not any("<" in str(label) for label in trace.labels)
    assert not any("<" in str(text) for text in trace.hovertext)


def _page_markdown(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for kind in ("error", "warning", "info", "success") for e in getattr(at, kind)]
    parts += [x.label for x in at.expander] + [b.label for b in at.button] + [s.label for s in at.status]
    return "\n\n".join(parts)


def test_agent_answers_quote_documents_without_fetching_anything(data_dir):
    open_index(HASH_CONFIG).ingest([load_bytes("backups.md", HOSTILE.encode())])
    at = page_app(str(PAGES / "agent_playground.py"), HASH_CONFIG, agent_compare=True)
    at.run()
    at.chat_input[0].set_value("What is the backup retention period?").run()
    assert not at.exception
    shown = _page_markdown(at)
    assert "answer\\-beacon" in shown or "answer-beacon" in shown  # the extractive answers quote the image ...
    assert active_parts(shown) == []  # ... as text, in the agent's answer and the one-shot answer alike


PIECES = ["![", "[", "]", "(", ")", "<", ">", "img src=", "http://evil.test/x.png", "www.evil.test", "a@evil.test",
          "javascript:", "\n", "\n\n", " ", "`", "*", "_", "$", "|", "---", "#", "- ", "1. ", "\\", "&lt;", "&#33;",
          "<script>", "</a>", "[r]: http://evil.test/r.png", "![a][r]", "word", ":red[", "~~"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_no_arrangement_of_markdown_pieces_becomes_active(text):
    assert active_parts(safe_markdown(text)) == []
    assert active_parts(md_escape(text)) == []
    assert [p for p in active_parts(md_inert(text)) if not p.startswith("html")] == []


def test_tags_as_text_reads_html_as_its_words_and_leaves_code_as_written():
    from ui.safe_text import tags_as_text

    text = ('<p style="text-align:center"><img src="https://x.test/logo.png" alt="Big &amp; logo" width=200></p>\n'
            "<!-- note --><SCRIPT>window.__pwned = 1</SCRIPT>Intro <b>bold</b>, ![chart](c.png), a<br>b, 1 < 2, "
            "`<img src=x>` stays.\n\n```html\n<p>kept</p>\n```\n")
    assert tags_as_text(text) == ("[image: Big & logo]\n\nIntro bold, [image: chart], a\nb, 1 < 2, `<img src=x>` "
                                  "stays.\n\n```html\n<p>kept</p>\n```\n")
    assert tags_as_text('<img src="x.png">') == "[image: image]"
