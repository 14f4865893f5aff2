"""Vector search is exact and repeatable on embedded collections (HNSW missed duplicated vectors)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.errors import IndexError_
from rag_core.index import Filters, Index
from rag_core.loaders import load_path, sample_paths, samples_dir
from rag_core.stores.chroma.client import make_client
from rag_core.stores.chroma.vector import EF_SEARCH, ChromaVectorStore
from rag_core.stores.contextual import embed_chunks
from rag_core.stores.exact import ExactVectors
from rag_core.stores.hot import chunk_allowed
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


class _Flaky:
    """Wraps a Chroma collection: where-filtered queries raise Chroma's HNSW race error ``failures`` times."""

    def __init__(self, collection, failures: int):
        self._collection, self.failures, self.calls = collection, failures, []

    def query(self, **kwargs):
        self.calls.append(kwargs.get("where"))
        if kwargs.get("where") is not None and self.failures > 0:
            self.failures -= 1
            raise RuntimeError("Error executing plan: Internal error: Error finding id")
        return self._collection.query(**kwargs)

    def __getattr__(self, name):
        return getattr(self._collection, name)


@pytest.mark.parametrize("failures", [1, 100])
def test_filtered_search_survives_chromas_missing_id_race(data_dir, monkeypatch, failures):
    # chroma-core/chroma#7032: a where-filtered query during a server's flush can fail with "Error finding id".
    monkeypatch.setattr("rag_core.stores.chroma.vector._RETRY_PAUSES", (0.0, 0.0))
    store = ChromaVectorStore(make_client(Settings(data_dir=str(data_dir))), "flaky", {"note": "x"}, "embedded")
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(200, 8)).astype(np.float32)
    ids = [f"c{i:03d}" for i in range(200)]
    store.upsert(ids, vectors, [{"granularity": "paragraph" if i % 5 == 0 else "section"} for i in range(200)])
    paragraphs = Filters(granularity=["paragraph"])
    where = {"granularity": {"$in": ["paragraph"]}}  # what Chroma is asked, seen by the wrapper
    expected = store.query(vectors[3], 10, paragraphs)
    flaky = _Flaky(store._collection, failures)
    store._collection = flaky

    got = store.query(vectors[3], 10, paragraphs)

    assert [i for i, _ in got] == [i for i, _ in expected]  # the same ten paragraphs, best first
    assert all(int(i[1:]) % 5 == 0 for i, _ in got)
    assert got[0][1] == pytest.approx(expected[0][1])
    assert flaky.calls.count(where) == min(failures + 1, 3)  # retried; then, if it still fails, unfiltered
    assert (None in flaky.calls) == (failures >= 3)


def test_other_search_failures_are_not_retried(data_dir):
    store = ChromaVectorStore(make_client(Settings(data_dir=str(data_dir))), "broken", {"note": "x"}, "embedded")
    store.upsert(["a"], np.ones((1, 8), dtype=np.float32), [{"granularity": "paragraph"}])

    class Broken(_Flaky):
        def query(self, **kwargs):
            self.calls.append(kwargs.get("where"))
            raise RuntimeError("disk I/O error")

    store._collection = broken = Broken(store._collection, 0)
    with pytest.raises(IndexError_, match="vector search failed on embedded .*disk I/O error"):
        store.query(np.ones(8, dtype=np.float32), 1, Filters(granularity="paragraph"))
    assert len(broken.calls) == 1
