"""The vector store contract: every backend (embedded Chroma, the in-memory fake of ``tests/fakes``) opened
through its row in ``rag_core.stores.backends`` behaves the same under every method of ``VectorStore`` and every
function of its row. A new backend adds its name to ``BACKEND_PARAMS``."""

from __future__ import annotations

import typing

import numpy as np
import pytest

from rag_core.config import Settings
from rag_core.index import Filters, Index, delete_collection, list_collections
from rag_core.stores import backends
from rag_core.stores.backends import BACKENDS, check_index_name, open_vector_store, server_mode
from rag_core.stores.vector import chunk_metadata
from rag_core.types import Chunk
from tests.fakes import vector_store as fake

BACKEND_PARAMS = ["chroma", fake.NAME]
META = {"embedder_id": "test", "dim": 3, "chunking": "{}", "created": "2026-01-01T00:00:00+00:00"}


@pytest.fixture(params=BACKEND_PARAMS)
def settings(request, data_dir, monkeypatch) -> Settings:
    if request.param == fake.NAME:  # registered for the test only, as a new backend's row would be for good
        return fake.use_memory_backend(monkeypatch, Settings(data_dir=data_dir))
    return Settings(data_dir=data_dir, vector_store=request.param)


@pytest.fixture
def store(settings, collection_name):
    return open_vector_store(settings, collection_name, META)


def _chunk(chunk_id: str, doc_id: str, granularity: str, chunk_type: str, contains=()) -> Chunk:
    return Chunk(chunk_id, doc_id, granularity, chunk_type, f"text of {chunk_id}", 0, 10, 3,
                 contains_types=list(contains))


# Four rows: id -> (chunk, vector). Cosine to the query [1, 0, 0]: a 1.0, b 0.8, c 0.6, d 0.0.
ROWS = {
    "a": (_chunk("a", "d1", "paragraph", "code"), [1.0, 0.0, 0.0]),
    "b": (_chunk("b", "d1", "section", "heading", ["code", "prose"]), [0.8, 0.6, 0.0]),
    "c": (_chunk("c", "d2", "paragraph", "table"), [0.6, 0.0, 0.8]),
    "d": (_chunk("d", "d2", "document", "prose", ["table"]), [0.0, 0.0, 2.0]),
}
QUERY = np.array([1.0, 0.0, 0.0], dtype=np.float32)


def _fill(store, ids=tuple(ROWS), documents=True) -> None:
    store.upsert(list(ids), np.array([ROWS[i][1] for i in ids], dtype=np.float32),
                 [chunk_metadata(ROWS[i][0], "guide.md", "2026-01-01") for i in ids],
                 [f"doc {i}" for i in ids] if documents else None)


def _ids(found) -> list[str]:
    return [row_id for row_id, _ in found]


def test_rows_written_are_read_back(store):
    _fill(store, ["a", "b"])
    _fill(store, ["c", "d"], documents=False)
    assert sorted(store.all_ids()) == ["a", "b", "c", "d"]
    got = store.vectors(["a", "d", "missing"])
    assert sorted(got) == ["a", "d"]
    np.testing.assert_allclose(got["d"], [0.0, 0.0, 2.0])
    assert store.documents(["a", "b", "c", "missing"]) == {"a": "doc a", "b": "doc b"}
    assert store.metadata() == META


def test_an_upsert_replaces_the_row_of_its_id(store):
    _fill(store)
    moved = _chunk("a", "d2", "row", "table")
    store.upsert(["a"], np.array([[0.0, 1.0, 0.0]], dtype=np.float32), [chunk_metadata(moved, "g.md", "x")], ["new"])
    assert sorted(store.all_ids()) == ["a", "b", "c", "d"]
    np.testing.assert_allclose(store.vectors(["a"])["a"], [0.0, 1.0, 0.0])
    assert store.documents(["a"]) == {"a": "new"}
    assert _ids(store.query(QUERY, 4, Filters(granularity=["row"]))) == ["a"]
    store.upsert(["b"], np.array([[0.0, 1.0, 0.0]], dtype=np.float32), [chunk_metadata(ROWS["b"][0], "g.md", "y")])
    assert store.documents(["b"]) == {"b": "doc b"}  # written without a document: the row keeps its own


def test_an_upsert_of_unequal_lengths_is_refused(store):
    with pytest.raises(ValueError, match="as many ids"):
        store.upsert(["a", "b"], np.zeros((1, 3), dtype=np.float32), [{"doc_id": "d1"}])


def test_a_query_ranks_by_cosine_similarity(store):
    _fill(store)
    found = store.query(QUERY, 4)
    assert _ids(found) == ["a", "b", "c", "d"]
    np.testing.assert_allclose([score for _, score in found], [1.0, 0.8, 0.6, 0.0], atol=1e-5)
    assert _ids(store.query(QUERY, 2)) == ["a", "b"]
    assert _ids(store.query(QUERY, 50)) == ["a", "b", "c", "d"]
    assert store.query(QUERY, 0) == []


