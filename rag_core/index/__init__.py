"""The index: chunks of every granularity in a vector store (Chroma) and a BM25 index, plus navigation.

``Index`` (``index``) opens an index and joins its parts: ``reads`` (documents, chunks, counts) with ``navigation``
(zoom in, zoom out, a document's sections), ``search`` (vector and keyword search), ``writes`` (ingest, the atomic
commit, recovery, the hot tier) and ``sync`` (the committed snapshot, refreshed when another process or instance
committed). ``model`` holds ``IngestReport`` and the snapshot they share; ``protocol`` holds ``SearchIndex``, what
retrieval, the agent's tools and the loop need of an index; ``Filters`` is the stores' (``rag_core.stores.filters``).
"""

from rag_core.index.index import Index
from rag_core.index.model import IngestReport
from rag_core.stores.chroma.vector import ChromaVectorStore as ChromaVectorStore
from rag_core.stores.collections import delete_collection, list_collections
from rag_core.stores.filters import Filters

# The stores the index writes to, reachable here as before the split (tests patch them through this module).
from rag_core.stores.keyword import KeywordIndex as KeywordIndex

__all__ = ["Filters", "Index", "IngestReport", "delete_collection", "list_collections"]
