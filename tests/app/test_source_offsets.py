"""The Chunk Explorer's source view draws each chunk over its own text, front matter or not."""

from __future__ import annotations

import html
import re

from rag_core.chunking import chunk_document
from rag_core.loaders import load_bytes
from ui.explorer.chunk_view import highlight_html

FILE = ("---\ntitle: Deploying\nowner: ops team\n---\n\n# Deploy\n\nRun the release script.\n\n"
        "## Rollback\n\nRevert the tag and redeploy.\n")


def test_source_view_spans_hold_their_chunks_text_with_front_matter():
    doc = load_bytes("deploy.md", FILE.encode())
    paragraphs = [c for c in chunk_document(doc) if c.granularity == "paragraph"]
    assert len(paragraphs) >= 2
    drawn = [html.unescape(s) for s in re.findall(r'<span class="chunk"[^>]*>(.*?)</span>',
                                                  highlight_html(doc.text, paragraphs), re.S)]
    assert drawn == [c.text for c in paragraphs]
    assert "title: Deploying" in html.unescape(highlight_html(doc.text, paragraphs))  # shown as uncoloured text
