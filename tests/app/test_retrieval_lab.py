"""AppTest of the Retrieval Lab: a real search on a small hash-embedder index, knobs, prefill, why-not."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from tests.app.apptest_helpers import page_app

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "retrieval_lab.py")
HASH_CONFIG = RAGConfig(name="lab-test", embedding=EmbeddingConfig(embedder="hash"))

GUIDE = """# Wrenfall guide

## Keys

To rotate the API key, open Settings, choose Keys and press Rotate. The old key stops working after one hour.

## Timeouts

The request timeout defaults to 30 seconds.

## Hostile

<script>window.__pwned = 1</script> is shown as text, never run.
"""


@pytest.fixture
def indexed(data_dir):
    open_index(HASH_CONFIG).ingest([load_bytes("guide.md", GUIDE.encode())])


def _app(**session) -> AppTest:
    return page_app(PAGE, HASH_CONFIG, **session)


def _search(at: AppTest, query: str) -> AppTest:
    at.text_input(key="lab_query").input(query)
    next(b for b in at.button if b.label == "Search").click()
    return at.run()


def _hybrid_search(query: str, **session) -> AppTest:
    """The Lab with the hybrid strategy picked and ``query`` searched."""
    at = _app(**session)
    at.run()
    next(s for s in at.selectbox if s.label == "Strategy").select("hybrid").run()
    return _search(at, query)


def test_empty_index_says_what_to_do(data_dir):
    at = _app()
    at.run()
    assert not at.exception
    assert "index is empty" in at.info[0].value
    assert any(c.value.startswith("Web route: not configured") for c in at.caption)


def test_real_search_shows_hits_iterations_chart_and_context(indexed):
    at = _app(engineer_details=True)
    at.run()
    _search(at, "how do I rotate the API key")
    assert not at.exception
    hits = at.dataframe[0].value
    assert hits["text"].iloc[0].startswith("## Keys To rotate the API key")
    assert list(hits.columns[:5]) == ["#", "relevance", "source", "heading", "text"]  # text on screen, not far right
    assert {"vector rank", "keyword rank", "fused rank", "vector raw", "keyword raw", "fused raw"} <= set(hits.columns)
    assert hits["relevance"].between(0, 1).all()
    cards = "".join(h.proto.body for h in at.get("html"))
    assert "To <mark>rotate</mark> the <mark>API</mark> <mark>key</mark>" in cards
    assert any(c.value.startswith("Relevance is the calibrated confidence") for c in at.caption)
    assert "raw: " in cards
    iterations = at.dataframe[1].value
    assert list(iterations["iteration"]) == list(range(1, len(iterations) + 1))
    assert iterations["decision"].iloc[-1] == "stop"
    assert len(at.get("plotly_chart")) == 1
    assert at.code[0].value.startswith("--- Document 1 ---\n[Source: guide.md › Wrenfall guide › Keys]")
    assert "tokens" in at.get("progress")[0].proto.text


def test_knobs_write_into_the_active_config(indexed):
    at = _app(engineer_details=True)
    at.run()
    next(s for s in at.selectbox if s.label == "Strategy").select("keyword").run()
    next(n for n in at.number_input if n.label == "Initial k").set_value(5).run()
    assert not at.exception
    retrieval = at.session_state["active_config"].retrieval
    assert (retrieval.strategy, retrieval.initial_k) == ("keyword", 5)
    _search(at, "rotate key")
    assert at.metric[0].value == "keyword"
    assert at.dataframe[1].value["k"].iloc[0] == 5


def test_knobs_change_the_active_configuration_never_the_saved_one_of_its_name(indexed, data_dir):
    """Issue 35.4: saved configurations are snapshots; a Lab knob changes only the active configuration."""
    from rag_core.config import get_settings
    from rag_core.serving.activestate import ActiveStore
    from rag_core.serving.configstore import ConfigStore

    path = ConfigStore(data_dir).save(HASH_CONFIG)
    before = path.read_bytes()
    at = _app()
    at.run()
    next(s for s in at.selectbox if s.label == "Strategy").select("keyword").run()
    assert not at.exception
    assert ActiveStore.for_settings(get_settings()).config().retrieval.strategy == "keyword"
    assert path.read_bytes() == before and ConfigStore(data_dir).list() == ["lab-test"]


def test_prefill_runs_the_query_and_why_not_explains_a_missing_chunk(indexed):
    at = _app(prefill={"page": "lab", "query": "request timeout default"})
    at.run()
    assert not at.exception
    assert at.text_input(key="lab_query").value == "request timeout default"
    assert "Timeouts" in at.dataframe[0].value["heading"].iloc[0]
    at.text_input(key="lab_why_text").input("window.__pwned").run()
    assert not at.exception
    # The hostile paragraph is unrelated to the query: ranked below the last pass's k, and shown as text.
    verdict = (list(at.warning) + list(at.success))[0].value
    assert verdict.startswith(("removed by rank: rank ", "removed by same place", "retrieved")), verdict
    steps = at.dataframe[-1].value
    assert steps["step"].iloc[0] == "exclude"
    assert len(at.dataframe[-2].value) == 3  # vector, keyword, fused ranks


def test_every_knob_change_sticks_and_reruns_the_search(indexed):
    at = _app()
    at.run()
    _search(at, "rotate key")
    assert at.metric[0].value != "keyword"
    for strategy in ("vector", "keyword", "hybrid", "keyword"):
        next(s for s in at.selectbox if s.label == "Strategy").select(strategy).run()
        assert next(s for s in at.selectbox if s.label == "Strategy").value == strategy
        assert at.session_state["active_config"].retrieval.strategy == strategy
    for granularity in ("section", "document", "any"):
        next(s for s in at.selectbox if s.label == "Granularity").select(granularity).run()
    assert at.session_state["active_config"].retrieval.granularity == "any"
    assert not at.exception
    # The shown result follows the settings (no stale hits from the previous strategy).
    assert at.metric[0].value == "keyword"


def test_query_comes_back_with_its_hits_after_visiting_another_page(indexed):
    at = _app()
    at.run()
    _search(at, "rotate key")
    # Another page ran: Streamlit dropped the query widget's state; the page's own keys stay.
    kept = {key: at.session_state[key] for key in ("lab_result", "lab_last_query")}
    at = _app(**kept)
    at.run()
    assert not at.exception
    assert at.text_input(key="lab_query").value == "rotate key"
    assert "Keys" in " ".join(at.dataframe[0].value["heading"])  # the hits came back with it


def test_search_runs_under_a_spinner(indexed, spinners, monkeypatch):
    from rag_core.retrieval.retriever import Retriever

    seen, retrieve = [], Retriever.retrieve
    monkeypatch.setattr(Retriever, "retrieve", lambda self, q: seen.append(list(spinners)) or retrieve(self, q))
    at = _app()
    at.run()
    _search(at, "rotate key")
    assert not at.exception and seen == [["Searching…"]]


def test_empty_index_with_stored_documents_says_index_them(data_dir):
    from rag_core.loaders.document_store import DocumentStore

    DocumentStore(data_dir).add(load_bytes("guide.md", GUIDE.encode()))  # e.g. samples loaded from the Explorer
    at = _app()
    at.run()
    assert not at.exception
    assert at.info[0].value == ("The active index is empty, but 1 document(s) are stored: index them with "
                                "**Index all** on the Documents page.")


def test_hit_text_is_escaped_and_highlighted_by_stem():
    from ui.retrieval.hits import highlight_html

    shown = highlight_html("<script>alert(1)</script> Rotating keys: rotate_key() & more", "how to rotate a key")
    assert shown.startswith("&lt;script&gt;alert(1)&lt;/script&gt; <mark>Rotating</mark> <mark>keys</mark>:")
    assert "<script" not in shown and "&amp; more" in shown
    assert highlight_html("x" * 800, "x").endswith(" …") and len(highlight_html("x" * 800, "q")) < 710
    assert highlight_html("<b>bold</b>", "") == "&lt;b&gt;bold&lt;/b&gt;"


def test_min_relevance_acts_on_the_relevance_column(indexed):
    at = _hybrid_search("how do I rotate the API key", engineer_details=True)
    everything = at.dataframe[0].value
    cut = float(everything["relevance"].median())
    next(s for s in at.slider if s.label == "Min relevance (drop hits below)").set_value(round(cut + 0.025, 2)).run()
    kept = at.dataframe[0].value
    assert (kept["relevance"] >= round(cut + 0.025, 2)).all()
    assert len(kept) < len(everything) or at.dataframe[1].value["below min relevance"].sum() > 0
    caption = next(c.value for c in at.caption if c.value.startswith("Relevance is"))
    assert "dropped" in caption and "dropped 0 hit" not in caption


def test_why_not_ranks_match_the_hits_table(indexed):
    at = _hybrid_search("how do I rotate the API key", engineer_details=True)
    hits = at.dataframe[0].value
    last = hits.iloc[-1]
    from rag_core.config import get_settings
    from rag_core.retrieval.diagnose import find_chunks

    needle = last["heading"].split(" › ")[-1]
    at.text_input(key="lab_why_text").input(needle).run()
    candidates = find_chunks(open_index(HASH_CONFIG, get_settings()), needle)
    at.selectbox(key="lab_why_chunk").select_index([c.id for c in candidates].index(last["chunk id"])).run()
    ranks = at.dataframe[-2].value.set_index("retriever")["rank (last pass's filters)"]
    for name in ("vector", "keyword"):
        if last[f"{name} rank"] == last[f"{name} rank"]:  # not NaN: the table lists a rank for it
            assert ranks[name] == last[f"{name} rank"], name


def test_section_weight_knob_turns_section_ranking_off_and_on(indexed):
    at = _app()
    at.run()
    _search(at, "request timeout default")
    ranked = at.session_state["active_config"].retrieval
    assert ranked.strategy == "hybrid" and ranked.section_weight == 1.0
    next(s for s in at.slider if s.label.startswith("Section weight")).set_value(0.0).run()
    assert not at.exception
    assert at.session_state["active_config"].retrieval.section_weight == 0.0



@pytest.fixture
def many_parts(data_dir):
    """One document of 30 similar sections: most of its paragraphs rank below the last pass's k."""
    text = "# Limits\n\n" + "\n\n".join(f"## Part {i}\n\nThe timeout setting number {i} changes how the retry "
                                         f"limit {i} behaves under load." for i in range(30))
    open_index(HASH_CONFIG).ingest([load_bytes("limits.md", text.encode())])


