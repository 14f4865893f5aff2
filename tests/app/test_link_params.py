"""The Chunk Explorer's ``?doc=&chunk=`` stays on its own URL: another page (Back to the Playground) drops it."""

from __future__ import annotations

from rag_core.config import EmbeddingConfig, RAGConfig
from tests.app.apptest_helpers import studio_app

LINK = {"doc": "0123456789abcdef", "chunk": "fedcba9876543210", "strategy": "structure", "max_tokens": "512",
        "overlap": "64"}


def test_another_page_drops_the_explorer_link_from_its_url():
    at = studio_app(RAGConfig(name="t", embedding=EmbeddingConfig(embedder="hash")))
    for name, value in LINK.items():
        at.query_params[name] = value
    at.switch_page("views/agent_playground.py").run()
    assert not at.exception
    assert not set(LINK) & set(at.query_params)
