"""Showing user and document text literally inside Streamlit Markdown."""

from __future__ import annotations

import re


def md_escape(text: str) -> str:
    """Escape Markdown (and Streamlit's ``$`` maths) so text is shown as typed; Streamlit never renders raw HTML
    in Markdown, so ``<``/``&`` need no HTML escaping (which would show as ``&amp;``)."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$])", r"\\\1", text)
