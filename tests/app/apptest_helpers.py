"""Helpers for page tests (imported by the test modules; not a test module itself)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from rag_core.config import RAGConfig


def page_app(page: str, config: RAGConfig, timeout: float = 120, **session) -> AppTest:
    """An AppTest of ``page`` whose active configuration is ``config``, with extra session state."""
    at = AppTest.from_file(page, default_timeout=timeout)
    at.session_state["active_config"] = config
    for key, value in session.items():
        at.session_state[key] = value
    return at
