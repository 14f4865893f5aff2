"""Opening the Chunk Explorer on one chunk, from a citation or from a link.

A citation names a chunk of the index the answer was built from, and chunk ids depend on the chunking settings:
the Explorer must chunk with that index's settings (not the session's sliders), on its Source view, with the
chunk's granularity, selected and scrolled to. The target travels in the page URL
(``/chunk_explorer?doc=…&chunk=…&strategy=structure&max_tokens=512&overlap=64``), so the link can be reloaded or
shared, and is applied once per link: moving a slider afterwards is not undone on the next rerun.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

import streamlit as st
from streamlit.errors import StreamlitAPIException

from rag_core.chunking.strategies import STRATEGY_NAMES
from rag_core.config import ChunkingConfig
from ui import state
from ui.safe_text import md_escape

log = logging.getLogger(__name__)
APPLIED_KEY = "explorer_link_applied"  # the link last applied in this session (applied once)
NOTE_KEY = "explorer_link_note"  # what the Explorer was opened on, shown above the source
_ID = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, slots=True)
class ChunkLink:
    """A chunk of a stored document and the chunking settings its id belongs to."""

    doc_id: str
    chunk_id: str | None
    chunking: ChunkingConfig | None

    def params(self) -> dict[str, str]:
        params = {"doc": self.doc_id}
        if self.chunk_id:
            params["chunk"] = self.chunk_id
        if self.chunking is not None:
            params.update(strategy=self.chunking.strategy, max_tokens=str(self.chunking.max_tokens),
                          overlap=str(self.chunking.overlap))
        return params


def from_params(params) -> ChunkLink | None:
    """The link in a page's query parameters (None when it has none or they are malformed)."""
    doc_id, chunk_id = params.get("doc"), params.get("chunk")
    if not doc_id or not _ID.fullmatch(doc_id) or (chunk_id and not _ID.fullmatch(chunk_id)):
        return None
    chunking = None
    if params.get("strategy") in STRATEGY_NAMES:
        try:
            chunking = ChunkingConfig(strategy=params["strategy"], max_tokens=int(params.get("max_tokens", "")),
                                      overlap=int(params.get("overlap", "0")))
        except ValueError:  # a hand-edited link: the chunk is still opened, with the active settings
            chunking = None
    return ChunkLink(doc_id, chunk_id or None, chunking)


LINK_PARAMS = ("doc", "chunk", "strategy", "max_tokens", "overlap")


def drop_params() -> None:
    """Take the Chunk Explorer's link out of the URL of any other page (Back to the Playground left
    ``?doc=…&chunk=…`` on its URL)."""
    for name in LINK_PARAMS:
        if name in st.query_params:
            del st.query_params[name]


def index_chunking(chunk_id: str) -> ChunkingConfig | None:
    """The chunking of the index that holds ``chunk_id`` (the one answers and searches read), or None."""
    try:
        index = state.active_index()
        return index.chunking if index.get(chunk_id) is not None else None
    except Exception:  # the index is unavailable: the Explorer opens with the active settings and says so
        log.warning("the index holding chunk %s could not be read", chunk_id, exc_info=True)
        return None


def open_chunk(doc_id: str, chunk_id: str, chunking: ChunkingConfig | None = None) -> None:
    """Switch to the Chunk Explorer on ``chunk_id`` chunked with ``chunking`` (default: the settings of the index
    holding the chunk, which the answer or search was built from)."""
    link = ChunkLink(doc_id, chunk_id, chunking or index_chunking(chunk_id))
    try:
        st.switch_page(state.PAGES["explorer"], query_params=link.params())
    except StreamlitAPIException:  # page not registered (e.g. a page run on its own)
        st.info(f"Open the Chunk Explorer: chunk `{chunk_id}` is pre-selected there.")
        st.session_state[state.PREFILL_KEY] = {"page": "explorer", "doc_id": doc_id, "chunk_id": chunk_id,
                                               "chunking": link.chunking}


