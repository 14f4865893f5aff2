"""The Chunk Explorer names the PDF pages a chunk comes from."""

from __future__ import annotations

from rag_core.types import Chunk
from ui.explorer import chunk_view


def _chunk(pages=None) -> Chunk:
    return Chunk(id="c1", doc_id="d", granularity="paragraph", chunk_type="prose", text="Hi.", start=0, end=3,
                 tokens=1, metadata={"pages": pages} if pages else {})


def test_page_label_in_hover_title_and_table():
    assert chunk_view.page_label(_chunk([3])) == "page 3"
    assert chunk_view.page_label(_chunk([3, 4, 5])) == "pages 3–5"
    assert chunk_view.page_label(_chunk()) == ""
    assert "· page 3" in chunk_view.chunk_title(1, _chunk([3]))
    assert "page" not in chunk_view.chunk_title(1, _chunk())
    assert list(chunk_view.chunk_table([_chunk([2, 3])])["pages"]) == ["pages 2–3"]
