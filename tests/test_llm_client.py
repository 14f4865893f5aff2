"""LLMClient against the real ``openai`` client and a loopback server: success, retries and clear errors."""

from __future__ import annotations

import re
import socket

import pytest

from rag_core.config import Settings
from rag_core.errors import LLMError
from rag_core.llm import LLMClient, json_object_in, llm_from_settings, parse_retry_after
from tests.fakes import openai_server as fake


def _client(base_url, make_llm_settings, sleeps=None, **overrides):
    sleep = sleeps.append if sleeps is not None else (lambda s: None)
    return LLMClient(make_llm_settings(base_url, **overrides), sleep=sleep)


def test_plain_answer_and_usage(scripted_server, make_llm_settings):
    with scripted_server([fake.answer("Port 8080.")]) as server:
        result = _client(server.base_url, make_llm_settings).chat([{"role": "user", "content": "port?"}])
    assert result.content == "Port 8080."
    assert result.tool_calls == []
    assert result.usage == {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
    assert server.requests[0]["json"]["model"] == "scripted-model"
    assert server.requests[0]["json"]["messages"] == [{"role": "user", "content": "port?"}]


def test_tool_call_is_parsed_and_tools_sent(scripted_server, make_llm_settings):
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    with scripted_server([fake.tool_call("search", {"query": "jwt"}, call_id="c9")]) as server:
        result = _client(server.base_url, make_llm_settings).chat([{"role": "user", "content": "q"}], tools=tools)
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [("c9", "search", '{"query": "jwt"}')]
    assert server.requests[0]["json"]["tools"] == tools
    assert result.assistant_message()["tool_calls"][0]["function"]["name"] == "search"


def test_429_honours_retry_after(scripted_server, make_llm_settings):
    sleeps: list[float] = []
    script = [fake.error(429, "slow down", headers={"Retry-After": "2"}), fake.answer("ok")]
    with scripted_server(script) as server:
        result = _client(server.base_url, make_llm_settings, sleeps).chat([{"role": "user", "content": "q"}])
    assert result.content == "ok"
    assert sleeps == [2.0]
    assert len(result.retries) == 1 and "429" in result.retries[0]


def test_500_backs_off_exponentially_then_fails(scripted_server, make_llm_settings):
    sleeps: list[float] = []
    with scripted_server([fake.error(500), fake.error(502), fake.error(503)]) as server:
        client = _client(server.base_url, make_llm_settings, sleeps)
        with pytest.raises(LLMError, match="kept failing: server error 503 after 3 attempts"):
            client.chat([{"role": "user", "content": "q"}])
    assert sleeps == [0.5, 1.0]
    assert len(server.requests) == 3


def test_4xx_is_not_retried(scripted_server, make_llm_settings):
    with scripted_server([fake.error(401, "bad key")]) as server:
        with pytest.raises(LLMError, match="401.*RAG_LLM_API_KEY"):
            _client(server.base_url, make_llm_settings).chat([{"role": "user", "content": "q"}])
    assert len(server.requests) == 1


def test_timeout_gives_clear_error(scripted_server, make_llm_settings):
    with scripted_server([{"delay": 1.5, **fake.answer("late")}]) as server:
        client = _client(server.base_url, make_llm_settings, llm_timeout_s=0.3, llm_max_retries=0)
        with pytest.raises(LLMError, match="did not answer within 0.3 s"):
            client.chat([{"role": "user", "content": "q"}])


def test_endpoint_down_gives_clear_error(make_llm_settings):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    client = _client(f"http://127.0.0.1:{port}/v1", make_llm_settings, sleeps, llm_max_retries=3)
    with pytest.raises(LLMError, match="unreachable.*RAG_LLM_BASE_URL"):
        client.chat([{"role": "user", "content": "q"}])
    assert sleeps == []  # a refused connection is not retried: nothing listens there


def test_not_configured():
    assert llm_from_settings(Settings()) is None
    with pytest.raises(LLMError, match="RAG_LLM_BASE_URL"):
        LLMClient(Settings())


def test_parse_retry_after():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_max_tokens_per_purpose_and_cut_off(scripted_server, make_llm_settings):
    script = [fake.answer("a"), fake.answer("keyword"), {"status": 200, "body": fake.completion(
        {"role": "assistant", "content": "a long"}, finish_reason="length")}]
    with scripted_server(script) as server:
        client = _client(server.base_url, make_llm_settings, llm_max_tokens_step=100, llm_max_tokens_router=8,
                         llm_max_tokens_answer=300)
        client.chat([{"role": "user", "content": "q"}])
        client.chat([{"role": "user", "content": "q"}], purpose="router")
        result = client.chat([{"role": "user", "content": "q"}], purpose="answer")
    assert [r["json"]["max_tokens"] for r in server.requests] == [100, 8, 300]
    assert result.cut_off and result.max_tokens == 300


def test_a_500_that_says_why_is_not_retried_and_its_message_is_shown(scripted_server, make_llm_settings):
    sleeps: list[float] = []
    message = fake.BAD_HISTORY_ARGUMENTS.format(last="{'query'")
    with scripted_server([fake.error(500, message)] * 3) as server:
        with pytest.raises(LLMError, match="Failed to parse tool call arguments as JSON.*not retried"):
            _client(server.base_url, make_llm_settings, sleeps).chat([{"role": "user", "content": "q"}])
    assert len(server.requests) == 1 and sleeps == []


def test_context_overflow_is_recognised(scripted_server, make_llm_settings):
    from rag_core.llm import LLMContextOverflow

    message = fake.CONTEXT_OVERFLOW.format(prompt=9000, n_ctx=8192)
    with scripted_server([fake.error(400, message)]) as server:
        with pytest.raises(LLMContextOverflow, match=r"larger than the model's context window.*9000 tokens") as e:
            _client(server.base_url, make_llm_settings).chat([{"role": "user", "content": "q"}])
    assert "check the model name" not in str(e.value)


def test_tools_not_supported_is_recognised(scripted_server, make_llm_settings):
    from rag_core.llm import LLMToolsUnsupported

    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    with scripted_server([fake.error(400, "registry.ollama.ai/library/gemma:2b does not support tools")]) as server:
        with pytest.raises(LLMToolsUnsupported, match="does not support tools.*llm-answer"):
            _client(server.base_url, make_llm_settings).chat([{"role": "user", "content": "q"}], tools=tools)


def test_max_completion_tokens_when_the_server_asks_for_it(scripted_server, make_llm_settings):
    refusal = fake.error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                              "'max_completion_tokens' instead.")
    with scripted_server([refusal, fake.answer("ok"), fake.answer("ok")]) as server:
        client = _client(server.base_url, make_llm_settings)
        client.chat([{"role": "user", "content": "q"}])
        client.chat([{"role": "user", "content": "q"}])
    sent = [r["json"] for r in server.requests]
    assert "max_tokens" in sent[0] and [s.get("max_completion_tokens") for s in sent[1:]] == [512, 512]


