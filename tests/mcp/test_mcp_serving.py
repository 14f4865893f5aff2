"""The MCP server serving the active configuration (no ``--collection``), driven by the SDK's stdio client: a
query alone returns what the Retrieval Lab shows (same chunks, same Layer-4 context) through the wiring module."""

from __future__ import annotations

import os
import sys

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from rag_core.config import EmbeddingConfig, RAGConfig, RetrievalConfig, Settings
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index, open_retriever, open_serving_index
from rag_core.serving.activestate import activate, active_config

GUIDE = ("# Keys\n\nTo rotate the API key, open Settings and press Rotate. The old key stops working at once.\n\n"
         "## Scopes\n\nA key has read, write or admin scope; admin keys can rotate other keys.\n\n# Billing\n\n"
         "Business extra runs cost 3 USD per 100,000. Invoices are sent on the first day of the month.\n\n"
         "## Refunds\n\nA refund of an extra run takes five working days.\n")
FAQ = ("# FAQ\n\n## Why was my key rotated?\n\nAn admin may rotate a key after a leak report.\n\n"
       "## Where are invoices?\n\nInvoices are under Billing, one per month.\n")


def serving_world(data_dir, retrieval: RetrievalConfig | None = None) -> Settings:
    """Two documents indexed with the hash embedder, serving the active configuration."""
    settings = Settings(data_dir=data_dir)
    config = RAGConfig(embedding=EmbeddingConfig(embedder="hash"), retrieval=retrieval or RetrievalConfig())
    store = DocumentStore(data_dir)
    docs = [store.add(load_bytes(name, text.encode()))[0] for name, text in (("guide.md", GUIDE), ("faq.md", FAQ))]
    open_index(config, settings).ingest(docs)
    activate(settings, config)
    return settings


def server_params(*extra: str, name: str = "test-agent") -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "rag_core", "serve-mcp", *extra],
                                 env=dict(os.environ))


async def call_all(calls: list[tuple[str, dict]], *extra: str):
    async with stdio_client(server_params(*extra)) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(name, args) for name, args in calls]


def lab_search(settings: Settings, query: str):
    """What the Retrieval Lab runs for ``query``: the serving index, the active retrieval settings (ui/state.py)."""
    index = open_serving_index(settings)
    return open_retriever(index, active_config(settings).retrieval, settings).retrieve(query)


@pytest.mark.parametrize("retrieval", [RetrievalConfig(), RetrievalConfig(granularity="section", initial_k=2,
                                                                          strategy="keyword")],
                         ids=["default", "sections-keyword"])
def test_a_query_alone_returns_the_retrieval_labs_chunks_and_context(data_dir, retrieval):
    settings = serving_world(data_dir, retrieval)
    queries = ["rotate the API key", "how long does a refund take"]
    results = anyio.run(call_all, [("search_documents", {"query": q}) for q in queries])
    for query, result in zip(queries, results, strict=True):
        lab = lab_search(settings, query)
        assert not result.is_error, result.content[0].text
        served = result.structured_content
        assert [c["chunk_id"] for c in served["chunks"]] == [h.chunk.id for h in lab.hits] != []
        assert served["route"] == lab.route and (retrieval.strategy == "auto" or lab.route == retrieval.strategy)
        assert served["context"]["included"] == [row["chunk_id"] for row in lab.context.included]
        assert served["context"]["tokens"] == lab.context.tokens and served["context"]["budget"] == 4000
        text = result.content[0].text
        assert lab.context.text in text  # the Layer-4 context itself: document boundaries and sources
        assert "--- Document 1 ---" in text and "[Source: " in text
        assert text.index("<untrusted_document") < text.index("--- Document 1 ---") < text.index(
            "</untrusted_document>")
        assert f"Document 1 = {lab.context.included[0]['chunk_id']}" in text


