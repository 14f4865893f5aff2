"""Layer 0: loading files of every format in ``format_table`` (Markdown, PDF, source code …) into
``Document``s (``load``), and the persistent ``DocumentStore`` they are added to (``document_store``)."""

from rag_core.loaders.detect import safe_name
from rag_core.loaders.format_table import listed_kinds
from rag_core.loaders.formats import page_of
from rag_core.loaders.load import (
    document_id,
    iter_named_paths,
    iter_paths,
    load_bytes,
    load_many,
    load_path,
    remove_samples,
    sample_ids,
    sample_paths,
    samples_dir,
    supported_types,
)

__all__ = [
    "document_id",
    "iter_named_paths",
    "iter_paths",
    "listed_kinds",
    "load_bytes",
    "load_many",
    "load_path",
    "page_of",
    "remove_samples",
    "safe_name",
    "sample_ids",
    "sample_paths",
    "samples_dir",
    "supported_types",
]
