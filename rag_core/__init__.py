"""Agentic RAG Studio core: chunking, indexing, retrieval, the agent and evaluation (no Streamlit here)."""

from rag_core.config import RAGConfig, Settings, get_settings
from rag_core.types import Chunk, Document, Hit

__all__ = ["Chunk", "Document", "Hit", "RAGConfig", "Settings", "get_settings"]
