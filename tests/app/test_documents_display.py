"""Documents page details: one size formatter (the uploader's decimal units), no "None" in the job's status
table, and treemap labels that read as words."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rag_core.chunking import chunk_document
from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from tests.app.apptest_helpers import page_app
from ui.explorer import chunk_view
from ui.units import human_size

ROOT = Path(__file__).resolve().parents[2]
CONFIG = RAGConfig(name="docs-display", embedding=EmbeddingConfig(embedder="hash"))
# 7,990 bytes: the file uploader says 8.0KB (units of 1,000); the table said 7.8 KB (units of 1,024).
GUIDE = ("# Guide\n\n" + "Rotate the key from the settings page when a person leaves the team.\n\n" * 200)[:7989] + "\n"


@pytest.mark.parametrize(("n_bytes", "shown"), [(0, "0 B"), (999, "999 B"), (7_990, "8.0 KB"), (1_000, "1.0 KB"),
                                                (999_999, "1.0 MB"), (2_400_000, "2.4 MB")])
def test_sizes_are_written_in_the_uploaders_decimal_units(n_bytes, shown):
    assert human_size(n_bytes) == shown


def test_the_documents_table_and_the_explorer_agree_on_a_size(data_dir):
    assert len(GUIDE.encode()) == 7_990
    doc = load_bytes("guide.md", GUIDE.encode())
    DocumentStore(data_dir).add(doc)
    at = page_app(str(ROOT / "views" / "documents.py"), CONFIG)
    at.run()
    assert not at.exception
    assert list(at.dataframe[-1].value["size"]) == ["8.0 KB"]
    explorer = page_app(str(ROOT / "views" / "chunk_explorer.py"), CONFIG)
    explorer.run()
    assert not explorer.exception
    label = explorer.selectbox(key="explorer_doc").format_func(doc.id)
    assert label.endswith("· 8.0 KB")


def test_job_status_table_has_no_none_cells():
    from rag_core.serving.jobs import FileStatus, JobStatus
    from ui.jobs import files_table

    job = JobStatus("j1", "ingest", "Indexing 3 document(s)", "docs-x", state="running", files=[
        FileStatus("a" * 16, "done.md", 10, state="indexed", chunks=4, seconds=0.25),
        FileStatus("b" * 16, "busy.md", 10, state="embedding"),  # no chunks or seconds yet: they read "None"
        FileStatus("c" * 16, "next.md", 10)])
    files = files_table(job)
    for value in files.to_numpy().ravel():
        assert value is not None and not (isinstance(value, float) and math.isnan(value)), files
    assert list(files["chunks"]) == ["4", "", ""] and list(files["seconds"]) == ["0.2", "", ""]
    assert list(files["why"]) == ["", "", ""]


def test_treemap_parts_read_as_words():
    text = "# Big\n\n" + "\n\n".join(f"## Topic {i}\n\n" + "A sentence about rotating keys. " * 12
                                     for i in range(30))
    doc = load_bytes("big.md", text.encode())
    chunks = chunk_document(doc, ChunkingConfig(max_tokens=64, overlap=0), "all")
    parts = [c for c in chunks if c.granularity == "document"]
    assert len(parts) > 2  # the document is stored as consecutive parts
    labels = list(chunk_view.treemap(chunks, "big.md").data[0].labels)
    # Issue 35 item 10: each part is labelled by the heading it opens under, not "Part 3 of 14".
    part_labels = labels[1:1 + len(parts)]
    assert part_labels[0] == "Big" and all(label.startswith("Big › Topic ") for label in part_labels[1:]), labels
    assert len(set(part_labels)) == len(parts) and not [label for label in labels if "Part " in label], labels
    assert "Big › Big" not in labels and not [label for label in labels if "/" in label and "(" in label], labels
    # Only a part under no heading at all falls back to its number.
    plain = chunk_document(load_bytes("plain.md", ("A sentence about rotating keys. " * 12 + "\n\n").encode() * 30),
                           ChunkingConfig(max_tokens=64, overlap=0), "all")
    count = sum(c.granularity == "document" for c in plain)
    plain_labels = list(chunk_view.treemap(plain, "plain.md").data[0].labels)
    assert count > 2 and "Part 1 of " + str(count) in plain_labels and f"Part {count} of {count}" in plain_labels
