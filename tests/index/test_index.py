"""The store test-suite: runs on embedded Chroma and (marked chroma_server) against a real `chroma run`."""

from __future__ import annotations

import pytest

from rag_core.config import ChunkingConfig
from rag_core.errors import IndexError_
from rag_core.index import Filters, delete_collection, list_collections


def texts(hits):
    return [chunk.text for chunk, _ in hits]


def test_ingest_counts_every_granularity(open_index, auth_doc, billing_doc):
    index = open_index()
    report = index.ingest([auth_doc, billing_doc])
    assert report.added == [auth_doc.id, billing_doc.id]
    assert report.chunks == {"document": 2, "section": 3, "paragraph": 6}
    assert report.embedded == 11
    assert index.count() == {"document": 2, "section": 3, "paragraph": 6, "row": 0}
    assert [d["name"] for d in index.documents()] == ["auth.md", "billing.md"]
    assert index.documents()[0]["chunks"] == {"document": 1, "section": 2, "paragraph": 4}


def test_vector_search_finds_the_matching_paragraph(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc, billing_doc])
    hits = index.vector_search("signed with the RS256 algorithm", 2, Filters(granularity=["paragraph"]))
    assert texts(hits)[0] == "Tokens are signed with the RS256 algorithm."
    assert 0.5 < hits[0][1] <= 1.0001
    assert hits[0][1] >= hits[1][1]
    assert all(chunk.granularity == "paragraph" for chunk, _ in hits)


def test_keyword_search_is_stemmed_and_filtered(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc, billing_doc])
    hits = index.keyword_search("invoice emailing", 5, Filters(granularity=["paragraph"]))
    assert texts(hits) == ["Invoices are emailed monthly to the account owner."]
    code = index.keyword_search("verify token", 5, Filters(granularity=["paragraph"], chunk_types=["code"]))
    assert [c.chunk_type for c, _ in code] == ["code"]
    assert index.keyword_search("verify token", 5, Filters(doc_ids=[billing_doc.id])) == []
    assert index.keyword_search("the of and", 5) == []  # only stop words


def test_exclude_ids_are_never_returned(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc, billing_doc])
    first = index.vector_search("RS256 tokens", 1, Filters(granularity="paragraph"))[0][0]
    again = index.vector_search("RS256 tokens", 3, Filters(granularity="paragraph"), exclude_ids=[first.id])
    assert first.id not in [c.id for c, _ in again] and len(again) == 3
    kw = index.keyword_search("RS256", 3, Filters(granularity="paragraph"), exclude_ids=[first.id])
    assert kw == []


def test_chunk_type_filter_reaches_coarse_granularities(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc, billing_doc])
    sections = index.vector_search("limits", 5, Filters(granularity=["section"], chunk_types=["table"]))
    assert [c.heading for c, _ in sections] == ["Rate limits"]
    lists = index.keyword_search("pay card", 5, Filters(granularity=["section"], chunk_types=["list"]))
    assert [c.heading for c, _ in lists] == ["Billing"]
    docs = index.vector_search("anything", 5, Filters(granularity=["document"], chunk_types=["code"]))
    assert [c.doc_id for c, _ in docs] == [auth_doc.id]


def test_filters_reject_unknown_values():
    with pytest.raises(ValueError, match="allowed: document, section, paragraph, row"):
        Filters(granularity=["chapter"])
    with pytest.raises(ValueError, match="unknown chunk type"):
        Filters(chunk_types=["image"])
    assert Filters(granularity="any").granularity is None


def test_navigation(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc, billing_doc])
    sections = index.list_sections(auth_doc.id)
    assert [s.heading for s in sections] == ["Auth", "Rate limits"]
    children = index.zoom_in(sections[1].id)
    assert [c.chunk_type for c in children] == ["prose", "table"]
    assert index.zoom_out(children[0].id).id == sections[1].id
    document = index.zoom_out(sections[0].id)
    assert document.granularity == "document" and index.zoom_out(document.id) is None
    assert index.read_section(auth_doc.id, sections[0].id).text.startswith("# Auth")
    with pytest.raises(IndexError_, match="belongs to document"):
        index.read_section(billing_doc.id, sections[0].id)
    with pytest.raises(IndexError_, match="no chunk with id 'nope'"):
        index.zoom_in("nope")
    with pytest.raises(IndexError_, match="not in index"):
        index.list_sections("missing-doc")
    assert [c.id for c in index.get_many([children[1].id, "nope", children[0].id])] == [children[1].id, children[0].id]
    assert [c.granularity for c in index.chunks(billing_doc.id)] == ["document", "section", "paragraph", "paragraph"]


def test_reopen_keeps_everything_and_refuses_other_embedder(open_index, auth_doc, fake_embedder_cls, data_dir):
    index = open_index()
    index.ingest([auth_doc])
    before = [c.id for c, _ in index.keyword_search("requests per minute", 3)]
    again = open_index()
    assert again.count() == index.count()
    assert [c.id for c, _ in again.keyword_search("requests per minute", 3)] == before
    assert again.vector_search("RS256", 1, Filters(granularity="paragraph"))[0][0].text.startswith("Tokens")
    with pytest.raises(IndexError_, match="built with embedder fake-64 \\(64 dims\\), not other-32"):
        open_index(embedder=fake_embedder_cls(dim=32, id="other-32"))
    with pytest.raises(IndexError_, match="each chunking configuration has its own collection"):
        open_index(chunking=ChunkingConfig(max_tokens=128))
    assert open_index(chunking=ChunkingConfig()).chunking == ChunkingConfig()


