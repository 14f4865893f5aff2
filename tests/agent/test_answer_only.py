"""The llm-answer policy: the offline planner retrieves, the model writes only the cited final answer."""

from __future__ import annotations

import socket

from rag_core.agent import ask
from rag_core.agent.policies.answer_only import cite
from rag_core.config import RAGConfig
from rag_core.llm import LLMClient
from rag_core.types import Hit
from tests.fakes import openai_server as fake

QUESTION = "How do I rotate an API key?"


def _hits(fake_index, *ids):
    return [Hit(chunk=fake_index.get(i), score=1.0, confidence=1.0, source_name="doc.md") for i in ids]


def test_cite_rewrites_numbers_to_chunk_ids_and_reports_unknown_ones(fake_index):
    hits = _hits(fake_index, "auth-p1", "plans-p0", "plans-p1")
    text, citations, notes = cite("Rotate it [1]. Basic has 5 projects [2, 3]. Also [plans-p1]. Odd [9].", hits)
    assert text == ("Rotate it [auth-p1]. Basic has 5 projects [plans-p0][plans-p1]. Also [plans-p1]. Odd [9].")
    assert citations == ["auth-p1", "plans-p0", "plans-p1"]
    assert notes == ["the model cited [9], which is not one of the 3 documents it was given"]
    # Markdown images and links, and bracketed words, are not citations
    text, citations, notes = cite("See ![logo](x.png) and [the guide](y) [note] [2].", hits)
    assert (text, citations, notes) == ("See ![logo](x.png) and [the guide](y) [note] [plans-p0].", ["plans-p0"], [])


def test_cite_attributes_by_overlap_when_the_model_cites_nothing(fake_index):
    hits = _hits(fake_index, "auth-p0", "auth-p1")
    text, citations, notes = cite("Rotate the API key with wren keys rotate. The sky is blue today.", hits)
    assert citations == ["auth-p1"] and text.startswith("Rotate the API key")
    assert "citations attributed by word overlap" in notes[0]
    assert cite("Nothing here matches at all.", hits)[1] == []


def test_llm_answer_writes_from_the_offline_context(scripted_server, make_llm_settings, fake_index, fake_retriever):
    with scripted_server([fake.answer("Run `wren keys rotate --name KEY` [1].")]) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask(QUESTION, fake_index, RAGConfig(), policy="llm-answer", llm=client, retriever=fake_retriever)
    assert [s.tool for s in result.steps] == ["search", "done"] and result.steps[0].policy == "llm-answer"
    assert result.answer == "Run `wren keys rotate --name KEY` [auth-p1]."
    assert result.citations == ["auth-p1"] and result.grounded and not result.extractive
    assert "the model wrote the answer from 1 retrieved chunk(s)" in result.stop_reason
    sent = server.requests[0]["json"]
    assert len(server.requests) == 1 and "tools" not in sent and sent["max_tokens"] == 768
    assert "SECURITY" in sent["messages"][0]["content"]
    body = sent["messages"][-1]["content"]
    assert '<untrusted_document n="1" id="auth-p1"' in body
    assert body.rstrip().endswith("Answer with citations like [1]:")


def test_server_without_tools_switches_to_llm_answer_and_remembers(scripted_server, make_llm_settings, fake_index,
                                                                   fake_retriever):
    refusal = fake.error(400, "registry.ollama.ai/library/gemma:2b does not support tools")
    script = [refusal, fake.answer("Use wren keys rotate [1]."), fake.answer("They last 30 minutes [1].")]
    with scripted_server(script) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        first = ask(QUESTION, fake_index, RAGConfig(), policy="llm", llm=client, retriever=fake_retriever)
        second = ask("When do tokens expire?", fake_index, RAGConfig(), policy="llm", llm=client,
                     retriever=fake_retriever)
    assert first.policy == "llm-answer" and first.citations == ["auth-p1"] and first.fallback is None
    assert any("does not support tools" in w for w in first.warnings)
    assert second.policy == "llm-answer" and second.citations == ["auth-p0"]
    assert ["tools" in r["json"] for r in server.requests] == [True, False, False]  # asked with tools only once


def test_llm_answer_falls_back_to_the_extractive_answer(make_llm_settings, fake_index, fake_retriever):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = LLMClient(make_llm_settings(f"http://127.0.0.1:{port}/v1", llm_max_retries=0))
    result = ask(QUESTION, fake_index, RAGConfig(), policy="llm-answer", llm=client, retriever=fake_retriever)
    assert result.extractive and result.fallback.startswith("LLM failed (the LLM endpoint")
    assert result.citations == ["auth-p1"] and result.grounded and "wren keys rotate" in result.answer


def test_answer_is_streamed_while_it_is_written(scripted_server, make_llm_settings, fake_index, fake_retriever):
    from rag_core.agent import AgentResult, AgentStep, run_agent

    events: list[object] = []
    with scripted_server([fake.answer("Run `wren keys rotate` [1].")]) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        for event in run_agent(QUESTION, fake_index, RAGConfig(), policy="llm-answer", llm=client,
                               retriever=fake_retriever, on_answer_text=events.append):
            events.append(event)
    texts = [e for e in events if isinstance(e, str)]
    assert texts == ["Run ", "`wren ", "keys ", "rotate` ", "[1]."]
    # the search step came before any text, the result after all of it
    assert isinstance(events[0], AgentStep) and isinstance(events[-1], AgentResult)
    assert events[-1].answer == "Run `wren keys rotate` [auth-p1]." and events[-1].grounded


def test_repetition_without_spaces_or_with_varying_numbers_is_caught():
    from rag_core.agent.policies.answer_only import repetitive

    assert repetitive("The key is api_key_valid_key_value" + "_key_value" * 40)  # one word: distinct-word rule blind
    assert repetitive(" ".join(f"[{n}:n]" for n in range(1, 80)), stopped=False)  # every word different
    assert repetitive(" ".join(f"Step {i}: run wren keys rotate [1]." for i in range(30)), stopped=False)
    answer = ("Rotate an API key with `wren keys rotate --name KEY` [1]. The old key stays valid for 24 hours [1]. "
              "| a | b |\n|---|---|\n| 1 | 2 |")
    assert not repetitive(answer) and not repetitive(answer, stopped=False)
