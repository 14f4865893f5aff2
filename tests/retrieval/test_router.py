from dataclasses import dataclass

import pytest

from rag_core.retrieval.router import route_query


@pytest.mark.parametrize(
    ("query", "strategy", "cue"),
    [
        ('where is "connection refused" logged', "keyword", "quoted string"),
        ("what does model_config do", "keyword", "identifier"),
        ("WrenClient usage", "keyword", "identifier"),
        ("call fetch_jobs() twice", "keyword", "code symbol"),
        ("error 404 on upload", "keyword", "number"),
        ("Wrenfall vs Airflow scheduling", "hybrid", "comparison"),
        ("What is the difference between a job and a task?", "hybrid", "comparison"),
        ("How do I install it and how do I test it?", "hybrid", "multi-part"),
        ("why do retries back off exponentially", "vector", "natural-language"),
    ],
)
def test_rule_router(query, strategy, cue):
    route = route_query(query)
    assert route.strategy == strategy
    assert cue in route.reason
    assert route.decided_by == "rules"


@pytest.mark.parametrize(
    ("query", "intent", "strategy"),
    [
        ("Show me the code for a retry decorator", "code", "hybrid"),
        ("How many jobs does the pro plan allow?", "data", "hybrid"),
        ("why do retries back off exponentially", "fact", "vector"),
        ("steps to rotate the API key", "procedure", "vector"),
        ("call fetch_jobs() twice", "code", "keyword"),  # exact tokens still go to BM25
    ],
)
def test_code_and_data_questions_without_exact_tokens_go_hybrid(query, intent, strategy):
    from rag_core.retrieval.intent import classify_intent

    assert classify_intent(query).name == intent
    route = route_query(query, intent=intent)
    assert route.strategy == strategy
    if strategy == "hybrid":
        assert f"{intent} question" in route.reason


def test_web_route_only_when_configured():
    assert route_query("latest release news").strategy == "vector"
    route = route_query("latest release news", web_available=True)
    assert route.strategy == "web"
    assert "latest" in route.reason


@dataclass
class _Reply:
    content: str


class _ScriptedLLM:
    def __init__(self, answer=None, error=None):
        self.answer, self.error, self.messages = answer, error, None

    def chat(self, messages, tools=None, temperature=0.0, **bounds):
        self.messages, self.bounds = messages, bounds
        if self.error:
            raise self.error
        return _Reply(self.answer)


def test_llm_router_is_used_when_given():
    llm = _ScriptedLLM("Keyword.")
    route = route_query("why do retries back off", llm=llm)
    assert (route.strategy, route.decided_by) == ("keyword", "llm")
    assert "web" not in llm.messages[0]["content"]  # not offered when not configured
    assert llm.bounds == {"purpose": "router"}  # bounded by RAG_LLM_MAX_TOKENS_ROUTER, not the step limit


def test_llm_router_failure_falls_back_to_rules_with_the_reason():
    route = route_query("what does model_config do", llm=_ScriptedLLM(error=TimeoutError("read timed out")))
    assert route.strategy == "keyword"
    assert route.decided_by == "rules"
    assert "LLM router failed: TimeoutError: read timed out" in route.reason


def test_llm_router_odd_answer_falls_back():
    route = route_query("why do retries back off", llm=_ScriptedLLM("I think you should search the web"))
    assert route.strategy == "vector"
    assert "LLM router failed" in route.reason


def test_empty_query_is_refused():
    with pytest.raises(ValueError, match="empty"):
        route_query(" ")
