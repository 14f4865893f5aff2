"""AppTest of the Playground's Connected agents section: the MCP call timeline read from the call log (client,
tool, arguments, size, latency), a returned chunk opening in the Chunk Explorer, the hand-over snippet, and
**Test the server** really starting the server over stdio."""

from __future__ import annotations

import json

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.mcp_server.calllog import record
from rag_core.mcp_server.handover import CHECK_CLIENT
from rag_core.services import open_index, open_retriever
from rag_core.serving.activestate import activate
from tests.app.apptest_helpers import finish_jobs, studio_app
from ui.safe_text import md_escape

CONFIG = RAGConfig(name="mcp-view", embedding=EmbeddingConfig(embedder="hash"))
GUIDE = ("# Wrenfall guide\n\n## Keys\n\nTo rotate the API key, open Settings, choose Keys and press Rotate.\n\n"
         "## Timeouts\n\nThe request timeout defaults to 30 seconds.\n")
PLAYGROUND = "views/agent_playground.py"


@pytest.fixture
def indexed(data_dir):
    doc, _ = DocumentStore(data_dir).add(load_bytes("guide.md", GUIDE.encode()))
    index = open_index(CONFIG, get_settings())
    index.ingest([doc])
    activate(get_settings(), CONFIG)  # stored, as the app stores it: the server process reads the same
    return index


def _playground():
    at = studio_app(CONFIG)
    at.run()
    at.switch_page(PLAYGROUND).run()
    assert not at.exception
    return at


def _labels(at) -> list[str]:
    return [e.label for e in at.expander]


def _follow(at, label_end: str):
    """Follow the Explorer link whose label ends with ``label_end`` as a browser does: the Explorer page with the
    link's query string (AppTest cannot click a link)."""
    from urllib.parse import parse_qsl

    link = next(e.proto for e in at.get("page_link") if e.proto.label.endswith(label_end))
    assert link.page == "chunk_explorer" and not link.disabled, link
    at.query_params.update(dict(parse_qsl(link.query_string)))
    at.switch_page("views/chunk_explorer.py").run()
    return link


def test_no_calls_yet_says_how_to_get_some(indexed):
    at = _playground()
    assert any("No agent has called the tools yet" in i.value for i in at.info)


def test_calls_are_drawn_newest_first_and_a_chunk_opens_in_the_explorer(indexed, data_dir):
    chunk = next(c for c in indexed.chunks(granularity="paragraph") if "rotate" in c.text)
    record(data_dir, client="claude-desktop", tool="list_documents", arguments={}, chunk_ids=[], latency_ms=3.2,
           ok=True, result_chars=120)
    record(data_dir, client="cursor", tool="search_documents", arguments={"query": "rotate the **key**"},
           chunk_ids=[chunk.id], doc_ids=[chunk.doc_id], latency_ms=41.0, ok=True, result_chars=2100)
    record(data_dir, client="cursor", tool="zoom_out", arguments={"chunk_id": "nope"}, chunk_ids=[], latency_ms=1,
           ok=False, error="no chunk with id 'nope'")
    at = _playground()
    labels = [label for label in _labels(at) if " · " in label]
    assert len(labels) == 3
    assert "cursor · zoom\\_out" in labels[0] and labels[0].endswith("· failed")
    assert "cursor · search\\_documents “rotate the \\*\\*key\\*\\*” · 1 chunk(s) · 2.1 kB · 41 ms" in labels[1]
    assert "claude\\-desktop · list\\_documents" in labels[2]
    assert any('{"query": "rotate the **key**"}' in c.value for c in at.code)
    assert any("no chunk with id" in e.value for e in at.error)
    at.selectbox(key="mcp_client").select("claude-desktop").run()
    assert [label for label in _labels(at) if " · " in label] == labels[2:]
    at.selectbox(key="mcp_client").select("all clients").run()
    link = _follow(at, "1. guide\\.md › Keys")
    assert f"chunk={chunk.id}" in link.query_string and "strategy=structure" in link.query_string
    assert not at.exception
    assert at.radio(key="explorer_view").value == "Source"
    assert at.session_state["explorer_selected"] == chunk.id


