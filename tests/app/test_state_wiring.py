"""The app opens indexes through ``rag_core.services`` like the CLI: every embedding setting reaches the index."""

from __future__ import annotations

import json

from rag_core.cli import main
from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from ui import state

GUIDE = b"# Guide\n\n## Keys\n\nTo rotate the API key, open Settings, choose Keys and press Rotate.\n"
CONFIG = RAGConfig(name="dim-128", embedding=EmbeddingConfig(embedder="hash", hash_dim=128))


def test_hash_dim_reaches_the_app_index_and_the_cli_searches_it(data_dir, capsys):
    index = state.index_for(CONFIG)
    assert index.embedder.dim == 128
    assert index.embedder.id == open_index(CONFIG).embedder.id
    index.ingest([load_bytes("guide.md", GUIDE)])

    assert main(["search", "rotate the API key", "--collection", CONFIG.collection_name(), "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["embedder"] == index.embedder.id
    assert "To rotate the API key" in found["hits"][0]["text"]

    assert main(["ask", "How do I rotate the API key?", "--collection", CONFIG.collection_name(), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["citations"]


def test_the_app_shares_one_embedder_per_embedding_configuration(data_dir):
    other_chunking = CONFIG.model_copy(update={"chunking": CONFIG.chunking.model_copy(update={"max_tokens": 256})})
    assert state.index_for(CONFIG).embedder is state.index_for(other_chunking).embedder
    wider = CONFIG.model_copy(update={"embedding": EmbeddingConfig(embedder="hash", hash_dim=256)})
    assert state.index_for(wider).embedder.dim == 256
