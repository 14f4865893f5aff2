"""The Retriever and the ``search`` command on a real Index (hashing embedder, embedded Chroma)."""

import json

from rag_core.cli import main
from rag_core.config import RetrievalConfig
from rag_core.retrieval.retriever import Retriever


def test_retriever_on_the_real_index(real_index):
    result = Retriever(real_index, RetrievalConfig(strategy="hybrid")).retrieve(
        "how long before a request is cancelled")
    top = result.hits[0]
    assert top.chunk.text.startswith("## Configuration\n\nThe request timeout setting")
    assert top.source_name == "guide.md"
    assert set(top.ranks) >= {"vector", "keyword", "fused"}  # and "section" when its section ranked
    assert result.context.text.startswith("--- Document 1 ---\n[Source: guide.md › Wrenfall guide › Configuration]")


def test_data_intent_filters_tables_first(real_index):
    result = Retriever(real_index, RetrievalConfig(strategy="keyword", min_confidence=0.0, use_intent_filter=True)
                       ).retrieve("how many jobs on the pro plan")
    assert result.intent == "data"
    assert result.iterations[0].filters["chunk_types"] == ["table"]
    assert {h.chunk.chunk_type for h in result.hits} == {"table"}
    assert "| pro | 500 |" in result.hits[0].chunk.text


def test_excluded_chunk_is_not_returned_again(real_index):
    retriever = Retriever(real_index, RetrievalConfig(strategy="keyword", min_confidence=0.0))
    first = retriever.retrieve("request timeout cancelled")
    top_id = first.hits[0].chunk.id
    again = retriever.retrieve("request timeout cancelled", exclude_ids=[top_id])
    assert top_id not in [h.chunk.id for h in again.hits]
    assert all(top_id not in [h.chunk.id for h in it.hits] for it in again.iterations)


def test_search_command_json(real_index, capsys):
    code = main(["search", "Client(timeout=30)", "--collection", "retrieval-test", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["embedder"] == "hash-384"
    assert out["route"] == "keyword" and "code symbol" in out["route_reason"]
    hit = out["hits"][0]
    assert "client = Client(timeout=30)" in hit["text"]
    assert {"chunk_id", "score", "confidence", "ranks", "scores", "heading_path", "doc_name"} <= set(hit)
    assert hit["doc_name"] == "guide.md"
    assert out["context"]["text"].startswith("--- Document 1 ---")
    assert out["iterations"][0]["k"] == 3


def test_search_command_options_and_errors(real_index, capsys):
    assert main(["search", "bananas", "--collection", "retrieval-test", "--strategy", "vector", "--k", "1",
                 "--granularity", "any", "--min-confidence", "0", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["route"] == "vector" and len(out["hits"]) == 1 and out["iterations"][0]["k"] == 1
    assert main(["search", "x", "--collection", "no-such-collection"]) == 2
    assert "no collection 'no-such-collection'" in capsys.readouterr().err
    assert main(["search", "x", "--collection", "retrieval-test", "--embedder", "minilm"]) == 2
    assert "built with the hash embedder" in capsys.readouterr().err
    assert main(["search", "  ", "--collection", "retrieval-test"]) == 2
    assert "query is empty" in capsys.readouterr().err
