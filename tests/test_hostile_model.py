"""A model server sending odd data never ends a run without an answer: each odd shape becomes a tool error step
the model can read, or the offline policy's answer with the failure recorded.

The odd shapes go through the real ``openai`` client against the loopback scripted server (``tests/fakes``).
"""

from __future__ import annotations

import json
import sys
import types

import pytest

from rag_core.agent import ask
from rag_core.config import RAGConfig, RetrievalConfig
from rag_core.llm import (
    MAX_ARGUMENT_DEPTH,
    LLMClient,
    message_text,
    token_count,
    tool_arguments,
    tool_name,
    usage_counts,
)
from tests.fakes import openai_server as fake
from tests.fakes.index import agent_index
from tests.fakes.openai_server import llm_settings
from tests.fakes.retriever import FakeRetriever

QUESTION = "How do I rotate an API key?"
BIG = "7" * 5000  # past Python's 4,300-digit limit on int("...")
DEEP = "[" * 50_000 + "]" * 50_000  # past the recursion limit of any recursive JSON parser
DONE = fake.tool_call("done", {"answer": "Use wren keys rotate.", "citations": ["auth-s"]}, call_id="end")


class Raw(str):
    """A response body sent exactly as written (the fake server would otherwise serialise it)."""


@pytest.fixture
def raw_bodies(monkeypatch):
    """Lets a scripted item's ``body`` be a :class:`Raw` text: a body JSON cannot even express."""
    def dumps(value, *args, **kwargs):
        return str(value) if isinstance(value, Raw) else json.dumps(value, *args, **kwargs)

    monkeypatch.setattr(fake, "json", types.SimpleNamespace(dumps=dumps, loads=json.loads,
                                                            JSONDecodeError=json.JSONDecodeError))


def reply(message, finish="stop", **top) -> dict:
    """A 200 reply whose message, finish reason and top-level fields may be of any shape."""
    body = fake.completion({}, "stop")
    body["choices"][0].update(message=message, finish_reason=finish)
    body.update(top)
    return {"status": 200, "body": body}


def call(function, call_id="c1") -> dict:
    return reply({"role": "assistant", "content": None,
                  "tool_calls": [{"id": call_id, "type": "function", "function": function}]}, "tool_calls")


def raw_reply(old: str, new: str) -> dict:
    text = json.dumps(fake.completion({"role": "assistant", "content": "hi"})).replace(old, new)
    return {"status": 200, "body": Raw(text)}


def _ask(server, policy="llm"):
    index = agent_index()
    client = LLMClient(llm_settings(server.base_url, llm_max_retries=0))
    return ask(QUESTION, index, RAGConfig(), policy=policy, llm=client,
               retriever=FakeRetriever(index, RetrievalConfig()))


TOOL_ERRORS = {
    "a 5,000-digit integer in the arguments": (
        call({"name": "search", "arguments": f'{{"query": "rotate", "max_results": {BIG}}}'}), "5000 digits"),
    "arguments nested 50,000 levels deep": (call({"name": "search", "arguments": DEEP}), "levels deep"),
    "a deep value inside an object": (call({"name": "search", "arguments": '{"query": ' + DEEP + "}"}), "levels deep"),
    "a fenced 5,000-digit integer": (
        call({"name": "search", "arguments": f'```json\n{{"query": "x", "max_results": {BIG},}}\n```'}), "digits"),
    "a list where the name belongs": (call({"name": ["search"], "arguments": "{}"}), "unknown tool"),
    "an object where the name belongs": (call({"name": {"deep": [[["search"]]]}, "arguments": "{}"}), "unknown tool"),
}


@pytest.mark.parametrize("case", list(TOOL_ERRORS))
def test_odd_tool_call_is_a_tool_error_step(case, scripted_server_class):
    odd, said = TOOL_ERRORS[case]
    with scripted_server_class([odd, DONE, DONE]) as server:
        result = _ask(server)
    first = result.steps[0]
    assert not first.ok and first.tool != "fallback"
    assert result.answer == "Use wren keys rotate." and result.fallback is None
    told = [m["content"] for m in server.requests[1]["json"]["messages"] if m["role"] == "tool"]
    assert told and told[0].startswith("TOOL ERROR") and said in told[0]
    assert len(json.dumps(server.requests[1]["json"])) < 50_000  # the odd value is not sent back to the model


