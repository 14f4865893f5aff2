"""Storage tiers behind ``rag_core.index``: the vector store (``vector.VectorStore``; its backends in ``backends``,
Chroma's code in ``chroma``), BM25 keywords, the in-memory hot tier, the side store; ``Filters``, the one filter
value they all take; ``records``, the record stores of configurations, runs and state; ``shared``, what instances
share through a server (manifests, leases)."""

from rag_core.stores.chroma.vector import ChromaVectorStore
from rag_core.stores.filters import Filters
from rag_core.stores.hot import HotTier
from rag_core.stores.keyword import KeywordIndex
from rag_core.stores.sidestore import SideStore
from rag_core.stores.vector import VectorStore

__all__ = ["ChromaVectorStore", "Filters", "HotTier", "KeywordIndex", "SideStore", "VectorStore"]
