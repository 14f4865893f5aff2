"""Exceptions with messages meant for the person using the app or the command line."""


class RagError(Exception):
    """Base class: the message says what went wrong and what to do."""


class LoadError(RagError):
    """A file could not be loaded as a document (unsupported, corrupt, empty, binary, too large)."""


class EmbeddingError(RagError):
    """The embedder failed (model missing, endpoint unreachable, bad key)."""


class IndexError_(RagError):
    """The index is missing, mismatched or its store is unreachable."""


class LLMError(RagError):
    """The LLM endpoint failed (unreachable, timeout, refused, malformed answer)."""
