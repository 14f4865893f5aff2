"""Agentic RAG Studio: the router. Shared page config and sidebar, then ``st.navigation`` runs the chosen page."""

import logging
import os

import streamlit as st

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # Chroma: never phone home
os.environ.setdefault("HF_HUB_OFFLINE", "1")
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

st.set_page_config(page_title="Agentic RAG Studio", page_icon="🧭", layout="wide")

from ui.jobs import sidebar_jobs  # noqa: E402
from ui.router import routing  # noqa: E402
from ui.state import PAGES, config_badge  # noqa: E402  (after set_page_config)

navigation = st.navigation(
    {
        "Studio": [
            st.Page(PAGES["home"], title="Home", icon="🏠", default=True),
            st.Page(PAGES["documents"], title="Documents", icon="📄"),
            st.Page(PAGES["explorer"], title="Chunk Explorer", icon="🧩"),
        ],
        "Retrieval": [
            st.Page(PAGES["lab"], title="Retrieval Lab", icon="🔬"),
            st.Page(PAGES["agent"], title="Agent Playground", icon="🤖"),
            st.Page(PAGES["evaluate"], title="Evaluate", icon="📊"),
        ],
    }
)
st.sidebar.markdown("### 🧭 Agentic RAG Studio")
badge = st.sidebar.container()
jobs_panel = st.sidebar.container()
try:
    with routing():  # a page that halts early still gets the sidebar below
        navigation.run()
finally:  # drawn after the page, so it shows the configuration the page just changed (also after ui.router.halt)
    config_badge(badge)
    sidebar_jobs(jobs_panel)
