"""The llm and llm-answer policies against recorded llama.cpp ``llama-server`` behaviours (``LlamaCppServer``).

Each test replays one behaviour seen with a small local model (SmolLM2-135M through ``llama-server --jinja``):
ignored tools, prose before a tool call, runaway generation, a 500 for malformed arguments in the history, a
context overflow, an unknown model name answered under the server's alias, a connection held open by a stopping
server. Every run must end within its time budget, name what went wrong, and never present an answer without
retrieved evidence as grounded.
"""

from __future__ import annotations

import json
import time

from rag_core.agent import ask
from rag_core.config import RAGConfig
from rag_core.llm import LLMClient
from tests.fakes import openai_server as fake

QUESTION = "How do I rotate an API key?"
DONE = {"answer": "Run `wren keys rotate --name KEY`.", "citations": ["auth-p1"]}


def _ask(server, make_llm_settings, fake_index, fake_retriever, policy="llm", config=None, **overrides):
    settings = make_llm_settings(server.base_url, **overrides)
    client = LLMClient(settings, sleep=lambda s: None)
    started = time.monotonic()
    result = ask(QUESTION, fake_index, config or RAGConfig(), settings, policy=policy, llm=client,
                 retriever=fake_retriever)
    return result, time.monotonic() - started


def _distinct_words(count):
    """``count`` different made-up words (no repetition for the repetition check to catch)."""
    return " ".join("".join(chr(97 + i // 26**k % 26) for k in range(3)) + "o" for i in range(count))


def _sent(server, number):
    return server.requests[number]["json"]


def test_ignored_tools_search_first_then_answer_only(make_llm_settings, fake_index, fake_retriever):
    script = [fake.answer("Keys never expire."), fake.answer("Keys never expire, really."),
              fake.answer("Run `wren keys rotate --name KEY` [1]; the old key stays valid for 24 hours [1].")]
    with fake.LlamaCppServer(script) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever)
    # The first plain answer came without any search: the policy searched the question itself before going on.
    assert [(s.policy, s.tool) for s in result.steps] == [("llm", "search"), ("llm-answer", "done")]
    assert "answered without searching" in result.steps[0].reason
    assert fake_retriever.calls[0]["query"] == QUESTION
    # Ignored twice: the answer-only policy wrote the answer from the retrieved context, citing it.
    assert result.policy == "llm-answer" and any("ignored its tools twice" in w for w in result.warnings)
    assert result.answer.startswith("Run `wren keys rotate --name KEY` [auth-p1]")
    assert result.citations == ["auth-p1"] and result.grounded and not result.extractive
    final = _sent(server, 2)["messages"]
    assert "tools" not in _sent(server, 2)
    assert '<untrusted_document n="1" id="auth-p1"' in final[-1]["content"]
    assert "Keys never expire" not in json.dumps(final)  # the unfounded replies are not shown to the writer


def test_prose_before_a_tool_call_is_executed(make_llm_settings, fake_index, fake_retriever):
    search = {"query": "rotate API key", "granularity": "paragraph"}
    script = [fake.prose_then_call("Let me look that up.", "search", search), fake.tool_call("done", DONE)]
    with fake.LlamaCppServer(script) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever)
    assert [s.tool for s in result.steps] == ["search", "done"]
    assert result.steps[0].reason == "Let me look that up." and result.steps[0].args["query"] == "rotate API key"
    assert "recovered a tool call written in the text" in result.steps[0].repairs[0]
    assert result.answer == DONE["answer"] and result.grounded
    # The history shows the call as a proper tool call, so the server's template renders it.
    assistant = _sent(server, 1)["messages"][-2]
    assert assistant["tool_calls"][0]["function"]["name"] == "search"
    assert "<tool_call>" not in assistant["content"]


def test_runaway_generation_is_bounded_and_said_to_be_cut_off(make_llm_settings, fake_index, fake_retriever):
    # Unbounded, this model would write (8192 - prompt) tokens at 500/s: longer than the 2 s timeout, every time.
    script = [fake.runaway(), fake.tool_call("done", DONE)]
    with fake.LlamaCppServer(script, tokens_per_s=500) as server:
        result, elapsed = _ask(server, make_llm_settings, fake_index, fake_retriever, llm_timeout_s=2.0,
                               llm_max_tokens_step=64)
    assert elapsed < 2.0 and result.fallback is None
    assert _sent(server, 0)["max_tokens"] == 64
    assert "cut off at 64 tokens" in result.steps[0].reason and result.steps[0].tool == "search"
    assert "blah blah" not in json.dumps(_sent(server, 1)["messages"])  # the rambling left the history
    assert result.answer == DONE["answer"] and result.grounded


def test_runaway_final_answer_cut_off_is_not_used(make_llm_settings, fake_index, fake_retriever):
    # A cut-off answer is never shown as the answer (nor as grounded): the extractive answer stands, the fallback
    # and a warning say why (issue 29: it used to be shown, grounded, with exit 0).
    with fake.LlamaCppServer([fake.answer(f"Run wren keys rotate [1]. {_distinct_words(60)}")]) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever, policy="llm-answer",
                         llm_max_tokens_answer=40)
    assert _sent(server, 0)["max_tokens"] == 40
    assert result.extractive and "Step 0" not in result.answer and "[answer cut off" not in result.answer
    assert result.fallback.startswith("the model's answer was cut off at 40 tokens (RAG_LLM_MAX_TOKENS_ANSWER)")
    assert any(w.startswith("the model's answer was not used: it was cut off at 40 tokens") for w in result.warnings)