@pytest.mark.parametrize("strategy", ["hybrid", "keyword"])
def test_why_not_verdict_and_ranks_table_say_one_rank(many_parts, strategy):
    """Issue 35.5: the verdict said "rank 7 under hybrid; kept top 3" while the table beside it said fused rank 1."""
    import re

    at = _app()
    at.run()
    next(s for s in at.selectbox if s.label == "Strategy").select(strategy).run()
    _search(at, "timeout setting retry limit")
    at.text_input(key="lab_why_text").input("setting number").run()
    row = "fused" if strategy == "hybrid" else f"{strategy} (this search)"  # the search's own rank
    compared = 0
    for index in range(len(at.selectbox(key="lab_why_chunk").options)):
        at.selectbox(key="lab_why_chunk").select_index(index).run()
        assert not at.exception
        verdict = (list(at.warning) + list(at.success))[0].value
        said = re.match(rf"removed by rank: rank (\d+) under {strategy}", verdict)
        if said:
            compared += 1
            table = at.dataframe[-2].value.set_index("retriever")["rank (last pass's filters)"]
            assert table[row] == int(said.group(1)), (index, said.group(0), table.to_dict())
    assert compared >= 3


def test_hits_read_raw_html_as_its_text_and_images_as_their_alt_text(data_dir):
    # Issue 35 item 10: `<p style…><img…>` markup was shown in search hits as raw markup noise.
    readme = ('# FastAPI\n\n<p align="center" style="margin:0"><img src="https://img.test/logo.png" '
              'alt="FastAPI framework logo" width="200"></p>\n\nFastAPI framework, high performance, easy to learn.\n')
    open_index(HASH_CONFIG).ingest([load_bytes("readme.md", readme.encode())])
    at = _app()
    at.run()
    _search(at, "FastAPI framework high performance")
    assert not at.exception
    cards = "".join(h.proto.body for h in at.get("html"))
    assert "[image: <mark>FastAPI</mark> <mark>framework</mark> logo]" in cards
    assert "&lt;p" not in cards and "&lt;img" not in cards and "img.test" not in cards and "<img" not in cards
    texts = " ".join(at.dataframe[0].value["text"])
    assert "[image: FastAPI framework logo]" in texts and "<p" not in texts and "<img" not in texts


def test_every_knob_is_bounded_by_its_config_field(indexed):
    """The Lab's number inputs and sliders take their bounds from RetrievalConfig's fields (issue 38.4), so a value
    the engine accepts is never out of a widget's reach and a widget never offers one the engine refuses."""
    from rag_core.config import RetrievalConfig, field_bounds
    from ui.retrieval.retrieval_view import KNOB

    at = _app()
    at.run()
    widgets = {w.key: w for w in [*at.number_input, *at.slider] if w.key and w.key.startswith(KNOB)}
    bounded = [name for name in RetrievalConfig.model_fields if field_bounds(f"retrieval.{name}") != (None, None)]
    assert sorted(k.removeprefix(KNOB) for k in widgets) == sorted(bounded)
    for name in bounded:
        widget = widgets[KNOB + name]
        assert (widget.min, widget.max) == field_bounds(f"retrieval.{name}"), name
