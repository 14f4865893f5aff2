"""Pure helpers of the stores: Chroma metadata and where clauses, BM25 tokenising and masks, the server helper."""

from __future__ import annotations

import pytest

from rag_core.stores.chroma.server import free_port, heartbeat
from rag_core.stores.chroma.vector import check_collection_name, chroma_where
from rag_core.stores.filters import Filters
from rag_core.stores.hot import chunk_allowed
from rag_core.stores.keyword import KeywordIndex, tokenize
from rag_core.stores.vector import chunk_metadata
from rag_core.types import Chunk


def section(**kwargs) -> Chunk:
    values = dict(id="s1", doc_id="d1", granularity="section", chunk_type="heading", text="# Setup\n\nRun it.",
                  start=0, end=16, tokens=5, heading_path=["Guide", "Setup"], contains_types=["code", "prose"])
    values.update(kwargs)
    return Chunk(**values)


def test_chunk_metadata_is_flat_and_none_free():
    metadata = chunk_metadata(section(), "guide.md", "2026-01-01T00:00:00+00:00")
    assert metadata == {
        "doc_id": "d1", "granularity": "section", "chunk_type": "heading", "language": "", "heading": "Guide › Setup",
        "parent_id": "", "tokens": 5, "start": 0, "end": 16, "source": "guide.md",
        "updated": "2026-01-01T00:00:00+00:00", "has_heading": True, "has_code": True, "has_prose": True,
    }


def test_filters_become_a_chroma_where_clause_inside_the_store():
    assert chroma_where(None) is None and chroma_where(Filters()) is None
    assert chroma_where(Filters(granularity="any", chunk_types=[], doc_ids=[])) is None
    assert chroma_where(Filters(granularity="row")) == {"granularity": {"$in": ["row"]}}
    assert chroma_where(Filters(chunk_types=["code"])) == {"has_code": True}
    assert chroma_where(Filters(doc_ids="d1")) == {"doc_id": {"$in": ["d1"]}}
    assert chroma_where(Filters(["section"], ["code", "table"], ["d1"])) == {"$and": [
        {"granularity": {"$in": ["section"]}},
        {"$or": [{"has_code": True}, {"has_table": True}]},
        {"doc_id": {"$in": ["d1"]}},
    ]}


def test_filters_are_checked_normalised_and_frozen():
    filters = Filters(granularity="paragraph", chunk_types=("code",), doc_ids=("d1", "d2"))
    assert (filters.granularity, filters.chunk_types, filters.doc_ids) == (["paragraph"], ["code"], ["d1", "d2"])
    assert Filters(granularity="any") == Filters()
    with pytest.raises(ValueError, match="unknown granularity"):
        Filters(granularity="chapter")
    with pytest.raises(ValueError, match="unknown chunk type"):
        Filters(chunk_types=["image"])
    with pytest.raises(AttributeError):
        filters.granularity = ["section"]  # type: ignore[misc]


def test_hot_filter_matches_where_semantics():
    chunk = section()
    assert chunk_allowed(chunk, ["section"], ["code"], ["d1"]) is True
    assert chunk_allowed(chunk, ["section"], ["table"], None) is False
    assert chunk_allowed(chunk, ["paragraph"], None, None) is False
    assert chunk_allowed(chunk, None, None, ["d2"]) is False


def test_collection_names():
    assert check_collection_name("docs-1a2b3c") == "docs-1a2b3c"
    for bad in ["ab", "-docs", "docs/../x", "a..b", "x" * 64, "naïve", "docs-1\n", "docs-1\n\n"]:  # \n: Chroma refuses
        with pytest.raises(ValueError, match="invalid collection name"):
            check_collection_name(bad)


def test_tokenize_stems_and_drops_stop_words():
    assert tokenize(["The runners are running quickly to the station of it"]) == [["runner", "run", "quick", "station"]]


def test_keyword_index_round_trip(tmp_path):
    chunks = {c.id: c for c in [
        Chunk("p1", "d1", "paragraph", "prose", "Rotate keys every 90 days.", 0, 26, 6),
        Chunk("p2", "d1", "paragraph", "code", "rotate_keys(days=90)", 27, 47, 6),
        Chunk("s1", "d1", "section", "heading", "# Keys\n\nRotate keys every 90 days.", 0, 47, 9,
              contains_types=["prose", "code"]),
    ]}
    index = KeywordIndex.build(chunks)
    assert [i for i, _ in index.search("rotating keys", 5, ["paragraph"])] == ["p1"]
    assert sorted(i for i, _ in index.search("rotate", 5)) == ["p1", "s1"]  # every granularity when unfiltered
    index.save(tmp_path / "bm25")
    loaded = KeywordIndex.load(tmp_path / "bm25", chunks)
    assert loaded.search("rotating keys", 5, ["paragraph"]) == index.search("rotating keys", 5, ["paragraph"])
    assert loaded.search("keys", 5, ["section"], ["code"]) == index.search("keys", 5, ["section"], ["code"])
    assert loaded.search("keys", 5, ["paragraph"], exclude_ids=["p1"]) == []
    assert KeywordIndex.load(tmp_path / "missing", chunks).search("keys", 1, ["section"])[0][0] == "s1"


def test_heartbeat_is_false_where_nothing_listens():
    assert heartbeat("127.0.0.1", free_port(), timeout_s=0.5) is False


def test_unreachable_server_at_open_is_a_clear_error(data_dir):
    from rag_core.config import Settings
    from rag_core.errors import IndexError_
    from rag_core.index import Index

    class Tiny:
        id, dim = "tiny-4", 4

    port = free_port()
    settings = Settings(data_dir=data_dir, chroma_host="127.0.0.1", chroma_port=port)
    with pytest.raises(IndexError_, match=f"Chroma server at 127.0.0.1:{port}"):
        Index.open("unreachable", settings, Tiny(), None)
    # Nothing is left behind: an embedded open of the same name later starts a fresh, empty index.
    assert not (data_dir / "indexes" / "unreachable").exists()


def test_built_index_answers_keyword_search_while_its_chroma_server_is_down(server_down):
    """An index built before (its chunk store and BM25 are local) opens with the server down: keyword search
    and navigation answer, vector search says which server is unreachable."""
    from rag_core.errors import IndexError_
    from rag_core.index import Index

    index, settings, port = server_down
    hits = index.keyword_search("install", 3)
    assert hits and index.list_sections(hits[0][0].doc_id)
    with pytest.raises(IndexError_, match=f"127.0.0.1:{port}"):
        index.vector_search("install", 3)
    with pytest.raises(IndexError_, match=f"127.0.0.1:{port}"):
        Index.open("never-built", settings, index.embedder)
