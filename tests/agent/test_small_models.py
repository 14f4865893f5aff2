"""Small local models at defaults: a request timeout that grows with the prompt, and the llm-answer policy giving
the model no more documents than a share of the context its server reports (llama.cpp ``/props``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag_core.agent import ask
from rag_core.agent.agent_types import Action
from rag_core.agent.context import AgentContext
from rag_core.agent.policies.answer_only import CONTEXT_SHARE, AnswerOnlyPolicy, documents_budget, fit_documents
from rag_core.config import RAGConfig
from rag_core.errors import LLMError
from rag_core.llm import LLMClient, server_context_tokens
from rag_core.types import Chunk, Hit
from tests.fakes import openai_server as fake

LONG = [{"role": "user", "content": "Read this: " + "the quick brown fox jumps over the lazy dog " * 110}]


def test_request_timeout_grows_with_the_prompt(scripted_server, make_llm_settings):
    slow = {**fake.answer("ok"), "delay": 1.2}
    with scripted_server([slow, slow]) as server:
        settings = make_llm_settings(server.base_url, llm_timeout_s=0.5, llm_timeout_per_1k_prompt_s=2.0,
                                     llm_max_retries=0)
        client = LLMClient(settings, sleep=lambda s: None)
        assert client.request_timeout_s(1000) == pytest.approx(2.5)
        assert client.chat(LONG).content == "ok"  # about 1,000 prompt tokens: 0.5 + 2.0 s, time enough
        with pytest.raises(LLMError, match=r"did not answer within 0.5 s .*RAG_LLM_TIMEOUT_PER_1K_PROMPT_S"):
            client.chat([{"role": "user", "content": "hi"}])  # a short prompt keeps the short timeout


def test_context_size_is_read_from_the_server_or_the_settings(make_llm_settings, scripted_server):
    with fake.LlamaCppServer([], n_ctx=2048) as server:
        assert server_context_tokens(server.base_url) == 2048
        client = LLMClient(make_llm_settings(server.base_url))
        assert client.context_tokens() == 2048 and client.context_tokens() == 2048
        assert server.gets == ["/props", "/props"]  # the client asked once
        configured = LLMClient(make_llm_settings(server.base_url, llm_context_tokens=4096))
        assert configured.context_tokens() == 4096 and len(server.gets) == 2
    with scripted_server([]) as server:  # no metadata endpoints: unknown
        assert LLMClient(make_llm_settings(server.base_url)).context_tokens() is None


class _Client:
    def __init__(self, n_ctx):
        self.n_ctx = n_ctx

    def context_tokens(self):
        return self.n_ctx


def test_documents_budget_is_a_share_of_a_small_context():
    assert documents_budget(_Client(8192), 3000) == (int(8192 * CONTEXT_SHARE), 8192)
    assert documents_budget(_Client(65536), 3000) == (3000, 65536)  # a large context: the configured budget
    assert documents_budget(_Client(None), 3000) == (3000, None)
    chunks = [Chunk(id=f"c{i}", doc_id="d", granularity="paragraph", chunk_type="prose", text="x", start=0, end=1,
                    tokens=t) for i, t in enumerate([150, 120, 40, 90])]
    hits = [Hit(chunk=c, score=1.0, confidence=1.0) for c in chunks]
    assert [h.chunk.id for h in fit_documents(hits, 200)] == ["c0", "c2"]


def test_llm_answer_fits_the_runs_context_budget_not_the_configurations():
    chunks = [Chunk(id=f"c{i}", doc_id="d", granularity="paragraph", chunk_type="prose", text="x", start=0, end=1,
                    tokens=t) for i, t in enumerate([150, 120, 40, 90])]
    context = AgentContext(200)
    context.hits = [Hit(chunk=c, score=1.0, confidence=1.0) for c in chunks]
    policy = AnswerOnlyPolicy(_Client(None))
    given = []
    policy._answer = lambda run, planned, hits: given.extend(h.chunk.id for h in hits) or Action("done", {}, "ok")
    policy._write(SimpleNamespace(context=context, config=RAGConfig()), Action("done", {}, "planned"))
    assert RAGConfig().agent.context_budget == 3000 and given == ["c0", "c2"]


def test_llm_answer_sends_only_what_fits_the_servers_context(make_llm_settings, fake_index, fake_retriever):
    question = "What do the Basic and Pro plans allow, and how do I rotate an API key?"
    with fake.LlamaCppServer([fake.answer("The Pro plan allows 50 projects [1].")]) as server:
        client = LLMClient(make_llm_settings(server.base_url, llm_context_tokens=300), sleep=lambda s: None)
        result = ask(question, fake_index, RAGConfig(), policy="llm-answer", llm=client, retriever=fake_retriever)
    sent = server.requests[0]["json"]["messages"][-1]["content"]
    assert len(result.context_hits) > sent.count("<untrusted_document ")  # fewer documents than retrieved
    assert any(w.startswith("the model's context is 300 tokens: it was given the") for w in result.warnings)
