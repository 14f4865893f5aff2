"""Shared set-up for the page tests: fresh Streamlit caches per test, and an AppTest on a page with a config."""

from __future__ import annotations

import pytest
import streamlit as st


@pytest.fixture(autouse=True)
def _fresh_streamlit_caches():
    # Cached resources (settings, stores, indexes) would otherwise keep the first test's data directory.
    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()
    st.cache_data.clear()


@pytest.fixture
def spinners(monkeypatch) -> list[str]:
    """The texts of the ``st.spinner`` blocks open right now (a page's slow call can check it is inside one)."""
    import contextlib

    active: list[str] = []
    original = st.spinner

    @contextlib.contextmanager
    def recording_spinner(text: str = "In progress...", *args, **kwargs):
        active.append(text)
        try:
            with original(text, *args, **kwargs):
                yield
        finally:
            active.pop()

    monkeypatch.setattr(st, "spinner", recording_spinner)
    return active