def test_reingest_skips_unchanged_and_replaces_new_version(open_index, auth_doc, make_doc):
    index = open_index()
    index.ingest([auth_doc])
    assert index.ingest([auth_doc]).unchanged == [auth_doc.id]
    assert index.ingest([auth_doc], force=True).replaced == [auth_doc.id]
    assert index.count()["paragraph"] == 4
    v2 = make_doc("auth.md", "# Auth\n\nTokens now use EdDSA signatures.\n")
    report = index.ingest([v2])
    assert report.removed_chunks == 7
    assert [d["doc_id"] for d in index.documents()] == [v2.id]
    assert index.count() == {"document": 1, "section": 1, "paragraph": 1, "row": 0}
    assert index.keyword_search("RS256", 5) == []
    assert index._store.count() == 3


def test_remove_document(open_index, auth_doc, billing_doc):
    index = open_index()
    index.ingest([auth_doc, billing_doc])
    assert index.remove_document(auth_doc.id) is True
    assert index.remove_document(auth_doc.id) is False
    assert index.count() == {"document": 1, "section": 1, "paragraph": 2, "row": 0}
    assert index._store.count() == 4
    assert index.keyword_search("RS256", 5) == []


def test_add_chunks_for_prechunked_corpora(open_index, make_doc):
    from rag_core.types import Chunk

    docs = [make_doc("d1", "aspirin lowers fever"), make_doc("d2", "statins lower cholesterol")]
    chunks = [Chunk(f"c-{d.name}", d.id, "document", "prose", d.text, 0, len(d.text), 3) for d in docs]
    index = open_index()
    report = index.add_chunks(docs, chunks)
    assert report.chunks == {"document": 2}
    assert texts(index.keyword_search("cholesterol", 5)) == ["statins lower cholesterol"]
    assert index.get("c-d1").text == "aspirin lowers fever"
    with pytest.raises(ValueError, match="not among the docs"):
        index.add_chunks(docs[:1], chunks)


def test_hot_tier_expires(settings, embedder, collection_name, auth_doc, billing_doc, fake_chunker):
    from rag_core.index import Index

    now = [1000.0]
    index = Index.open(collection_name, settings, embedder, None, chunker=fake_chunker, clock=lambda: now[0])
    index.ingest([auth_doc])
    chunks = index.add_hot(billing_doc, ttl_s=60)
    assert len(chunks) == 4
    assert texts(index.keyword_search("invoices", 1))[0].startswith("Invoices")
    assert texts(index.vector_search("invoices emailed monthly", 1, Filters(granularity="paragraph")))[0] \
        .startswith("Invoices")
    assert index.count()["document"] == 2
    assert [d["tier"] for d in index.documents()] == ["persistent", "hot"]
    now[0] += 15
    assert index.documents()[1]["expires_in_s"] == 45.0
    assert index.zoom_out(chunks[2].id).id == chunks[1].id
    now[0] += 46
    assert index.keyword_search("invoices", 1) == []
    assert index.get(chunks[0].id) is None
    assert index.count()["document"] == 1
    with pytest.raises(ValueError, match="ttl_s must be a positive"):
        index.add_hot(billing_doc, ttl_s=0)


def test_list_and_delete_collections(open_index, settings, auth_doc):
    index = open_index("alpha-1")
    index.ingest([auth_doc])
    open_index("beta-2")
    names = {row["name"]: row for row in list_collections(settings)}
    assert names["alpha-1"]["documents"] == 1 and names["alpha-1"]["chunks"] == 7
    assert names["alpha-1"]["vectors"] == 7 and names["alpha-1"]["embedder_id"] == "fake-64"
    assert delete_collection("alpha-1", settings) is True
    assert "alpha-1" not in {row["name"] for row in list_collections(settings)}
    assert delete_collection("alpha-1", settings) is False
    with pytest.raises(ValueError, match="invalid collection name"):
        delete_collection("../etc", settings)
    assert open_index("alpha-1").count()["document"] == 0


def test_blank_queries_and_bad_k(open_index, auth_doc):
    index = open_index()
    index.ingest([auth_doc])
    assert index.vector_search("   ", 3) == [] and index.keyword_search("", 3) == []
    assert index.vector_search("RS256", 0) == []
    with pytest.raises(ValueError, match="k must be a whole number"):
        index.keyword_search("RS256", -1)
    with pytest.raises(ValueError, match="the query must be a string"):
        index.vector_search(None, 3)


def test_damaged_side_store_gives_a_clear_error(open_index, auth_doc):
    index = open_index()
    index.ingest([auth_doc])
    for path in index._side.chunk_dir.iterdir():
        path.unlink()
    with pytest.raises(IndexError_, match="is damaged .* delete the collection and re-ingest"):
        open_index()


def test_repeated_chunk_ids_from_a_chunker_are_stored_once(open_index, auth_doc, fake_chunker):
    def repeating_chunker(doc, config, granularity="all"):
        chunks = fake_chunker(doc, config, granularity)
        return chunks + chunks[-2:]

    index = open_index(chunker=repeating_chunker)
    report = index.ingest([auth_doc])
    assert report.warnings == ["auth.md: 2 duplicate chunk id(s) from the chunker; kept the first"]
    assert index.count() == {"document": 1, "section": 2, "paragraph": 4, "row": 0}
