"""Chunking: structure-aware multi-granularity chunks, the fixed-window baseline and the integrity lint.

The structure chunker runs in stages, one module each: ``parse`` → ``split`` → ``assemble`` → ``pack``
(``structure`` links the result into a tree and makes the chunks). One name per idea:

- **Block**: one top-level structural element the parse finds (heading, paragraph, list, table, fence, quote,
  ...; in source code a definition or the statements between two): ``markdown_blocks.Block``,
  ``code.SourceBlock``. Blocks are counted once and never re-parsed.
- **Piece**: what the split stage makes of a block (``split.Piece``): the whole block when it fits
  ``max_tokens``, else one of its consecutive pieces (``piece``/``pieces``). A ``sentences.SentenceRun`` (packed
  sentences) or a code span becomes one piece.
- **Draft**: a chunk under construction at any granularity (``assemble.Draft``): its text and span assembled
  from its pieces, before ids and links are known. ``Chunk`` (``rag_core.types``) is the finished one.
- **Passage**: a chunk of the ``paragraph`` granularity: the pieces under one heading packed up to
  ``max_tokens``, never across a heading.
- **Part**: one of the consecutive chunks a section or document larger than ``size_limit`` is stored as.
- **Row**: a table body row with its header repeated (granularity ``row``).
"""

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