def test_a_call_is_drawn_as_the_agents_step_with_its_title_facts_and_hits_table(indexed, data_dir):
    """Build 3's "the same step timeline": a real search call is drawn with the agent's step title (the granularity
    it ran with, though the client gave a query alone), the facts line and hits table of the agent's steps, and its
    chunks still open in the Chunk Explorer."""
    from rag_core.mcp_server.server import Backend

    result = Backend().call("search_documents", {"query": "rotate the API key"}, client="cursor")
    chunk_ids = [c["chunk_id"] for c in result.structured_content["chunks"]]
    at = _playground()
    assert any(m.value == "**Searched paragraphs for “rotate the API key”**" for m in at.markdown)
    assert any("route **hybrid**" in m.value and "relevance" in m.value and "threshold 0.70" in m.value
               and "granularity **paragraph**" in m.value for m in at.markdown)
    (table,) = [d.value for d in at.dataframe]
    assert list(table["source"]) == ["guide.md"] * len(chunk_ids) and "Wrenfall guide › Keys" in list(table["heading"])
    assert "relevance" in table.columns
    _follow(at, "guide\\.md › Keys")
    assert not at.exception and at.session_state["explorer_selected"] in chunk_ids


def test_handover_snippet_names_this_studio(indexed, data_dir):
    at = _playground()
    snippet = next(json.loads(c.value) for c in at.code if '"command"' in c.value)
    server = snippet["mcpServers"]["agentic-rag-studio"]
    assert server["args"] == ["-m", "rag_core", "serve-mcp"]
    assert server["env"]["RAG_DATA_DIR"] == str(data_dir.resolve())
    assert any("serve-mcp --http --port 8765" in c.value for c in at.code)
    assert any('"url": "http://127.0.0.1:8765/mcp"' in c.value for c in at.code)


def test_the_test_button_starts_the_server_and_its_call_shows_in_the_timeline(indexed):
    at = _playground()
    at.text_input(key="mcp_check_query").input("rotate the API key")
    at.button(key="mcp_test").click().run()
    assert not at.exception
    success = next(s.value for s in at.success if "The server answered" in s.value)
    lab = open_retriever(indexed, CONFIG.retrieval, get_settings()).retrieve("rotate the API key")
    assert "6 tools" in success and "search_documents" in success
    assert f"returned {len(lab.hits)} chunk(s), a context of {lab.context.tokens} tokens" in success
    assert [c["chunk_id"] for c in at.session_state["mcp_check"].chunks] == [h.chunk.id for h in lab.hits]
    at.run()
    shown = f"{md_escape(CHECK_CLIENT)} · search\\_documents"
    assert any(shown in label for label in _labels(at)), _labels(at)


def test_a_server_that_cannot_start_is_a_clear_error(indexed, monkeypatch):
    from rag_core.mcp_server import handover

    monkeypatch.setattr(handover, "serve_args", lambda *a, **k: ["-m", "rag_core", "serve-mcp", "--config", "nope"])
    at = _playground()
    at.button(key="mcp_test").click().run()
    assert not at.exception
    error = next(e.value for e in at.error if "Test failed" in e.value)
    assert "nope" in error and "Traceback" not in error


def test_handover_of_a_saved_configuration_names_it_and_says_when_its_index_is_missing(indexed, data_dir):
    """A tuned configuration saved by name is handed over as itself (``--config NAME`` in the snippet and the
    commands); with chunking of its own and no index yet the panel says so and builds it from the stored documents
    on request, leaving the active configuration as it is."""
    from rag_core.config import ChunkingConfig
    from rag_core.serving.configstore import ConfigStore

    tuned = CONFIG.model_copy(update={"name": "tuned 64", "chunking": ChunkingConfig(max_tokens=64, overlap=8)})
    ConfigStore.for_settings(get_settings()).save(tuned)
    at = _playground()
    at.selectbox(key="mcp_handover_config").select("tuned 64").run()
    assert not at.exception
    snippet = next(json.loads(c.value) for c in at.code if '"command"' in c.value)
    assert snippet["mcpServers"]["agentic-rag-studio"]["args"] == ["-m", "rag_core", "serve-mcp", "--config",
                                                                  "tuned 64"]
    assert any("serve-mcp --config 'tuned 64' --http" in c.value for c in at.code)
    assert any("not built yet" in w.value and "--config 'tuned 64'" in w.value for w in at.warning)
    at.button(key="mcp_build_index").click().run()  # builds it from the stored documents, the active one kept
    finish_jobs(at)
    assert not at.exception and not any("not built yet" in w.value for w in at.warning)
    from rag_core.mcp_server.server import Backend

    served = Backend(None, "tuned 64").call("search_documents", {"query": "rotate the API key"})
    assert not served.is_error and served.structured_content["chunks"]
    assert len(open_index(tuned, get_settings()).documents()) == 1
    assert at.session_state["active_config"].name == CONFIG.name  # the active configuration is left as it was


