"""Agentic RAG Studio: the router. Shared page config and sidebar, then ``st.navigation`` runs the chosen page."""

import logging
import os
from pathlib import Path

import streamlit as st

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")  # Chroma: never phone home
os.environ.setdefault("HF_HUB_OFFLINE", "1")
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

# A local favicon, set before the navigation: a Material icon as favicon (the pages' icons otherwise) is fetched
# from Google's servers.
FAVICON = Path(__file__).parent / "ui" / "assets" / "favicon.svg"
st.set_page_config(page_title="Agentic RAG Studio", page_icon=str(FAVICON), layout="wide")

from ui.explorer_link import drop_params  # noqa: E402
from ui.jobs import sidebar_jobs  # noqa: E402
from ui.router import routing  # noqa: E402
from ui.state import PAGES, config_badge  # noqa: E402  (after set_page_config)

navigation = st.navigation(
    {
        "Studio": [
            st.Page(PAGES["home"], title="Home", icon=":material/home:", default=True),
            st.Page(PAGES["documents"], title="Documents", icon=":material/description:"),
            st.Page(PAGES["explorer"], title="Chunk Explorer", icon=":material/view_agenda:"),
        ],
        "Retrieval": [
            st.Page(PAGES["lab"], title="Retrieval Lab", icon=":material/science:"),
            st.Page(PAGES["agent"], title="Agent Playground", icon=":material/smart_toy:"),
            st.Page(PAGES["evaluate"], title="Evaluate", icon=":material/leaderboard:"),
        ],
    }
)
if navigation.url_path != "chunk_explorer":  # the explorer link's parameters belong to its URL only
    drop_params()
st.sidebar.markdown("### :material/explore: Agentic RAG Studio")
badge = st.sidebar.container()
try:
    with routing():  # a page that halts early still gets the sidebar below
        navigation.run()
finally:  # drawn after the page, so it shows the configuration the page just changed (also after ui.router.halt)
    config_badge(badge)
    sidebar_jobs(st.sidebar.container())  # below the page's own sidebar controls: job cards never push them down
