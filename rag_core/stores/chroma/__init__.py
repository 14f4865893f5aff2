"""Everything that knows it talks to Chroma: the vector store of a collection and the collection-name rule
(``vector``), clients and the functions of Chroma's row in ``rag_core.stores.backends`` (``client``), the
``studio-meta`` records instances share through a server (``meta``), and a local ``chroma run`` for tests, the load
benchmark and demos (``server``)."""
