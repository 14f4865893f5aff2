import pytest

from rag_core.errors import RagError
from rag_core.retrieval.web import web_search

RESULTS = [
    {"url": "https://example.org/a", "title": "Wrenfall 2.0 released", "content": "New scheduler.", "score": 2.5},
    {"url": "https://example.org/a", "title": "duplicate url", "content": "dropped"},
    {"url": "https://news.example.com/b", "title": "Release notes", "content": "Bug fixes."},
    {"title": "no url is skipped"},
]


def test_results_become_hits_with_synthetic_chunks(searx):
    url, handler = searx
    handler.results = RESULTS
    hits = web_search(f"{url}/search", "wrenfall release", k=5)
    assert handler.queries == [{"path": "/search", "q": "wrenfall release", "format": "json"}]
    assert [h.chunk.metadata["url"] for h in hits] == ["https://example.org/a", "https://news.example.com/b"]
    first = hits[0]
    assert first.chunk.text == "Wrenfall 2.0 released\n\nNew scheduler."
    assert first.chunk.doc_id == "web:example.org" and first.source_name == "example.org"
    assert first.chunk.verbatim is False and first.chunk.granularity == "document"
    assert first.ranks == {"web": 1} and first.scores == {"web": 2.5}
    assert hits[1].score == pytest.approx(0.5)  # no engine score: 1 / rank


def test_k_limits_the_hits(searx):
    url, handler = searx
    handler.results = RESULTS
    assert len(web_search(url, "x", k=1)) == 1


@pytest.mark.parametrize(("path", "message"), [("/broken", "did not answer JSON"), ("/error", "HTTP 500")])
def test_bad_endpoints_give_clear_errors(searx, path, message):
    url, _ = searx
    with pytest.raises(RagError, match=message):
        web_search(url + path, "x")


def test_unreachable_and_unconfigured():
    with pytest.raises(RagError, match="unreachable"):
        web_search("http://127.0.0.1:9/search", "x", timeout_s=2)
    with pytest.raises(RagError, match="not configured"):
        web_search("", "x")


def test_a_bad_score_drops_only_its_result_and_long_fields_are_cut(searx):
    # Issue 39 item 2: one non-numeric score used to drop the whole web pass; a huge title was tokenised whole.
    url, handler = searx
    handler.results = [
        {"url": "https://example.org/bad", "title": "bad score", "content": "x", "score": "not a number"},
        {"url": "https://example.org/big", "title": "T" * 200_000, "content": "big"},
        {"url": "https://example.org/ok", "title": "fine", "content": "kept", "score": 1.5},
    ]
    hits = web_search(url, "x", k=5)
    assert [h.chunk.metadata["url"] for h in hits] == ["https://example.org/big", "https://example.org/ok"]
    assert len(hits[0].chunk.text) < 5_000