def test_explicit_arguments_still_override_the_configuration(data_dir):
    serving_world(data_dir)
    (result,) = anyio.run(call_all, [("search_documents", {"query": "rotate the API key", "max_results": 1,
                                                           "granularity": "section"})])
    chunks = result.structured_content["chunks"]
    assert len(chunks) == 1 and chunks[0]["granularity"] == "section"
    assert result.structured_content["context"]["budget"] == 4000


def test_search_schema_has_no_agent_defaults():
    from rag_core.mcp_server.server import mcp_tools

    search = next(t for t in mcp_tools() if t.name == "search_documents")
    assert all("default" not in p for p in search.input_schema["properties"].values())
    assert "served configuration" in search.description
    zoom = next(t for t in mcp_tools() if t.name == "zoom_in")
    assert zoom.input_schema["required"] == ["section_id"]


TOPICS = ("retry", "cache", "quota", "token")


def _topic_doc(topic: str):
    body = "\n\n".join(f"## {topic.title()} part {i}\n\nThe {topic} rule {i} says what the {topic} limit does when "
                       f"it is reached, in some detail, with a second sentence about {topic} tuning." for i in range(8))
    return load_bytes(f"{topic}.md", f"# {topic.title()}\n\n{body}\n".encode())


def test_the_server_answers_from_the_serving_index_while_a_reindex_runs_then_follows_it(data_dir, one_by_one):
    from rag_core.config import ChunkingConfig
    from rag_core.serving.activestate import pointer
    from rag_core.serving.jobs import JobRunner
    from rag_core.serving.reindex import start_reindex

    go, first_done = one_by_one
    settings = Settings(data_dir=data_dir)
    old = RAGConfig(embedding=EmbeddingConfig(embedder="hash"))
    new = old.model_copy(update={"chunking": ChunkingConfig(max_tokens=64, overlap=8)})
    store = DocumentStore(data_dir)
    docs = [store.add(_topic_doc(topic))[0] for topic in TOPICS]
    open_index(old, settings).ingest(docs)
    activate(settings, old)
    runner = JobRunner(data_dir)

    async def found(session) -> set[str]:
        names = set()
        for topic in TOPICS:
            result = await session.call_tool("search_documents", {"query": f"{topic} rule limit", "max_results": 3})
            assert not result.is_error, result.content[0].text
            names |= {c["doc_id"] for c in result.structured_content["chunks"]}
        return names

    async def body():
        async with stdio_client(server_params()) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            before = await found(session)
            job = start_reindex(settings, new, open_index(new, settings), docs, runner=runner)
            assert await anyio.to_thread.run_sync(first_done.wait, 60)
            assert pointer(settings).reindex is not None and len(open_index(new, settings).documents()) == 1
            during = await found(session)  # the half-built index holds one document; the server still has four
            go.set()
            final = await anyio.to_thread.run_sync(runner.wait, job.id)
            assert final.state == "done", final.message
            assert pointer(settings).serving.collection == new.collection_name()
            after = await found(session)  # the old index is removed: the server follows the swap, no restart
            probe = await session.call_tool("search_documents", {"query": "quota rule limit", "max_results": 1})
            return before, during, after, probe

    before, during, after, probe = anyio.run(body)
    all_docs = {d.id for d in docs}
    assert before == during == after == all_docs
    assert probe.structured_content["chunks"][0]["tokens"] <= 64  # served from the new, finer index


