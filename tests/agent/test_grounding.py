"""The grounding check: every sentence supported by ONE passage it cites, its specifics verbatim in that passage.

The invented answers are modelled on what SmolLM2-135M wrote through llama-server (issue 29): a made-up method,
a runaway identifier, a wrong number, a citation to a passage that does not say it, an empty and a cut-off answer.
"""

from __future__ import annotations

import pytest

from rag_core.agent import ask
from rag_core.agent.grounding import check_grounding, citation_sources, specifics
from rag_core.config import RAGConfig
from rag_core.llm import LLMClient
from rag_core.types import Chunk, Hit
from tests.fakes import openai_server as fake

KEYS = ("Rotate an API key with `wren keys rotate --name KEY`; the old key stays valid for 24 hours. "
        "Call `client.refresh_token()` after rotating.")
PLANS = "The Pro plan allows 50 projects and 200 GB of storage. Extra runs cost 3 USD per 100,000."


def _hits():
    chunks = [Chunk(id=i, doc_id=i, granularity="paragraph", chunk_type="prose", text=t, start=0, end=len(t),
                    tokens=40) for i, t in (("keys", KEYS), ("plans", PLANS))]
    return [Hit(chunk=c, score=1.0, confidence=1.0, source_name=f"{c.id}.md") for c in chunks]


def test_a_sentence_its_passage_says_is_supported_and_grounded():
    check = check_grounding("Rotate the key with `wren keys rotate --name KEY` [keys]. The old key stays valid for "
                            "24 hours [keys].", _hits())
    assert check.grounded and [s.supported for s in check.sentences] == [True, True]
    assert check.unsupported == [] and check.attributed == []


@pytest.mark.parametrize("answer, reason", [
    # a made-up method name, cited to the passage about the real one
    ("Call `client.remove_attributes()` after rotating the key [keys].", "'client.remove_attributes()'"),
    # a runaway string of the model's own
    ("Rotate the key api_key_valid_key_value_key_value_key_value after rotating [keys].",
     "'api_key_valid_key_value_key_value_key_value'"),
    # a wrong number: the passage says 24 hours
    ("The old key stays valid for 48 hours after you rotate it [keys].", "number '48'"),
    # an option the passage never names
    ("Rotate an API key with wren keys rotate --force [keys].", "option '--force'"),
    # a quoted string not in the passage
    ('The old key is marked "revoked" after rotating an API key [keys].', "'revoked'"),
])
def test_invented_specifics_are_unsupported(answer, reason):
    check = check_grounding(answer, _hits())
    assert not check.grounded and len(check.unsupported) == 1
    assert reason in check.unsupported[0]["reason"] and "does not contain" in check.unsupported[0]["reason"]


def test_support_comes_from_one_passage_not_the_union():
    # Each half is in a different passage; cited together, no single passage says the sentence.
    answer = "The Pro plan allows rotating an API key with stays valid projects storage [keys, plans]."
    check = check_grounding(answer, _hits())
    assert not check.grounded and check.unsupported[0]["reason"].startswith("none of the passages it cites says")


def test_a_citation_to_a_passage_that_does_not_say_it_is_unsupported():
    check = check_grounding("The Pro plan allows 50 projects and 200 GB of storage [keys].", _hits())
    assert not check.grounded and check.unsupported[0]["reason"].startswith("the passage it cites does not say")


def test_uncited_sentences_are_attributed_by_overlap_and_labelled():
    check = check_grounding("The Pro plan allows 50 projects and 200 GB of storage.", _hits())
    assert check.grounded and check.attributed == ["plans"] and "attributed by word overlap" in check.reason
    assert citation_sources(["plans"], [], check.attributed, extractive=False) == [
        {"chunk_id": "plans", "source": "overlap", "attributed": True}]
    # nothing holds an uncited invented sentence
    check = check_grounding("Bananas ripen quickly in warm kitchens.", _hits())
    assert not check.grounded and check.unsupported[0]["reason"].startswith("cites no passage")


def test_empty_cut_off_and_repeated_citation_answers_are_not_grounded():
    assert not check_grounding("   ", _hits()).grounded
    cut = check_grounding("Rotate the key [keys].\n\n[answer cut off at 16 tokens: raise RAG_LLM_MAX_TOKENS_ANSWER]",
                          _hits())
    assert not cut.grounded and cut.unsupported[0]["reason"] == "the answer was cut off before it ended"
    assert not check_grounding("Rotate the key with wren [keys].", _hits(), cut_off=True).grounded
    repeated = " ".join(f"[{n}:n]" for n in range(1, 19))
    assert not check_grounding(repeated, _hits()).grounded
    url = " ".join("See https://github.com/fastapi/fastapi/pull/1234 [keys]." for _ in range(18))
    assert not check_grounding(url, _hits()).grounded


