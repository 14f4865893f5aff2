"""A citation opens the Chunk Explorer on the cited chunk: Source view, selected and scrolled to, chunked with the
settings of the index the answer came from (not the session's sliders); the same target as a link."""

from __future__ import annotations

import pytest

from rag_core.chunking import chunk_document
from rag_core.config import ChunkingConfig, EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from tests.app.apptest_helpers import studio_app
from ui.explorer_link import ChunkLink, from_params

CONFIG = RAGConfig(name="cite-test", embedding=EmbeddingConfig(embedder="hash"),
                   chunking=ChunkingConfig(max_tokens=96, overlap=8))
GUIDE = ("# Wrenfall guide\n\n" + "".join(
    f"## Topic {i}\n\nTopic {i} covers the subject of chapter {i} in some words that fill a passage.\n\n"
    for i in range(12))
    + "## Keys\n\nTo rotate the API key, open Settings, choose Keys and press Rotate. The old key stops working "
      "after one hour.\n")


@pytest.fixture
def indexed(data_dir):
    doc, _ = DocumentStore(data_dir).add(load_bytes("guide.md", GUIDE.encode()))
    open_index(CONFIG, get_settings()).ingest([doc])
    return doc


def _html(at) -> str:
    return "".join(h.proto.body for h in at.get("html"))


def test_citation_opens_source_on_the_cited_chunk_with_the_index_settings(indexed):
    at = studio_app(CONFIG)
    at.run()
    # The session's own Explorer state: other sliders and the last tab.
    at.session_state["a_max_tokens"], at.session_state["a_overlap"] = 256, 0
    at.session_state["explorer_view"] = "Charts"
    at.switch_page("views/agent_playground.py").run()
    at.chat_input[0].set_value("How do I rotate the API key?").run()
    assert not at.exception
    result = at.session_state["agent_chat"][0][1]
    cited = result.citations[0]
    next(b for b in at.button if b.label.startswith(":material/attach_file:")).click().run()
    assert not at.exception
    assert at.radio(key="explorer_view").value == "Source"
    assert (at.slider(key="a_max_tokens").value, at.slider(key="a_overlap").value) == (96, 8)
    assert at.session_state["explorer_selected"] == cited
    assert at.selectbox(key="explorer_doc").value == indexed.id
    chunks = {c.id: c for c in chunk_document(indexed, CONFIG.chunking, "all")}
    assert at.selectbox(key="explorer_granularity").value == chunks[cited].granularity
    assert 'id="selected-chunk"' in _html(at) and "scrollIntoView" in _html(at)
    assert any("settings the cited index was built with (structure 96 tok, overlap 8)" in c.value
               for c in at.caption)
    # Applied once: moving a slider afterwards sticks (the URL still holds the link). AppTest runs the page it was
    # switched to last, not the one the app switched to: say where the browser now is.
    at.switch_page("views/chunk_explorer.py")
    at.slider(key="a_max_tokens").set_value(128).run()
    assert at.slider(key="a_max_tokens").value == 128 and not at.exception


def test_a_link_opens_the_chunk_and_bad_links_are_ignored(indexed):
    chunk = chunk_document(indexed, CONFIG.chunking, "section")[-1]
    link = ChunkLink(indexed.id, chunk.id, CONFIG.chunking)
    assert from_params(link.params()) == link
    assert from_params({"doc": "../../etc", "chunk": chunk.id}) is None
    assert from_params({"doc": indexed.id, "chunk": chunk.id, "strategy": "structure", "max_tokens": "x"}) == \
        ChunkLink(indexed.id, chunk.id, None)

    at = studio_app(CONFIG)
    at.query_params.update(link.params())
    at.switch_page("views/chunk_explorer.py")
    at.run()
    assert not at.exception
    assert at.radio(key="explorer_view").value == "Source"
    assert at.selectbox(key="explorer_granularity").value == "section"
    assert at.session_state["explorer_selected"] == chunk.id


def test_a_chunk_the_document_no_longer_has_says_so(indexed):
    at = studio_app(CONFIG)
    at.query_params.update(ChunkLink(indexed.id, "0" * 16, CONFIG.chunking).params())
    at.switch_page("views/chunk_explorer.py")
    at.run()
    assert not at.exception
    assert any("linked chunk (a citation or evidence) is not among this document's chunks" in w.value
               for w in at.warning)


def test_a_retrieval_lab_hit_opens_in_the_explorer(indexed):
    at = studio_app(CONFIG)
    at.run()
    at.switch_page("views/retrieval_lab.py").run()
    at.text_input(key="lab_query").input("rotate the API key")
    next(b for b in at.button if b.label == "Search").click().run()
    hit = at.session_state["lab_result"].hits[0]
    at.button(key="lab_open_hit_button").click().run()
    assert not at.exception
    assert at.radio(key="explorer_view").value == "Source"
    assert at.session_state["explorer_selected"] == hit.chunk.id
    assert at.slider(key="a_max_tokens").value == 96
