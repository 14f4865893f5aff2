"""Storage tiers behind ``rag_core.index``: Chroma vectors, BM25 keywords, the in-memory hot tier, the side store;
``Filters``, the one filter value they all take; ``records``, the record stores of configurations, runs and state;
``chroma_server``, a local ``chroma run`` for tests, the load benchmark and demos."""

from rag_core.stores.filters import Filters
from rag_core.stores.hot import HotTier
from rag_core.stores.keyword import KeywordIndex
from rag_core.stores.sidestore import SideStore
from rag_core.stores.vector import ChromaVectorStore, VectorStore

__all__ = ["ChromaVectorStore", "Filters", "HotTier", "KeywordIndex", "SideStore", "VectorStore"]
