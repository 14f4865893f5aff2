"""Before a long ingest is queued: its estimate on this machine and the user's choice, one panel for every page
that queues one (an upload, a re-index with new settings, a saved configuration's own index)."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from rag_core.serving.throughput import IngestEstimate, duration_text, ingest_estimate
from rag_core.types import Document
from ui import state
from ui.safe_text import md_escape
from ui.units import human_size


def long_estimate(index, docs: Sequence[Document]) -> IngestEstimate | None:
    """The estimate of indexing ``docs`` into ``index`` when it is long on this machine, else None."""
    with st.spinner("Estimating how long indexing takes on this machine…"):
        found = state.guarded(lambda: ingest_estimate(index, docs, state.settings().data_dir),
                              "Estimating the indexing time")
    return found if found is not None and found.long else None


def estimate_fields(found: IngestEstimate) -> dict:
    """What a pending choice keeps of an estimate in the session (plain values)."""
    return {"chunks": found.chunks, "seconds": found.seconds, "source": found.source}


def names_of(docs: Sequence[Document], shown: int = 5) -> str:
    """``a.md, b.md and 3 more``, escaped for Markdown."""
    names = ", ".join(md_escape(doc.name) for doc in docs[:shown])
    return names + (f" and {len(docs) - shown} more" if len(docs) > shown else "")


def choice(what: str, docs: Sequence[Document], pending_key: str, *, go: str, stop: str, key: str,
           either_way: str) -> str | None:
    """The warning of the choice kept at ``st.session_state[pending_key]`` (``estimate_fields`` and the caller's
    own) with its two buttons: ``"go"``, ``"stop"`` or None (no click yet); a click ends the choice (the key is
    removed). ``what`` starts the bold sentence (``Indexing a.md``), ``either_way`` says what holds whichever the
    choice."""
    pending = st.session_state[pending_key]
    took = duration_text(pending["seconds"])
    with st.container(border=True):
        st.warning(f"**{what} will take {took}** on this machine: ≈{pending['chunks']:,} chunks "
                   f"({human_size(sum(doc.size for doc in docs))}; speed {pending['source']}). Jobs queued after it "
                   f"(evaluations, other uploads, the guided demo) wait until it ends. {either_way}")
        go_col, stop_col, _ = st.columns([2, 2, 3])
        go_clicked = go_col.button(f"{go} ({took})", type="primary", key=f"{key}_confirm", width="stretch")
        stop_clicked = stop_col.button(stop, key=f"{key}_cancel", width="stretch")
    if go_clicked or stop_clicked:
        del st.session_state[pending_key]
    return "go" if go_clicked else "stop" if stop_clicked else None
