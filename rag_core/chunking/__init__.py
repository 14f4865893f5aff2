"""Chunking: structure-aware multi-granularity chunks, the fixed-window baseline and the integrity lint."""

from rag_core.chunking.chunker import GRANULARITY_CHOICES, chunk_document, chunk_documents
from rag_core.chunking.fixed import fixed_chunks
from rag_core.chunking.lint import LINT_KINDS, LintReport, Violation, lint

__all__ = [
    "GRANULARITY_CHOICES",
    "LINT_KINDS",
    "LintReport",
    "Violation",
    "chunk_document",
    "chunk_documents",
    "fixed_chunks",
    "lint",
]