def test_a_saved_configuration_is_served_over_its_own_index(data_dir):
    """``serve-mcp --config NAME`` of a configuration with other chunking (a tuning study's winner) serves that
    configuration's own index, not its retrieval settings over the active one's chunks; until its index is built
    a call says how to build it (it served the active index before)."""
    from rag_core.config import ChunkingConfig
    from rag_core.errors import IndexError_
    from rag_core.mcp_server.server import Backend
    from rag_core.serving.configstore import ConfigStore

    settings = serving_world(data_dir)
    store = DocumentStore(data_dir)
    tuned = RAGConfig(name="tuned", embedding=EmbeddingConfig(embedder="hash"),
                      chunking=ChunkingConfig(max_tokens=64, overlap=8))
    ConfigStore.for_settings(settings).save(tuned)
    backend = Backend(None, "tuned")
    with pytest.raises(IndexError_, match="not built yet: build it with python -m rag_core ingest PATH --config tuned"):
        backend.call("search_documents", {"query": "rotate the API key"})  # the server makes it a tool error
    open_index(tuned, settings).ingest([d for d in store.list()])
    served = backend.call("search_documents", {"query": "rotate the API key"})
    assert not served.is_error
    tuned_index = open_index(tuned, settings)
    assert {c["chunk_id"] for c in served.structured_content["chunks"]} <= {c.id for c in tuned_index.chunks()}
    same = RAGConfig(name="same-chunks", embedding=EmbeddingConfig(embedder="hash"),
                     retrieval=RetrievalConfig(initial_k=2, max_k=2))
    ConfigStore.for_settings(settings).save(same)  # the active chunking: the serving index, followed
    result = Backend(None, "same-chunks").call("search_documents", {"query": "rotate the API key"})
    active = open_serving_index(settings)
    assert not result.is_error and {c["chunk_id"] for c in result.structured_content["chunks"]} <= \
        {c.id for c in active.chunks()}


def test_every_tool_answers_a_real_client_and_a_change_of_the_active_configuration_is_followed(data_dir):
    """One stdio session: search, then each navigation tool on the ids it returned (document text wrapped as
    untrusted); then the studio activates other retrieval settings and the same session searches with them, no
    restart."""
    settings = serving_world(data_dir)
    keyword_sections = RAGConfig(embedding=EmbeddingConfig(embedder="hash"),
                                 retrieval=RetrievalConfig(strategy="keyword", granularity="section", initial_k=2))

    async def body():
        async with stdio_client(server_params()) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            search = await session.call_tool("search_documents", {"query": "rotate the API key",
                                                                   "granularity": "paragraph"})
            hit = search.structured_content["chunks"][0]
            up = await session.call_tool("zoom_out", {"chunk_id": hit["chunk_id"]})
            section = up.structured_content["chunks"][0]
            steps = {"search_documents": search, "zoom_out": up,
                     "zoom_in": await session.call_tool("zoom_in", {"section_id": section["chunk_id"]}),
                     "list_documents": await session.call_tool("list_documents", {}),
                     "list_sections": await session.call_tool("list_sections", {"doc_id": hit["doc_id"]}),
                     "read_section": await session.call_tool("read_section", {"doc_id": hit["doc_id"],
                                                                              "section_id": section["chunk_id"]})}
            activate(settings, keyword_sections)  # what the studio does when a configuration is made active
            changed = await session.call_tool("search_documents", {"query": "rotate the API key"})
            return hit, section, steps, changed

    hit, section, steps, changed = anyio.run(body)
    for name, result in steps.items():
        assert not result.is_error, f"{name}: {result.content[0].text}"
    assert section["granularity"] == "section" and section["doc_id"] == hit["doc_id"]
    assert hit["chunk_id"] in [c["chunk_id"] for c in steps["zoom_in"].structured_content["chunks"]]
    assert "guide.md" in steps["list_documents"].content[0].text and "faq.md" in steps["list_documents"].content[0].text
    assert "Rotate" in steps["read_section"].content[0].text
    for name in ("zoom_out", "zoom_in", "read_section"):
        assert "<untrusted_document" in steps[name].content[0].text, name
    lab = lab_search(settings, "rotate the API key")
    assert changed.structured_content["route"] == "keyword" == lab.route
    assert [c["chunk_id"] for c in changed.structured_content["chunks"]] == [h.chunk.id for h in lab.hits]
    assert {c["granularity"] for c in changed.structured_content["chunks"]} == {"section"}