def chunk_page_link(doc_id: str, chunk_id: str, label: str, help: str, chunking: ChunkingConfig | None = None,
                    disabled: bool = False) -> None:
    """A link (not a button) to the Chunk Explorer on ``chunk_id`` chunked with ``chunking`` (None: the active
    settings), for anything drawn inside an ``st.fragment(run_every=…)``.

    Why not ``open_chunk``: ``st.switch_page`` from a fragment that refreshes on a timer races the browser's timer.
    A refresh the browser sends before it learns of the switch still names the old page; it runs after the
    Explorer and the browser clears the page for it, leaving the Explorer blank until the next click (seen in a
    real browser on a loaded 2-core machine). A link is followed by the browser itself, which moves its timers to
    the new page first."""
    link = ChunkLink(doc_id, chunk_id, chunking)
    st.page_link(state.PAGES["explorer"], label=label, icon=":material/view_agenda:", help=help, disabled=disabled,
                 query_params=link.params())


def open_hit(hit) -> None:
    """The Chunk Explorer on a hit's chunk; a web result is no stored document: its address is shown (as text)
    instead of opening an unrelated document."""
    if hit.chunk.doc_id.startswith("web:") or not _ID.fullmatch(hit.chunk.doc_id):
        url = str((hit.chunk.metadata or {}).get("url", ""))
        st.info(f"A web result, not a stored document: {md_escape(url or hit.chunk.doc_id)}. The Chunk Explorer "
                "shows the stored documents only; copy the address into your browser to read the page.")
        return
    open_chunk(hit.chunk.doc_id, hit.chunk.id)


def take(prefill: dict) -> ChunkLink | None:
    """The link to open on this run: a pre-fill naming a chunk, else the page URL's, each applied only once."""
    if prefill.get("chunk_id") or prefill.get("chunking"):
        chunking = prefill.get("chunking")
        return ChunkLink(prefill.get("doc_id", ""), prefill.get("chunk_id"),
                         chunking if isinstance(chunking, ChunkingConfig) else None)
    link = from_params(st.query_params)
    if link is None or st.session_state.get(APPLIED_KEY) == link:
        return None
    return link


def apply(link: ChunkLink, doc_ids, defaults: ChunkingConfig, limits) -> None:
    """Point the Explorer's widgets at ``link`` (before they are drawn): its document, the settings the chunk id
    belongs to, the Source view, the chunk's granularity, the chunk selected. ``limits(max_tokens)`` is the
    overlap slider's upper bound."""
    from ui.explorer.explorer_view import GRANULARITY_OPTIONS, chunked

    st.session_state[APPLIED_KEY] = link
    if link.doc_id not in doc_ids:
        st.session_state[NOTE_KEY] = ("warning", "The linked document is no longer stored; pick another one.")
        return
    st.session_state["explorer_doc"] = link.doc_id
    chunking = link.chunking or defaults
    overlap = min(chunking.overlap, limits(chunking.max_tokens))
    st.session_state.update({"a_strategy": chunking.strategy, "a_max_tokens": min(max(chunking.max_tokens, 32), 2048),
                             "a_overlap": overlap, "explorer_view": "Source"})
    st.session_state.pop("explorer_selected", None)
    st.session_state.pop(NOTE_KEY, None)
    if not link.chunk_id:
        return
    result = state.guarded(lambda: chunked(link.doc_id, chunking.strategy, chunking.max_tokens, chunking.overlap),
                           "Chunking")
    target = next((c for c in (result or ([], {}))[0] if c.id == link.chunk_id), None)
    settings = f"{chunking.strategy} {chunking.max_tokens} tok, overlap {chunking.overlap}"
    if target is None:
        st.session_state[NOTE_KEY] = (
            "warning", f"The linked chunk (a citation or evidence) is not among this document's chunks with {settings} "
                       "(the document or the index changed since); the document is shown with those settings.")
        return
    st.session_state["explorer_selected"] = target.id
    if target.granularity in GRANULARITY_OPTIONS:
        st.session_state["explorer_granularity"] = target.granularity
    where = "the settings the cited index was built with" if link.chunking else "the active settings"
    st.session_state[NOTE_KEY] = ("caption", f"Opened on the linked chunk (a citation or evidence), chunked with "
                                             f"{where} ({settings}).")


def show_note() -> None:
    """What the Explorer was opened on (once, right after a link was applied)."""
    note = st.session_state.pop(NOTE_KEY, None)
    if note:
        kind, text = note
        getattr(st, kind)(text)