def test_runaway_repetition_gives_the_extractive_answer(make_llm_settings, fake_index, fake_retriever):
    with fake.LlamaCppServer([fake.runaway("the")]) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever, policy="llm-answer",
                         llm_max_tokens_answer=40)
    assert result.extractive and "wren keys rotate" in result.answer and "the the" not in result.answer
    assert "repeated itself until it was cut off (RAG_LLM_MAX_TOKENS_ANSWER=40" in result.fallback
    assert result.citations == ["auth-p1"] and result.grounded


def test_history_carries_the_repaired_arguments(make_llm_settings, fake_index, fake_retriever):
    script = [fake.tool_call("search", "{'query': 'rotate API key', 'widen': True}", call_id="py"),
              fake.tool_call("list_documents", "", call_id="empty"),
              fake.tool_call("search", '{"query": "tokens expire', call_id="broken"),
              fake.tool_call("done", DONE, call_id="end")]
    with fake.LlamaCppServer(script) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever)
    assert result.fallback is None and [s.tool for s in result.steps] == ["search", "list_documents", "search",
                                                                          "done"]
    assert result.steps[0].repairs == ["read a Python-style object (single quotes, True/None)"]
    calls = {c["id"]: json.loads(c["function"]["arguments"]) for m in _sent(server, 3)["messages"]
             for c in m.get("tool_calls") or []}
    assert calls["py"]["query"] == "rotate API key" and calls["py"]["widen"] is True
    assert calls["empty"] == {} and calls["broken"] == {}  # nothing ran for the broken call
    broken_reply = next(m for m in _sent(server, 3)["messages"] if m.get("tool_call_id") == "broken")
    assert "not valid JSON" in broken_reply["content"] and '{"query": "tokens expire' in broken_reply["content"]


def test_context_overflow_trims_the_history(make_llm_settings, fake_index, fake_retriever):
    search = {"query": "plan projects storage key tokens rotate", "max_results": 5, "granularity": "paragraph"}
    script = [fake.tool_call("search", search), fake.tool_call("done", DONE, call_id="c2")]
    with fake.LlamaCppServer(list(script)) as probe:  # measure the two prompts once, on a roomy server
        _ask(probe, make_llm_settings, fake_index, fake_retriever)
    first, second = (fake.prompt_tokens(r["json"]) for r in probe.requests)
    assert second - first > 150  # the search results are what makes the second prompt large
    fake_retriever.calls.clear()
    with fake.LlamaCppServer(list(script), n_ctx=second - 60) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever)
    assert result.fallback is None and result.answer == DONE["answer"] and result.citations == ["auth-p1"]
    fits = [fake.prompt_tokens(r["json"]) <= second - 60 for r in server.requests]
    assert fits == [True, False, True]  # one overflow, then the trimmed history fit
    observation = _sent(server, 2)["messages"][-1]["content"]
    assert 'id="plans-p0"' in observation and 'id="auth-p0"' not in observation  # lowest-ranked results went
    assert "[removed to fit the model's context" in observation
    assert any("trimmed" in w and "context" in w for w in result.warnings)


