"""Fakes the tests pass through the same doors the app uses: an OpenAI-compatible server, an index, a retriever,
a vector store backend (a row of ``rag_core.stores.backends``), embedders and a chunker. Import them as
``from tests.fakes.<module> import ...`` (the repo root is on the path)."""
