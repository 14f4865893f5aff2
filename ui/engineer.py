"""The one "Engineer details" switch: raw scores and ranks, chunk ids, iterations and token accounting are shown
only when it is on. One session key, so a page that draws it shares the choice with every other page."""

from __future__ import annotations

import streamlit as st

from ui.state import KEEP

KEY = "engineer_details"
HELP = ("Raw per-retriever scores and ranks (cosine, BM25, RRF), chunk ids, granularities, every iteration of "
        "dynamic retrieval and the context's token accounting.")


def toggle(where=st) -> bool:
    """Draw the switch (``where``: a container, e.g. ``st.sidebar``) and return its value."""
    return where.toggle("Engineer details", key=KEY, persist_state=KEEP, help=HELP)


def shown() -> bool:
    """The switch's value without drawing it (for renderers below a page that drew it)."""
    return bool(st.session_state.get(KEY, False))
