"""Home page renderers: the guided demo's step 3 (one-shot RAG versus the agent)."""
