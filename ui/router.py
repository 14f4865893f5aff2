"""Pages run inside ``app.py``'s navigation: ``halt`` ends a page early without stopping the run.

The pages live in ``views/``, not ``pages/``: Streamlit treats a ``pages/`` folder beside the main script as its
older multipage mode until a session has called ``st.navigation``, so a fresh server's first load listed the
folder's file names (``app``, ``agent_playground``, …) as navigation, and a page URL as the first request ran
that page without ``app.py``. With no such folder, every request runs ``app.py`` and its ``st.navigation``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import NoReturn

import streamlit as st


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
