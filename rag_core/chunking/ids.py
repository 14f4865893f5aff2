"""Stable chunk ids and page provenance shared by every chunking strategy."""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from typing import Any


def chunk_id(doc_id: str, granularity: str, start: int, end: int, position: int, params: str, scope: str = "") -> str:
    """sha256 of (doc id, granularity, span, position in parent, strategy parameters), 16 hex digits.

    ``scope`` tells apart chunks that share all of these, such as the last part of a section and the
    subsection it consists of (the heading path differs).
    """
    key = f"{doc_id}\0{granularity}\0{start}\0{end}\0{position}\0{params}\0{scope}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def pages_for_span(metadata: dict[str, Any], start: int, end: int) -> list[int] | None:
    """Page numbers a ``[start, end)`` span covers, from a PDF document's ``metadata["pages"]``.

    ``metadata["pages"]`` is a list of ``[start_offset, page_number]`` sorted by offset.
    """
    pages = metadata.get("pages") if metadata else None
    if not pages:
        return None
    offsets = [int(p[0]) for p in pages]
    first = max(bisect_right(offsets, start) - 1, 0)
    last = max(bisect_right(offsets, max(start, end - 1)) - 1, 0)
    return sorted({int(pages[i][1]) for i in range(first, last + 1)})