ANSWERED = {
    "content as a list of parts": reply({"role": "assistant", "content": [{"type": "text", "text": "Rotate it."}]}),
    "content as an object": reply({"role": "assistant", "content": {"text": "Rotate it."}}),
    "content as a number": reply({"role": "assistant", "content": 5}),
    "the message as a bare string": reply("Rotate it."),
    "usage counts that are not integers": reply({"role": "assistant", "content": "Rotate it."}, usage={
        "prompt_tokens": "many", "completion_tokens": [1], "total_tokens": {"n": 1}}),
    "a model name that is a list": reply({"role": "assistant", "content": "Rotate it."}, model=["m"]),
    "a finish reason that is a list": reply({"role": "assistant", "content": "Rotate it."}, ["stop"]),
    "a function that is a string": call("search"),
    "a call id that is a list": call({"name": "list_documents", "arguments": "{}"}, call_id=[1, 2]),
    "tool_calls as an object": reply({"role": "assistant", "content": None, "tool_calls": {"a": 1}}),
    "a 5,000-digit integer in a tool call written in the text": reply({"role": "assistant", "content":
        f'<tool_call>{{"name": "search", "arguments": {{"query": "x", "max_results": {BIG}}}}}</tool_call>'}),
    "a bare call in the text with a 5,000-digit integer": reply({"role": "assistant", "content":
        f'Searching. {{"name": "search", "arguments": {{"max_results": {BIG}}}}}'}),
    "deep JSON in the text": reply({"role": "assistant", "content": 'Searching. {"name": "search", "arguments": '
                                    + DEEP + "}"}),
}


@pytest.mark.parametrize("policy", ["llm", "llm-answer"])
@pytest.mark.parametrize("case", list(ANSWERED))
def test_odd_reply_still_ends_with_an_answer(case, policy, scripted_server_class):
    with scripted_server_class([ANSWERED[case], DONE, DONE]) as server:
        result = _ask(server, policy)
    assert result.answer.strip()
    assert all(s.tool != "fallback" for s in result.steps)  # read, not given up on


@pytest.mark.parametrize("policy", ["llm", "llm-answer"])
@pytest.mark.parametrize("case, odd", [
    ("a 5,000-digit usage count", raw_reply('"total_tokens": 60', f'"total_tokens": {BIG}')),
    ("content nested 50,000 levels deep", raw_reply('"hi"', DEEP)),
    ("a body that is not JSON", {"status": 200, "body": Raw("{'choices': [")}),
    ("choices as an object", reply({}, choices={"0": {}})),
    ("a message that is a number", reply(5)),
])
def test_unreadable_reply_falls_back_to_the_offline_answer(case, odd, policy, scripted_server_class, raw_bodies):
    with scripted_server_class([odd]) as server:
        result = _ask(server, policy)
    assert result.answer.strip() and result.extractive
    failed = [s for s in result.steps if s.tool == "fallback"] or [s for s in result.steps if s.tool == "done"]
    assert failed and (result.fallback or "").startswith("LLM failed")
    assert "could not be read" in result.fallback or "without a message" in result.fallback


@pytest.fixture
def scripted_server_class():
    return fake.ScriptedOpenAIServer


def test_tool_arguments_on_literals():
    assert tool_arguments('{"query": "x"}') == '{"query": "x"}'
    assert tool_arguments('{"query": "x",}') == '{"query": "x",}'  # a slip the tools repair: kept as sent
    assert tool_arguments({"query": "x"}) == '{"query": "x"}' and tool_arguments(None) == ""
    for inside_a_string in (f'{{"query": "{BIG}"}}', '{"q": "' + "[" * 100 + '"}'):  # a string's text is its own
        assert tool_arguments(inside_a_string) == inside_a_string
    nested = "[" * MAX_ARGUMENT_DEPTH + "]" * MAX_ARGUMENT_DEPTH
    assert tool_arguments(nested) == nested
    assert tool_arguments("[" + nested + "]").startswith("<unreadable arguments: nested 33 levels deep")
    assert tool_arguments(f'{{"k": {BIG}}}').startswith("<unreadable arguments: a number of 5000 digits")


def test_message_fields_on_literals():
    assert message_text([{"type": "text", "text": "a"}, "b"]) == "ab" and message_text(None) is None
    assert message_text(5) == "5" and message_text({"x": 1}) == '{"x": 1}'
    assert tool_name(["search"]) == '["search"]' and tool_name(None) == "" and len(tool_name("x" * 10_000)) == 200
    assert [token_count(v) for v in (7, 7.9, " 12 ", True, -3, "many", [1], float("inf"), 10**13)] == [
        7, 7, 12, 0, 0, 0, 0, 0, 0]
    assert usage_counts(None) == {} and usage_counts({"total_tokens": "5"})["total_tokens"] == 5
    assert sys.get_int_max_str_digits() < len(BIG)  # the premise of the 5,000-digit cases
