"""Vector search is exact and repeatable on embedded collections (HNSW missed duplicated vectors)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Filters, Index
from rag_core.loaders import load_path, sample_paths, samples_dir
from rag_core.stores.contextual import embed_chunks
from rag_core.stores.exact import ExactVectors
from rag_core.stores.hot import chunk_allowed
from rag_core.stores.vector import EF_SEARCH, ChromaVectorStore, make_client
from rag_core.types import Chunk


def chunk(id: str, granularity: str = "paragraph", chunk_type: str = "prose", doc_id: str = "d1", **kw) -> Chunk:
    return Chunk(id, doc_id, granularity, chunk_type, id, 0, 1, 1, **kw)


def test_exact_search_filters_excludes_and_orders_ties_by_id():
    chunks = [chunk("b"), chunk("a"), chunk("s", "section", "heading", contains_types=["code"]),
              chunk("c", chunk_type="code", doc_id="d2"), chunk("far")]
    vectors = np.array([[1, 0], [2, 0], [1, 0.1], [1, 1], [-1, 0]], dtype=np.float32)
    exact = ExactVectors(chunks, vectors)
    query = np.array([3.0, 0.0])
    assert [i for i, _ in exact.search(query, 3)] == ["a", "b", "s"]  # a and b tie at 1.0: by id
    assert exact.search(query, 1)[0] == ("a", pytest.approx(1.0))
    assert [i for i, _ in exact.search(query, 9, granularity=["section"])] == ["s"]
    assert [i for i, _ in exact.search(query, 9, chunk_types=["code"])] == ["s", "c"]  # s contains code
    assert [i for i, _ in exact.search(query, 9, doc_ids=["d2", "unknown"])] == ["c"]
    assert [i for i, _ in exact.search(query, 2, exclude_ids=["a", "zz"])] == ["b", "s"]
    assert exact.search(query, 0) == [] and exact.search(query, 3, granularity=["row"]) == []


def test_collections_search_wide_new_and_old(data_dir):
    settings = Settings(data_dir=data_dir)
    client = make_client(settings)
    client.get_or_create_collection("made-before", configuration={"hnsw": {"space": "cosine"}},
                                    embedding_function=None)
    assert client.get_collection("made-before").configuration["hnsw"]["ef_search"] < EF_SEARCH
    for name in ("made-before", "made-now"):
        store = ChromaVectorStore(client, name, {"note": "x"}, "embedded")
        assert store._collection.configuration["hnsw"]["ef_search"] == EF_SEARCH


def test_embedded_vector_search_is_exact_without_chroma_hnsw(data_dir, monkeypatch):
    """The golden questions under the retriever's filters return the true top 10 on the sample index, and
    Chroma's approximate query is not used for it (it missed the nearest chunk in some processes)."""
    settings = Settings(data_dir=data_dir)
    embedder = get_embedder("hash", settings, None)
    Index.open("exact", settings, embedder).ingest([load_path(p) for p in sample_paths()])
    index = Index.open("exact", settings, embedder)
    monkeypatch.setattr(index._store, "query", lambda *a, **k: pytest.fail("HNSW query on an embedded index"))
    chunks = index.chunks()
    names = {d["doc_id"]: d["name"] for d in index.documents()}
    vectors = embed_chunks(chunks, names, embedder.embed_documents, embedder.dim)
    questions = [json.loads(line)["question"] for line in
                 (samples_dir() / "golden.jsonl").read_text().splitlines() if line.strip()]
    k = 10
    for granularity, chunk_types in ((["paragraph"], None), (["paragraph", "row"], ["table", "code"]),
                                     (["section"], None), (None, None)):
        allowed = np.array([chunk_allowed(c, granularity, chunk_types, None) for c in chunks])
        for question in questions:
            found = index.vector_search(question, k, Filters(granularity=granularity, chunk_types=chunk_types))
            exact = np.sort(np.where(allowed, vectors @ embedder.embed_query(question), -np.inf))[::-1][:k]
            assert np.allclose([s for _, s in found], exact, atol=1e-5), question
