"""A Markdown file's leading YAML front matter (``---`` … ``---``): metadata of the document, never chunk text.

Left in the text, markdown-it reads the block as a rule and a setext heading (``title: …`` underlined by
``---``), so it became a chunk of its own and a quote's first line. The block is parsed with PyYAML's
``safe_load`` only (no tags, no objects); one that is not YAML stays text, with a warning when it looked meant as
front matter (its first line is a ``key:``).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from rag_core.errors import LoadError
from rag_core.loaders.formats import Converted

# The opening ``---`` on the first line, the closing ``---`` (or YAML's ``...``) on a line of its own.
_BLOCK = re.compile(r"\A---[ \t]*\n(?P<body>(?:.*\n)*?)(?:---|\.\.\.)[ \t]*(?:\n|\Z)")
_KEY_LINE = re.compile(r"\A[ \t]*[\w][\w .-]*:(?:[ \t]|$)")
MAX_FRONT_MATTER_CHARS = 64 * 1024  # a longer "block" is a document that opens with a rule, not metadata
MAX_KEYS = 100
MAX_VALUE_CHARS = 2_000
SCALARS = (str, int, float, bool)


@dataclass(slots=True)
class FrontMatter:
    """The text after the front matter, what it said (scalar values only) and any warning."""

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    warning: str | None = None


def _scalar(value: Any) -> Any:
    """A JSON-safe scalar for ``value`` (dates as ISO text, long text cut), or None for lists and mappings."""
    if isinstance(value, datetime.date):
        value = value.isoformat()
    if isinstance(value, str):
        return value[:MAX_VALUE_CHARS]
    if isinstance(value, SCALARS):
        return value
    return None


def split_front_matter(name: str, text: str) -> FrontMatter:
    """``text`` without its leading YAML front matter, and that front matter's scalar values.

    A block that is not a YAML mapping (a document opening with a rule and a heading) is left in the text.
    """
    match = _BLOCK.match(text)
    if match is None:
        return FrontMatter(text)
    body = match.group("body")
    looks_meant = bool(_KEY_LINE.match(next((line for line in body.splitlines() if line.strip()), "")))
    if len(body) > MAX_FRONT_MATTER_CHARS:
        warning = (f"{name}: the YAML front matter is over {MAX_FRONT_MATTER_CHARS // 1024} KiB; it was kept as "
                   "text") if looks_meant else None
        return FrontMatter(text, warning=warning)
    try:
        data = yaml.safe_load(body) if body.strip() else {}
    except (yaml.YAMLError, RecursionError, ValueError) as e:
        if not looks_meant:
            return FrontMatter(text)
        problem = str(getattr(e, "problem", "") or type(e).__name__)
        return FrontMatter(text, warning=f"{name}: the YAML front matter could not be read ({problem}); it was "
                                         "kept as text")
    if not isinstance(data, dict):
        return FrontMatter(text)
    metadata: dict[str, Any] = {}
    for key, value in list(data.items())[:MAX_KEYS]:
        scalar = _scalar(value)
        if scalar is not None:
            metadata[str(key)[:200]] = scalar
    return FrontMatter(text[match.end():].lstrip("\n"), metadata)


def front_matter_chars(doc: Any) -> int:
    """How many leading characters of ``doc.text`` are its YAML front matter (0 when none, or a stored document
    from before the front matter stayed in the text)."""
    value = (getattr(doc, "metadata", None) or {}).get("front_matter_chars", 0)
    return value if isinstance(value, int) and 0 <= value <= len(doc.text) else 0


def without_front_matter(doc: Any) -> str:
    """``doc.text`` with its front matter blanked (newlines kept, other characters spaces): what the chunker and
    the linter parse, so every offset still indexes ``doc.text``, the file as uploaded."""
    skip = front_matter_chars(doc)
    if not skip:
        return doc.text
    return re.sub(r"[^\n]", " ", doc.text[:skip]) + doc.text[skip:]


def convert_markdown(name: str, text: str) -> Converted:
    """Markdown whose YAML front matter becomes metadata (its scalar values, ``title`` included).

    The text keeps the front matter, so chunk offsets index the file as uploaded; ``front_matter_chars`` says how
    much of it the chunker skips (``without_front_matter``).
    """
    front = split_front_matter(name, text)
    metadata: dict = {}
    if len(front.text) < len(text):  # a block was taken, even one with only lists or mappings in it
        metadata["front_matter_chars"] = len(text) - len(front.text)
    if front.metadata:
        metadata["front_matter"] = front.metadata
        title = front.metadata.get("title")
        if isinstance(title, str | int | float) and not isinstance(title, bool) and str(title).strip():
            metadata["title"] = str(title).strip()
    if not front.text.strip() and len(front.text) < len(text):
        raise LoadError(f"{name}: holds only YAML front matter, no text to index.")
    return Converted(text, metadata, [front.warning] if front.warning else [])
