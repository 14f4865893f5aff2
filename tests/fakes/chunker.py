"""A tiny Markdown chunker (sections at '#' lines, paragraphs at blank lines) and two documents shaped for it."""

from __future__ import annotations

import hashlib
import re

from rag_core.config import ChunkingConfig
from rag_core.types import Chunk, Document


def _chunk_id(*parts) -> str:
    return hashlib.sha256("\0".join(map(str, parts)).encode()).hexdigest()[:16]


def _block_type(block: str) -> str:
    if block.startswith("```"):
        return "code"
    if block.startswith("|"):
        return "table"
    if block.startswith("- "):
        return "list"
    return "prose"


def fake_chunker(doc: Document, config: ChunkingConfig, granularity: str = "all") -> list[Chunk]:
    """Document → sections (at '#' lines) → paragraphs (blank-line blocks), with offsets and links."""
    text = doc.text
    document = Chunk(_chunk_id(doc.id, "document"), doc.id, "document", "prose", text, 0, len(text), len(text.split()))
    chunks = [document]
    starts = [m.start() for m in re.finditer(r"(?m)^#+ ", text)] or [0]
    if starts[0] != 0:
        starts.insert(0, 0)
    for s_pos, start in enumerate(starts):
        end = starts[s_pos + 1] if s_pos + 1 < len(starts) else len(text)
        body = text[start:end]
        heading = body.splitlines()[0].lstrip("# ").strip() if body.startswith("#") else ""
        section = Chunk(_chunk_id(doc.id, "section", start, end), doc.id, "section", "heading", body, start, end,
                        len(body.split()), heading_path=[heading] if heading else [], parent_id=document.id,
                        position=s_pos)
        document.child_ids.append(section.id)
        chunks.append(section)
        for p_pos, match in enumerate(re.finditer(r"(?s)\S.*?(?=\n\s*\n|\Z)", body)):
            block = match.group(0)
            if block.startswith("#"):
                continue
            block_type = _block_type(block)
            para = Chunk(_chunk_id(doc.id, "paragraph", start + match.start()), doc.id, "paragraph", block_type,
                         block, start + match.start(), start + match.end(), len(block.split()),
                         heading_path=list(section.heading_path), parent_id=section.id, position=p_pos,
                         language="python" if block_type == "code" else None)
            section.child_ids.append(para.id)
            section.contains_types = sorted({*section.contains_types, block_type})
            chunks.append(para)
    document.contains_types = sorted({t for c in chunks[1:] for t in c.contains_types})
    return chunks


def make_doc(name: str, text: str) -> Document:
    doc_id = hashlib.sha256(f"{name}\0{text}".encode()).hexdigest()[:16]
    return Document(doc_id, name, "markdown", len(text.encode()), "2026-01-01T00:00:00", text)


AUTH = """# Auth

Tokens are signed with the RS256 algorithm.

```
def verify(token):
    return jwt.decode(token)
```

# Rate limits

Each client may send 100 requests per minute.

| plan | limit |
| free | 100 |
"""

BILLING = """# Billing

Invoices are emailed monthly to the account owner.

- pay by card
- pay by wire transfer
"""
