"""Issue 39 item 11: an honest but huge text document (a 45 MB .txt in a ZIP) is refused before it is chunked,
with the limit stated (``RAG_MAX_DOCUMENT_MB``), instead of peaking at 1.38 GB while 44,250 chunks are made."""

from __future__ import annotations

import io
import time
import tracemalloc
import zipfile

import pytest

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.errors import LoadError
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.loaders.archives import expand_zip
from rag_core.types import Document

PARAGRAPH = b"The quota of a free plan is five jobs an hour, and the timeout is thirty seconds.\n\n"


def _zip(member: str, data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:  # stored: no bomb-like ratio
        archive.writestr(member, data)
    return buffer.getvalue()


def test_a_huge_text_member_of_a_zip_is_refused_before_chunking_in_bounded_memory():
    text = PARAGRAPH * (6_000_000 // len(PARAGRAPH))  # 6 million characters: over the default 5
    members, errors = expand_zip("notes.zip", _zip("notes.txt", text), max_member_bytes=50 * 1024 * 1024)
    assert not errors
    name, data = members[0][0], members[0][1]
    del text
    started = time.perf_counter()
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match=r"notes.txt: holds 6.0 million characters of text, over the limit of "
                                            r"5 million per document \(RAG_MAX_DOCUMENT_MB\)"):
            load_bytes(name, bytes(data))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 20  # no chunking (that took ~112 s for 45 MB)
    assert peak < 8 * len(data), f"{peak / 1e6:.0f} MB"


def test_the_limit_is_a_setting_and_a_document_under_it_loads(monkeypatch):
    monkeypatch.setenv("RAG_MAX_DOCUMENT_MB", "0.001")  # 1,000 characters
    assert load_bytes("short.md", PARAGRAPH * 10).text
    with pytest.raises(LoadError, match=r"long.md: holds 0.0 million characters.*limit of 0.001 million"):
        load_bytes("long.md", PARAGRAPH * 20)


def test_ingest_refuses_a_document_over_the_limit_without_chunking_it(data_dir):
    settings = Settings(data_dir=data_dir, max_document_mb=0.001)
    index = Index.open("sized", settings, get_embedder("hash", settings))
    text = (PARAGRAPH * 20).decode()
    doc = Document(id="0123456789abcdef", name="bundled.md", doc_type="markdown", size=len(text), created="",
                   text=text)
    report = index.ingest([doc])
    assert "RAG_MAX_DOCUMENT_MB" in report.errors["bundled.md"]
    assert index.documents() == []
