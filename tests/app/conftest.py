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