def test_a_lead_in_alone_states_nothing_and_is_not_grounded():
    check = check_grounding("The documents do not say.", _hits())
    assert not check.grounded and check.unsupported == [] and "states nothing" in check.reason


def test_code_block_lines_must_be_in_a_passage():
    ok = "Run:\n\n```bash\nwren keys rotate --name KEY\n```\n"
    assert check_grounding(ok, _hits()).grounded
    assert check_grounding("```bash wren keys rotate --name KEY``` [keys]", _hits()).grounded  # fenced on one line
    invented = check_grounding("```bash wren keys rotate --name KEY``` [keys]. Then call `keys.purge()` [keys].",
                               _hits())
    assert not invented.grounded and "keys.purge()" in invented.unsupported[0]["sentence"]
    bad = "Run:\n\n```bash\nwren keys rotate --name KEY --all\n```\n"
    check = check_grounding(bad, _hits())
    assert not check.grounded and "code line" in check.unsupported[0]["reason"]
    # cited to a passage that does not hold it
    assert not check_grounding("```bash\nwren keys rotate --name KEY\n```\n[plans]", _hits()).grounded


def test_extractive_quotes_must_come_from_covered_evidence():
    quote = "- The Pro plan allows 50 projects and 200 GB of storage. [plans]"
    assert check_grounding(quote, _hits(), extractive=True, covered={"plans"}).grounded
    check = check_grounding(quote, _hits(), extractive=True, covered={"keys"})
    assert not check.grounded and "not covered evidence" in check.unsupported[0]["reason"]


def test_specifics_found_in_a_sentence():
    assert specifics('Use `x.y` with --reload on https://a.b/c, set max_age=5 and "strict" in FastAPI v2.') == [
        ("code", "x.y"), ("URL", "https://a.b/c"), ("quoted string", "strict"), ("option", "--reload"),
        ("identifier", "max_age"), ("name", "FastAPI"), ("number", "5")]


def test_invented_llm_answer_is_ungrounded_with_its_sentences_listed(make_llm_settings, fake_index, fake_retriever):
    invented = "Rotate it with `wren keys remove_attributes` [1]. The old key stays valid for 429 hours [1]."
    with fake.LlamaCppServer([fake.answer(invented)]) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask("How do I rotate an API key?", fake_index, RAGConfig(), policy="llm-answer", llm=client,
                     retriever=fake_retriever)
    assert not result.extractive and not result.grounded and result.citations == ["auth-p1"]
    data = result.to_dict()
    assert [u["sentence"] for u in data["unsupported"]] == ["Rotate it with `wren keys remove_attributes` .",
                                                            "The old key stays valid for 429 hours ."]
    assert data["citation_sources"] == [{"chunk_id": "auth-p1", "source": "model", "attributed": False}]


def test_uncited_llm_answer_citations_are_labelled_attributed(make_llm_settings, fake_index, fake_retriever):
    with fake.LlamaCppServer([fake.answer("Rotate an API key with `wren keys rotate --name KEY`.")]) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask("How do I rotate an API key?", fake_index, RAGConfig(), policy="llm-answer", llm=client,
                     retriever=fake_retriever)
    assert result.grounded and result.citations == ["auth-p1"]
    assert result.citation_sources == [{"chunk_id": "auth-p1", "source": "overlap", "attributed": True}]


@pytest.mark.parametrize("unit", ["a.", "[", "[keys]", "`", '"', "--a", "1.", "_a", "```\n", "a.b(", "http://a/",
                                  "abcdefghijklmnopqrstuvwxyz0123" * 4 + "Q"])
def test_checking_and_the_repetition_check_take_linear_time(unit):
    # A model's reply is untrusted: 40,000 characters of any shape are read in well under a second.
    import time

    from rag_core.agent.policies.answer_only import repetitive

    text = unit * (40_000 // len(unit))
    started = time.perf_counter()
    check_grounding(text, _hits())
    repetitive(text, stopped=False)
    assert time.perf_counter() - started < 1.0


def test_an_extractive_answer_quotes_each_part_from_its_own_evidence_only():
    """A quote from a chunk that is no part's evidence would make the answer ungrounded: a part under the
    threshold quotes nothing (the token-lifetime paragraph shares its words, yet scores 0.33 < 0.45) and says so."""
    from rag_core.agent import ask
    from rag_core.config import RAGConfig, RetrievalConfig
    from tests.fakes.index import agent_index
    from tests.fakes.retriever import FakeRetriever

    index = agent_index()
    question = "How long do tokens last, and how do I rotate an API key?"
    result = ask(question, index, RAGConfig(), policy="offline", retriever=FakeRetriever(index, RetrievalConfig()))
    assert [p["covered"] for p in result.parts] == [False, True]
    assert result.citations == ["auth-p1"] and "Tokens expire after 30 minutes" not in result.answer
    assert "No passage found covers: How long do tokens last (best evidence 0.33" in result.answer
    assert result.grounded and result.steps[-1].args["citations"] == ["auth-p1"]
