"""Pages run inside ``app.py``'s navigation, also when the first request of a fresh server is a page's URL."""

from __future__ import annotations

import types
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import NoReturn

import streamlit as st

APP = Path(__file__).resolve().parent.parent / "app.py"


def through_app() -> None:
    """Run the current page inside ``app.py`` when Streamlit started the page on its own.

    A server whose first request is a page URL (``/retrieval_lab``, a bookmark or a shared link) runs that page
    in Streamlit's older ``pages/``-folder mode: the page's script alone, without ``app.py`` (no sidebar title,
    configuration badge or jobs panel; a raw list of file names as navigation). Streamlit leaves that mode only
    when ``st.navigation`` is called, which happens in ``app.py``, which that mode never runs. So the page turns
    the mode off (the class flag ``PagesManager.uses_pages_directory``: no public API sets it), runs ``app.py`` in
    this same run (its navigation then runs this page, the same URL, with the widget events of this run), and
    stops. A no-op on every other run.
    """
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None or not PagesManager.uses_pages_directory:
        return
    PagesManager.uses_pages_directory = False
    module = types.ModuleType("__main__")
    module.__dict__["__file__"] = str(APP)
    # Streamlit runs a page the same way (streamlit.navigation.page.StreamlitPage.run).
    exec(ctx.pages_manager.get_page_script_byte_code(str(APP)), module.__dict__)  # noqa: S102
    st.stop()


class PageEnd(Exception):
    """Raised by ``halt`` to end a page early under ``app.py`` (which catches it)."""


_ROUTED: ContextVar[bool] = ContextVar("routed", default=False)


@contextmanager
def routing() -> Iterator[None]:
    """Around ``app.py``'s ``navigation.run()``: pages that ``halt`` inside it end without stopping the run."""
    token = _ROUTED.set(True)
    try:
        yield
    except PageEnd:
        pass
    finally:
        _ROUTED.reset(token)


def halt() -> NoReturn:
    """End the page here (an empty state, an error already shown).

    ``st.stop()`` would end the whole run, so ``app.py`` could not draw what comes after the page (the sidebar's
    configuration badge and jobs panel): a new user's first view of Documents or the Chunk Explorer had neither.
    Under ``app.py`` the page ends with ``PageEnd`` instead; a page run on its own (a page test) still stops.
    """
    if _ROUTED.get():
        raise PageEnd
    st.stop()
    raise PageEnd  # not reached: st.stop() raises
