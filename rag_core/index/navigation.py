"""Navigation over an index's chunk hierarchy: zoom in to children, out to the parent, sections of a document."""

from __future__ import annotations

from rag_core.errors import IndexError_
from rag_core.types import Chunk


class Navigation:
    """Mixin for ``Index``: needs ``name``, ``get``, ``get_many`` and ``chunks``."""

    def _require(self, chunk_id: str) -> Chunk:
        chunk = self.get(chunk_id)
        if chunk is None:
            raise IndexError_(f"no chunk with id {chunk_id!r} in index {self.name!r}")
        return chunk

    def zoom_in(self, section_id: str) -> list[Chunk]:
        """The children of a chunk (a section's paragraphs, a table's rows), in document order."""
        chunk = self._require(section_id)
        if chunk.child_ids:
            return self.get_many(chunk.child_ids)
        return [c for c in self.chunks(chunk.doc_id) if c.parent_id == chunk.id]

    def zoom_out(self, chunk_id: str) -> Chunk | None:
        """The parent of a chunk; None for a document-level chunk."""
        chunk = self._require(chunk_id)
        return self.get(chunk.parent_id) if chunk.parent_id else None

    def list_sections(self, doc_id: str) -> list[Chunk]:
        """Section chunks of a document in document order."""
        if not self.chunks(doc_id):
            raise IndexError_(f"document {doc_id!r} is not in index {self.name!r}")
        return self.chunks(doc_id, "section")

    def read_section(self, doc_id: str, section_id: str) -> Chunk:
        chunk = self._require(section_id)
        if chunk.doc_id != doc_id:
            raise IndexError_(f"chunk {section_id!r} belongs to document {chunk.doc_id!r}, not {doc_id!r}")
        return chunk