def test_a_client_configured_from_the_snippet_gets_the_retrieval_labs_chunks(indexed):
    """The issue's target, end to end: the Lab's settings changed in the Lab (saved as the active configuration),
    the Lab's own search; then an SDK stdio client started from exactly the panel's snippet (command, args, env)
    lists the tools and returns the same chunks, in the same order, for the same query."""
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from rag_core.mcp_server.server import mcp_tools

    query = "rotate the API key"
    at = studio_app(CONFIG)
    at.run()
    at.switch_page("views/retrieval_lab.py").run()
    next(s for s in at.selectbox if s.label == "Strategy").select("keyword").run()
    at.text_input(key="lab_query").input(query)
    next(b for b in at.button if b.label == "Search").click().run()
    assert not at.exception
    lab = at.session_state["lab_result"]
    assert lab.route == "keyword" and lab.hits
    at.switch_page(PLAYGROUND).run()
    entry = next(json.loads(c.value) for c in at.code if '"command"' in c.value)["mcpServers"]["agentic-rag-studio"]

    async def client():
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env=entry["env"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.list_tools(), await session.call_tool("search_documents", {"query": query})

    tools, result = anyio.run(client)
    assert [t.name for t in tools.tools] == [t.name for t in mcp_tools()]
    assert not result.is_error, result.content[0].text
    assert result.structured_content["route"] == "keyword"
    assert [c["chunk_id"] for c in result.structured_content["chunks"]] == [h.chunk.id for h in lab.hits]


def test_building_a_saved_configurations_index_estimated_long_waits_for_a_choice(indexed, data_dir):
    """Issue 35.8: 'Build its index' queued hours of work without a word; an estimate past two minutes on this
    machine is shown first with Build anyway / Don't build now, and nothing is queued before a click."""
    from rag_core.config import ChunkingConfig
    from rag_core.serving.configstore import ConfigStore
    from rag_core.serving.jobs import runner_for
    from rag_core.serving.throughput import record as record_throughput

    tuned = CONFIG.model_copy(update={"name": "tuned 64", "chunking": ChunkingConfig(max_tokens=64, overlap=8)})
    ConfigStore.for_settings(get_settings()).save(tuned)
    record_throughput(data_dir, indexed.embedder.id, 1_000_000, 1_000_000.0, 1_000)  # 1 byte a second here
    at = _playground()
    at.selectbox(key="mcp_handover_config").select("tuned 64").run()
    at.button(key="mcp_build_index").click().run()
    assert not at.exception
    [warning] = [w.value for w in at.warning if w.value.startswith("**Building the index of")]
    assert "'tuned 64' (1 document(s)) will take about" in warning and "on this machine" in warning
    assert runner_for(data_dir).jobs() == []
    at.button(key="mcp_long_build_cancel").click().run()
    assert runner_for(data_dir).jobs() == [] and not [w for w in at.warning if w.value.startswith("**Building")]
    at.button(key="mcp_build_index").click().run()
    at.button(key="mcp_long_build_confirm").click().run()
    assert not at.exception
    [job] = runner_for(data_dir).jobs()
    assert job.collection == tuned.collection_name()
    finish_jobs(at)
    assert not any("not built yet" in w.value for w in at.warning)
