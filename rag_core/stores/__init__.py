"""Storage tiers behind ``rag_core.index``: Chroma vectors, BM25 keywords, the in-memory hot tier, the side store."""

from rag_core.stores.hot import HotTier
from rag_core.stores.keyword import KeywordIndex
from rag_core.stores.sidestore import SideStore
from rag_core.stores.vector import ChromaVectorStore, VectorStore

__all__ = ["ChromaVectorStore", "HotTier", "KeywordIndex", "SideStore", "VectorStore"]