@pytest.mark.parametrize(("filters", "expected"), [
    (Filters(), ["a", "b", "c", "d"]),
    (Filters(granularity=["paragraph"]), ["a", "c"]),
    (Filters(granularity=["section", "document"]), ["b", "d"]),
    (Filters(chunk_types=["code"]), ["a", "b"]),  # a section containing code counts as code
    (Filters(chunk_types=["table", "heading"]), ["b", "c", "d"]),
    (Filters(doc_ids=["d2"]), ["c", "d"]),
    (Filters(granularity=["paragraph"], chunk_types=["table"], doc_ids=["d2"]), ["c"]),
    (Filters(granularity=["row"]), []),
])
def test_a_query_returns_only_rows_passing_the_filters(store, filters, expected):
    _fill(store)
    assert _ids(store.query(QUERY, 10, filters)) == expected


def test_deleted_rows_are_gone_and_missing_ids_are_ignored(store):
    _fill(store)
    store.delete(["b", "d", "missing"])
    store.delete([])
    assert sorted(store.all_ids()) == ["a", "c"]
    assert _ids(store.query(QUERY, 10)) == ["a", "c"]
    assert sorted(store.vectors(["a", "b"])) == ["a"] and store.documents(["b", "d"]) == {}


def test_reopening_finds_the_rows_and_the_first_metadata(settings, store, collection_name):
    _fill(store)
    for fresh in (False, True):
        again = open_vector_store(settings, collection_name, {**META, "created": "later"}, fresh=fresh)
        assert sorted(again.all_ids()) == ["a", "b", "c", "d"] and again.metadata() == META
        assert _ids(again.query(QUERY, 1)) == ["a"]


def test_the_row_lists_and_drops_stores(settings, store, collection_name):
    _fill(store)
    row = backends.backend(settings)
    assert (collection_name, META, 4) in row.collections(settings)
    assert row.drop(settings, collection_name) is True
    assert collection_name not in [name for name, _, _ in row.collections(settings)]
    assert row.drop(settings, collection_name) is False
    assert open_vector_store(settings, collection_name, META).all_ids() == []


def test_no_backend_coordinates_through_a_server_without_one(settings):
    assert server_mode(settings) is False
    assert backends.describe(settings)


def test_index_names_are_folder_safe_everywhere_and_chroma_keeps_its_own_rule(settings):
    for bad in ("", ".", "..", "a/b", "a\\b"):
        with pytest.raises(ValueError):
            check_index_name(bad, settings)
    assert check_index_name("docs-1a2b3c", settings) == "docs-1a2b3c"
    if settings.vector_store == "chroma":  # 3-63 characters, alphanumeric at both ends
        with pytest.raises(ValueError, match="invalid collection name"):
            check_index_name("ab", settings)
    else:
        assert check_index_name("ab", settings) == "ab"


def test_settings_name_exactly_the_backends_in_the_table(monkeypatch):
    assert typing.get_args(Settings.model_fields["vector_store"].annotation) == tuple(BACKENDS)
    assert Settings().vector_store == "chroma"
    monkeypatch.setenv("RAG_VECTOR_STORE", "qdrant")  # not a row: refused when the settings are read
    with pytest.raises(ValueError, match="vector_store"):
        Settings()
    monkeypatch.delenv("RAG_VECTOR_STORE")
    assert server_mode(Settings(chroma_host="127.0.0.1")) is True  # Chroma's row: a host means a server


def test_a_backend_is_three_files(data_dir, monkeypatch, auth_doc, billing_doc, embedder, fake_chunker):
    """A row registered here (no other module changed) carries a real Index: ingest, search, list, delete."""
    settings = fake.use_memory_backend(monkeypatch, Settings(data_dir=data_dir))
    index = Index.open("tiny", settings, embedder, None, chunker=fake_chunker)
    report = index.ingest([auth_doc, billing_doc])
    assert report.embedded == 11
    (stored,) = [s for (where, name), s in fake._STORES.items() if (where, name) == (str(data_dir), "tiny")]
    assert sorted(stored.all_ids()) == sorted(c.id for c in index.chunks())
    hits = index.vector_search("signed with the RS256 algorithm", 2, Filters(granularity=["paragraph"]))
    assert hits[0][0].text == "Tokens are signed with the RS256 algorithm."
    assert index.keyword_search("invoice", 1)[0][0].doc_id == billing_doc.id
    reopened = Index.open("tiny", settings, embedder, None, chunker=fake_chunker)
    assert [d["name"] for d in reopened.documents()] == ["auth.md", "billing.md"]
    assert [(r["name"], r["vectors"]) for r in list_collections(settings)] == [("tiny", 11)]
    assert not (data_dir / "chroma").exists()  # nothing went to Chroma
    assert delete_collection("tiny", settings) is True and list_collections(settings) == []
