"""Chunk Explorer page (AppTest) and its renderers (ui/explorer/chunk_view.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.chunking import chunk_document
from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes, sample_paths
from rag_core.loaders.document_store import DocumentStore
from rag_core.types import Chunk
from tests.app.apptest_helpers import studio_app, visit_another_page
from ui.explorer import chunk_view

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "chunk_explorer.py")
GUIDE = (
    "# Guide\n\nThe flow is:\n\n1. Sign the claims.\n2. Send the token.\n\n"
    "```python\n# not a heading\nvalue = 1\n```\n\n"
    "## Unsafe\n\nA document may hold <script>alert('x')</script> and must be shown, never run.\n\n"
    "| key | value |\n|-----|-------|\n| a | 1 |\n| b | 2 |\n"
) + "\n".join(f"Paragraph {i} explains one more detail of the retry policy. It has two sentences." for i in range(30))


@pytest.fixture
def guide_doc(data_dir):
    doc, _ = DocumentStore(data_dir).add(load_bytes("guide.md", GUIDE.encode()))
    return doc


def html_bodies(at: AppTest) -> list[str]:
    return [element.proto.body for element in at.get("html")]


def test_empty_store_offers_the_samples(data_dir):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    assert "No documents yet" in at.info[0].value
    at.button[0].click().run()
    assert not at.exception
    assert len(at.selectbox(key="explorer_doc").options) == len(sample_paths())


def test_select_slide_switch_strategy_and_compare(guide_doc):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    assert not at.exception
    at.selectbox(key="explorer_doc").set_value(guide_doc.id).run()
    source = "".join(html_bodies(at))
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in source
    assert "<script>alert" not in source
    def expected(**config) -> int:
        return len(chunk_document(guide_doc, ChunkingConfig(**config), "paragraph"))

    assert at.caption[0].value.startswith(f"{expected()} chunks at paragraph granularity")
    at.slider(key="a_max_tokens").set_value(64).run()
    assert not at.exception
    assert at.caption[0].value.startswith(f"{expected(max_tokens=64)} chunks")
    assert expected(max_tokens=64) > expected()  # a smaller maximum splits the long paragraph into more pieces

    at.radio(key="a_strategy").set_value("fixed").run()
    assert not at.exception
    assert at.caption[0].value.startswith(f"{expected(strategy='fixed', max_tokens=64)} chunks")
    at.radio(key="explorer_view").set_value("Integrity").run()
    assert at.metric[0].label == "Violations" and int(at.metric[0].value) > 0  # fixed windows cut structure

    at.radio(key="a_strategy").set_value("structure").run()
    assert int(at.metric[0].value) == 0
    at.radio(key="explorer_view").set_value("A/B compare").run()
    assert not at.exception
    labels = [m.label for m in at.metric]
    assert labels == ["B: chunks", "B: mean tokens", "B: min tokens", "B: max tokens", "B: violations"]
    assert int(at.metric[4].value) > 0 and at.metric[4].delta == at.metric[4].value  # A has no violations
    compare = at.dataframe[0].value
    assert list(compare["metric"]) == ["chunks", "mean tokens", "min tokens", "max tokens", "violations"]
    assert compare.iloc[4]["A"] == 0 and compare.iloc[4]["B"] > 0
    assert len(at.dataframe[1].value) > 0  # boundary differences listed


def test_overlap_is_bounded_by_max_tokens_and_the_minimum_keeps_the_page(guide_doc):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.slider(key="a_max_tokens").set_value(512).run()
    at.slider(key="a_overlap").set_value(200).run()
    assert at.slider(key="a_overlap").max == 256
    at.slider(key="a_max_tokens").set_value(32).run()  # was: "overlap (32) must be smaller…" and no page
    assert not at.exception and not at.error
    assert at.slider(key="a_overlap").max == 16 and at.slider(key="a_overlap").value == 16
    assert at.caption[0].value.endswith("hover a span for its details")
    assert "chunks at paragraph granularity" in at.caption[0].value
    for view in ("Chunk table", "Charts", "Integrity", "A/B compare"):
        at.radio(key="explorer_view").set_value(view).run()
        assert not at.exception and not at.error, view
    for key in ("b_max_tokens",):  # configuration B at its extremes too
        at.slider(key=key).set_value(32).run()
        assert not at.exception and not at.error
        at.slider(key=key).set_value(2048).run()
        at.slider(key="b_overlap").set_value(256).run()
        assert not at.exception and not at.error


def test_use_these_settings_saves_the_chunking_and_reindexes_as_a_job(guide_doc, data_dir):
    from rag_core.serving.configstore import ConfigStore
    from rag_core.serving.jobs import runner_for
    from tests.app.apptest_helpers import finish_jobs, page_app

    config = RAGConfig(name="team", embedding=EmbeddingConfig(embedder="hash"))
    ConfigStore(data_dir).save(config)
    at = page_app(PAGE, config)
    at.run()
    assert at.button(key="explorer_apply").disabled  # nothing tuned yet
    at.slider(key="a_max_tokens").set_value(128).run()
    at.slider(key="a_overlap").set_value(16).run()
    at.button(key="explorer_apply").click().run()
    assert not at.exception
    tuned = ChunkingConfig(strategy="structure", max_tokens=128, overlap=16)
    assert at.session_state["active_config"].chunking == tuned
    assert ConfigStore(data_dir).load("team") == config  # a saved configuration is a snapshot: only the active changed
    assert at.success[0].value.startswith("Saved into the active configuration `team`; Re\\-indexing 1 document")
    job = runner_for(data_dir).jobs(limit=1)[0]
    assert job.kind == "reindex" and job.settings == tuned.model_dump()
    assert job.collection == config.model_copy(update={"chunking": tuned}).collection_name()
    finish_jobs(at)
    assert runner_for(data_dir).get(job.id).state == "done"
    assert at.button(key="explorer_apply").disabled
    from rag_core.config import get_settings
    from rag_core.services import open_index

    index = open_index(at.session_state["active_config"], get_settings())
    assert [row["name"] for row in index.documents()] == ["guide.md"]


def test_the_sidebar_names_what_the_index_was_built_with(guide_doc, data_dir):
    config = RAGConfig(name="team", chunking=ChunkingConfig(max_tokens=128, overlap=16),
                       embedding=EmbeddingConfig(embedder="hash"))
    from rag_core.config import get_settings
    from rag_core.services import open_index

    open_index(config, get_settings()).ingest([guide_doc])
    at = studio_app(config)
    at.run()
    line = next(c.value for c in at.sidebar.caption if c.value.startswith("**Index**"))
    assert line.startswith(f"**Index** `{config.collection_name()}`: 1 docs, ")
    assert line.endswith("built with structure 128 tok, overlap 16 · hash")


def test_prefill_selects_document_chunk_and_ab_view(guide_doc):
    chunk = chunk_document(guide_doc, ChunkingConfig(), "paragraph")[2]
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["prefill"] = {"page": "explorer", "doc_id": guide_doc.id, "chunk_id": chunk.id}
    at.run()
    assert not at.exception
    assert at.selectbox(key="explorer_doc").value == guide_doc.id
    assert at.info[0].value.startswith(r"Selected: Chunk \#3 ·")
    assert any('id="selected-chunk"' in body for body in html_bodies(at))

    section = chunk_document(guide_doc, ChunkingConfig(), "section")[1]
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["prefill"] = {"page": "explorer", "doc_id": guide_doc.id, "chunk_id": section.id}
    at.run()
    assert at.selectbox(key="explorer_granularity").value == "section"
    assert at.info[0].value.startswith(r"Selected: Chunk \#2 ·")

    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["prefill"] = {"page": "explorer", "doc_id": guide_doc.id, "strategy_b": "fixed"}
    at.run()
    assert not at.exception
    assert at.radio(key="explorer_view").value == "A/B compare"
    assert at.radio(key="b_strategy").value == "fixed"


def _chunk(cid, start, end, text, chunk_type="prose", heading_path=()):
    return Chunk(cid, "d", "paragraph", chunk_type, text[start:end], start, end, 3, heading_path=list(heading_path))


def test_highlight_escapes_titles_and_stripes_overlaps():
    text = 'Hi <b>"there"</b> end'
    chunks = [_chunk("a", 0, 12, text, heading_path=['Q "x"']), _chunk("b", 8, 21, text, "code")]
    out = chunk_view.highlight_html(text, chunks, color_by="type", selected_id="b")
    assert "<b>" not in out and "Hi &lt;b&gt;&quot;t" in out
    assert out.count('class="chunk overlap"') == 1
    assert 'title="Chunk #1 · 3 tokens · prose · Q &quot;x&quot;"' in out
    assert out.count('id="selected-chunk"') == 1 and "scrollIntoView" in out
    with pytest.raises(ValueError, match="color_by must be 'chunk' or 'type'"):
        chunk_view.highlight_html(text, chunks, color_by="size")


def test_long_sources_are_drawn_in_a_window_keeping_chunk_numbers():
    text = "aaaa bbbb cccc dddd"
    chunks = [_chunk("a", 0, 4, text), _chunk("b", 5, 9, text), _chunk("c", 10, 14, text), _chunk("d", 15, 19, text)]
    assert chunk_view.source_window(19, limit=100) == (0, 19)
    assert chunk_view.source_window(1000, focus=990, limit=100) == (900, 1000)
    assert chunk_view.source_window(1000, focus=500, limit=100) == (450, 550)
    out = chunk_view.highlight_html(text, chunks, window=(6, 12))
    assert "aaaa" not in out and "dddd" not in out and ">bbb<" in out and ">cc<" in out
    assert "Chunk #2 ·" in out and "Chunk #3 ·" in out and "Chunk #1 ·" not in out


def test_summary_boundary_diff_and_table():
    text = "abcdefghij"
    a = [_chunk("a1", 0, 5, text), _chunk("a2", 5, 10, text)]
    b = [_chunk("b1", 0, 4, text), _chunk("b2", 4, 10, text)]
    diff = chunk_view.boundary_diff(text, a, b, context=2)
    assert diff.to_dict("records") == [
        {"offset": 4, "boundary in": "B only", "context": "cd ⟂ ef"},
        {"offset": 5, "boundary in": "A only", "context": "de ⟂ fg"},
    ]
    # one cut is one row: a chunk ending before a blank line and the next starting after it are the same cut
    text2 = "one two\n\nthree four\n\nfive"
    a2 = [_chunk("x1", 0, 7, text2), _chunk("x2", 9, 19, text2), _chunk("x3", 21, 25, text2)]
    b2 = [_chunk("y1", 0, 19, text2), _chunk("y2", 19, 25, text2)]
    assert chunk_view.boundary_diff(text2, a2, b2, context=3).to_dict("records") == [
        {"offset": 9, "boundary in": "A only", "context": "o⏎⏎ ⟂ thr"}]
    assert chunk_view.summary(a, 2) == {"chunks": 2, "mean tokens": 3.0, "min tokens": 3, "max tokens": 3,
                                        "violations": 2}
    assert chunk_view.summary([], 0)["max tokens"] == 0
    assert list(chunk_view.chunk_table(a)["#"]) == [1, 2]


def test_picking_a_table_row_shows_that_chunk_in_the_source(guide_doc):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.selectbox(key="explorer_doc").set_value(guide_doc.id).run()
    at.radio(key="explorer_view").set_value("Chunk table").run()
    table = at.dataframe[0]
    assert table.key == "explorer_table" and table.proto.selection_mode  # the caption's promise: rows can be picked
    chunk_id = table.value["id"].iloc[2]
    at.session_state["explorer_table"] = {"selection": {"rows": [2], "columns": [], "cells": []}}  # a click
    at.run()
    assert not at.exception
    assert at.radio(key="explorer_view").value == "Source"
    assert at.info[0].value.startswith(r"Selected: Chunk \#3 ·")
    assert 'id="selected-chunk"' in "".join(html_bodies(at)) and chunk_id == at.session_state["explorer_selected"]


def test_fixed_strategy_says_it_has_only_paragraph_windows(guide_doc):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.run()
    at.selectbox(key="explorer_doc").set_value(guide_doc.id).run()
    at.selectbox(key="explorer_granularity").set_value("section").run()
    at.radio(key="a_strategy").set_value("fixed").run()
    assert not at.exception
    fixed = len(chunk_document(guide_doc, ChunkingConfig(strategy="fixed"), "paragraph"))
    assert at.caption[0].value.startswith(f"{fixed} chunks at paragraph granularity")  # not "at section"
    assert at.selectbox(key="explorer_granularity").disabled
    at.radio(key="a_strategy").set_value("structure").run()
    assert at.caption[0].value.startswith(f"{len(chunk_document(guide_doc, ChunkingConfig(), 'section'))} chunks "
                                          "at section granularity")


def test_selected_chunk_heading_is_shown_as_written(data_dir):
    doc, _ = DocumentStore(data_dir).add(load_bytes("odd.md", b"# Costs **now** $5 and $6\n\nPlain text here.\n"))
    chunk = chunk_document(doc, ChunkingConfig(), "paragraph")[-1]
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["prefill"] = {"page": "explorer", "doc_id": doc.id, "chunk_id": chunk.id}
    at.run()
    assert not at.exception
    assert at.info[0].value.endswith(r"Costs \*\*now\*\* \$5 and \$6")  # not bold, not maths


def test_every_choice_survives_a_visit_to_another_page(data_dir):
    store = DocumentStore(data_dir)
    store.add(load_bytes("first.md", b"# First\n\nThe document shown when nothing was picked.\n"))
    guide_doc, _ = store.add(load_bytes("guide.md", GUIDE.encode()))
    at = studio_app(RAGConfig(name="explorer-test", embedding=EmbeddingConfig(embedder="hash")))
    at.run()
    at.switch_page("views/chunk_explorer.py").run()
    at.selectbox(key="explorer_doc").set_value(guide_doc.id).run()
    at.radio(key="explorer_view").set_value("A/B compare").run()
    at.slider(key="b_max_tokens").set_value(96).run()
    at.radio(key="b_strategy").set_value("structure").run()
    at.slider(key="a_max_tokens").set_value(128).run()
    at.slider(key="a_overlap").set_value(16).run()
    at.selectbox(key="explorer_granularity").set_value("section").run()
    at.radio(key="explorer_color").set_value("type").run()
    at.radio(key="explorer_view").set_value("Charts").run()
    at.radio(key="a_strategy").set_value("fixed").run()
    assert not at.exception
    visit_another_page(at, "views/chunk_explorer.py")
    assert at.selectbox(key="explorer_doc").value == guide_doc.id
    assert at.radio(key="a_strategy").value == "fixed"
    assert at.slider(key="a_max_tokens").value == 128
    assert at.slider(key="a_overlap").value == 16
    assert at.selectbox(key="explorer_granularity").value == "section"
    assert at.radio(key="explorer_color").value == "type"
    assert at.radio(key="explorer_view").value == "Charts"
    # Configuration B (drawn only in the A/B view) is kept too.
    at.radio(key="explorer_view").set_value("A/B compare").run()
    assert at.slider(key="b_max_tokens").value == 96
    assert at.radio(key="b_strategy").value == "structure"


def test_a_kept_document_deleted_meanwhile_falls_back_to_the_first(data_dir):
    store = DocumentStore(data_dir)
    first, _ = store.add(load_bytes("first.md", b"# First\n\nStays.\n"))
    gone, _ = store.add(load_bytes("gone.md", b"# Gone\n\nDeleted while the user is on another page.\n"))
    at = studio_app(RAGConfig(name="explorer-test", embedding=EmbeddingConfig(embedder="hash")))
    at.run()
    at.switch_page("views/chunk_explorer.py").run()
    at.selectbox(key="explorer_doc").set_value(gone.id).run()
    at.switch_page("views/home.py").run()
    store.delete(gone.id)
    at.switch_page("views/chunk_explorer.py").run()
    assert not at.exception
    assert at.selectbox(key="explorer_doc").value == first.id


def test_treemap_keeps_document_order_and_readable_plain_labels(guide_doc):
    chunks = chunk_document(guide_doc, ChunkingConfig(), "all")
    trace = chunk_view.treemap(chunks, "guide.md").data[0]
    assert trace.sort is False  # Plotly's default sorts boxes by size, scrambling the document's order
    by_id = {c.id: c for c in chunks}
    starts = [by_id[node].start for node in trace.ids if node in by_id and by_id[node].granularity == "paragraph"]
    assert starts == sorted(starts) and len(starts) > 3  # paragraphs in the order they are written
    paragraphs = [label for label in trace.labels if label.startswith("¶ ")]
    assert paragraphs[0].startswith("¶ The flow is: 1. Sign")
    assert all("<" not in label for label in trace.labels)
    assert any("‹script›alert(&#x27;x&#x27;)‹/script›" in label for label in trace.labels)  # Plotly shows the entity


def test_integrity_findings_list_each_span_once():
    same = {"kind": "sentence_cut", "start": 10, "end": 40, "detail": "cut inside a sentence"}
    findings = [{**same, "chunk_id": f"c{i}"} for i in range(5)] + [
        {"kind": "over_max_tokens", "start": 50, "end": 90, "detail": "too long", "chunk_id": "c9"}]
    table = chunk_view.findings_table(findings)
    assert table.to_dict("records") == [
        {"kind": "sentence_cut", "start": 10, "end": 40, "chunks": 5, "detail": "cut inside a sentence",
         "first chunk": "c0"},
        {"kind": "over_max_tokens", "start": 50, "end": 90, "chunks": 1, "detail": "too long", "first chunk": "c9"}]


def test_use_these_settings_says_what_it_does_while_it_saves(guide_doc, data_dir, spinners, monkeypatch):
    from rag_core.serving.jobs import JobRunner
    from tests.app.apptest_helpers import finish_jobs, page_app

    seen, submit = [], JobRunner.submit_ingest
    monkeypatch.setattr(JobRunner, "submit_ingest",
                        lambda self, *a, **k: seen.append(list(spinners)) or submit(self, *a, **k))
    at = page_app(PAGE, RAGConfig(name="team", embedding=EmbeddingConfig(embedder="hash")))
    at.run()
    at.slider(key="a_max_tokens").set_value(128).run()
    at.button(key="explorer_apply").click().run()
    finish_jobs(at)
    assert not at.exception
    assert seen == [["Saving the chunking into the active configuration and queuing the re-index of every "
                     "document…"]]


def test_an_empty_explorer_under_the_app_keeps_the_sidebar(data_dir):
    """The page ends early (no documents) without stopping the run: app.py still draws the badge after it."""
    at = studio_app(RAGConfig(name="hash-test", embedding=EmbeddingConfig(embedder="hash")))
    at.run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("No documents yet" in info.value for info in at.info)
    assert any("Active config" in caption.value for caption in at.sidebar.caption)