def test_deadline_caps_the_wait_and_stops_retries(scripted_server, make_llm_settings):
    import time

    from rag_core.llm import LLMOutOfTime

    with scripted_server([{"delay": 4.0, **fake.answer("late")}]) as server:
        client = _client(server.base_url, make_llm_settings, llm_timeout_s=30.0)
        started = time.monotonic()
        with pytest.raises(LLMOutOfTime, match="RAG_LLM_TIME_BUDGET_S"):
            client.chat([{"role": "user", "content": "q"}], deadline=time.monotonic() + 0.5)
    # unbounded: 4 s; the margin above the 0.5 s deadline leaves room for a loaded test machine
    assert time.monotonic() - started < 2.5 and len(server.requests) == 1


def test_timeout_is_not_retried(scripted_server, make_llm_settings):
    with scripted_server([{"delay": 1.0, **fake.answer("late")}] * 2) as server:
        client = _client(server.base_url, make_llm_settings, llm_timeout_s=0.3, llm_max_retries=2)
        with pytest.raises(LLMError, match="did not answer within 0.3 s.*RAG_LLM_MAX_TOKENS_STEP"):
            client.chat([{"role": "user", "content": "q"}])
    assert len(server.requests) == 1


def test_streamed_answer_hands_each_piece_over(scripted_server, make_llm_settings):
    pieces: list[str] = []
    with fake.LlamaCppServer([fake.answer("Open Settings and press Rotate [1].")]) as server:
        result = _client(server.base_url, make_llm_settings).chat(
            [{"role": "user", "content": "q"}], purpose="answer", max_tokens=4, on_text=pieces.append)
    assert server.requests[0]["json"]["stream"] is True
    assert pieces == ["Open ", "Settings ", "and ", "press"]  # cut at 4 tokens by the server
    assert result.content == "Open Settings and press" and result.cut_off and result.model == "smollm2"
    with pytest.raises(ValueError, match="streaming"):
        _client(server.base_url, make_llm_settings).chat([], tools=[{"type": "function"}], on_text=print)


@pytest.mark.parametrize("reply, why", [
    ("No JSON here.", "holds no JSON object"),
    ('{"a": 1,}', "malformed (Expecting property name"),
    ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "malformed (nested too deeply)"),
    ('{"a": 1} and {"b": 2}', "malformed (Extra data)"),
    ("[1, 2]", "holds no JSON object"),
])
def test_json_object_in_names_what_is_wrong(reply, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        json_object_in(reply)


def test_json_object_in_ignores_prose_around_the_object():
    assert json_object_in('Sure! Here it is:\n```json\n{"kind": "single", "n": [1]}\n```') == \
        {"kind": "single", "n": [1]}
