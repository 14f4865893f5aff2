"""Structure from a PDF that Debian's Chromium prints from HTML (real fonts, bullet shapes, an outline)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_core.chunking import chunk_document
from rag_core.chunking.markdown_blocks import parse_markdown
from rag_core.config import ChunkingConfig
from rag_core.loaders import load_bytes

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Guide</title>
<style>table{border-collapse:collapse} th,td{border:1px solid #999;padding:2px 6px}
pre{background:#f4f4f4;padding:6px}</style></head><body>
<h1>Operations Guide</h1><p>How the service is run day to day.</p>
<h2>Deploying</h2><p>Deploys go out every weekday morning.</p>
<ul><li>Build the image</li><li>Run the smoke tests</li></ul>
<h3>Rollback</h3><p>Roll back with one command:</p>
<pre><code>deploy rollback --to previous
deploy status</code></pre>
<h2>Limits</h2>
<table><thead><tr><th>Plan</th><th>Requests</th></tr></thead>
<tbody><tr><td>Basic</td><td>100</td></tr><tr><td>Pro</td><td>1000</td></tr></tbody></table>
</body></html>"""


def _print(tmp_path: Path) -> bytes:
    if shutil.which(CHROMIUM) is None:
        pytest.skip("Debian chromium is not installed")
    page = tmp_path / "guide.html"
    page.write_text(PAGE, encoding="utf-8")
    out = tmp_path / "guide.pdf"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={tmp_path / 'p'}",
                    "--no-pdf-header-footer", "--generate-pdf-document-outline", f"--print-to-pdf={out}",
                    page.as_uri()], check=True, capture_output=True, timeout=120)
    return out.read_bytes()


def _without_outline(data: bytes) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(data)), import_outline=False)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_chromium_printed_pdf_keeps_headings_list_code_and_table(tmp_path):
    printed = _print(tmp_path)
    expected = [(1, "Operations Guide"), (2, "Deploying"), (3, "Rollback"), (2, "Limits")]
    for data in (printed, _without_outline(printed)):
        doc = load_bytes("guide.pdf", data)
        blocks = parse_markdown(doc.text).blocks
        assert [(b.level, b.title) for b in blocks if b.kind == "heading"] == expected
        assert "- Build the image\n- Run the smoke tests" in doc.text
        assert "```\ndeploy rollback --to previous\ndeploy status\n```" in doc.text
        assert "| Plan | Requests |\n|---|---|\n| Basic | 100 |\n| Pro | 1000 |" in doc.text
    sections = [c.heading_path for c in chunk_document(doc, ChunkingConfig(), "section")]
    assert ["Operations Guide", "Deploying", "Rollback"] in sections
