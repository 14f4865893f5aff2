"""The studio's retrieval served as MCP tools (``python -m rag_core serve-mcp``); see docs/MCP.md."""