def test_unknown_model_name_answered_as_the_alias_is_reported(make_llm_settings, fake_index, fake_retriever):
    script = [fake.tool_call("search", {"query": "rotate API key"}), fake.tool_call("done", DONE)]
    with fake.LlamaCppServer(script, alias="smollm2") as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever)
    assert _sent(server, 0)["model"] == "scripted-model"
    assert any("'smollm2'" in w and "'scripted-model'" in w for w in result.warnings)


def test_connection_held_open_ends_within_the_time_budget(make_llm_settings, fake_index, fake_retriever):
    with fake.LlamaCppServer([fake.held_open(3.0)] * 3) as server:
        result, elapsed = _ask(server, make_llm_settings, fake_index, fake_retriever, llm_timeout_s=10.0,
                               llm_time_budget_s=1.0)
    assert elapsed < 2.5  # unbounded: 3 s for the first request alone
    assert "time budget of 1 s" in result.stop_reason
    assert result.steps[-1].tool == "out_of_time" and "time budget" in result.steps[-1].error
    assert not result.grounded and result.grounding


def test_slow_steps_stop_at_the_time_budget(make_llm_settings, fake_index, fake_retriever):
    script = [{**fake.tool_call("search", {"query": f"rotate key {i}"}, call_id=f"c{i}"), "delay": 0.4}
              for i in range(6)]
    with fake.LlamaCppServer(script) as server:
        result, elapsed = _ask(server, make_llm_settings, fake_index, fake_retriever, llm_time_budget_s=1.0)
    assert elapsed < 1.8 and len(server.requests) <= 3  # unbounded: 6 x 0.4 s
    assert "time budget of 1 s" in result.stop_reason
    assert result.citations == ["auth-s"] and result.grounded  # it ends with what it found
    # the model's answer was not used: said as the fallback and a warning (ask exits 2), not only in stop_reason
    assert result.fallback.startswith("the time budget of 1 s (RAG_LLM_TIME_BUDGET_S) ran out")
    assert any(w.startswith("the model's answer was not used: the time budget of 1 s") for w in result.warnings)


def test_done_without_searching_is_searched_first_and_flagged_when_uncited(make_llm_settings, fake_index,
                                                                          fake_retriever):
    invented = {"answer": "It costs $1.15 per job.", "citations": []}
    script = [fake.tool_call("done", invented), fake.tool_call("done", invented, call_id="c2")]
    with fake.LlamaCppServer(script) as server:
        result, _ = _ask(server, make_llm_settings, fake_index, fake_retriever)
    assert [s.tool for s in result.steps] == ["search", "done"]
    assert "without searching" in result.steps[0].reason
    assert result.answer == invented["answer"] and not result.grounded
    assert "cites no passage" in result.grounding
    data = result.to_dict()
    assert data["grounded"] is False and data["grounding"] == result.grounding
    assert [u["sentence"] for u in data["unsupported"]] == ["It costs $1.15 per job."]


def test_streamed_answer_stops_at_the_time_budget(make_llm_settings, fake_index, fake_retriever):
    from rag_core.agent import AgentResult, run_agent

    pieces: list[str] = []
    # 400 tokens at 100 tokens/s: four seconds of writing, with a one-second budget for the whole question
    long_answer = _distinct_words(400)
    with fake.LlamaCppServer([fake.answer(long_answer)], tokens_per_s=100) as server:
        settings = make_llm_settings(server.base_url, llm_time_budget_s=1.0, llm_max_tokens_answer=400)
        started = time.monotonic()
        events = list(run_agent(QUESTION, fake_index, RAGConfig(), settings, policy="llm-answer",
                                llm=LLMClient(settings), retriever=fake_retriever, on_answer_text=pieces.append))
        elapsed = time.monotonic() - started
    result = events[-1]
    assert isinstance(result, AgentResult) and elapsed < 3.0  # unbounded: 4 s
    assert 10 < len(pieces) < 150  # some of the answer arrived, not all 400 tokens
    assert result.extractive and "[answer cut off" not in result.answer
    assert "cut off when the question's time budget (RAG_LLM_TIME_BUDGET_S) ran out" in result.fallback
    assert any("time budget (RAG_LLM_TIME_BUDGET_S) ran out" in w for w in result.warnings)
