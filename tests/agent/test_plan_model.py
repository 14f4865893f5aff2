"""The plan written by the model (``rag_core.agent.plan_model``): checked before use, searched by the offline
planner under ``llm-answer``, the rules' plan when the reply is unusable."""

from __future__ import annotations

import pytest

from rag_core.agent import ask
from rag_core.agent.plan import MAX_PARTS
from rag_core.agent.plan_model import parse_plan
from rag_core.config import RAGConfig
from rag_core.llm import LLMClient
from tests.fakes import openai_server as fake

QUESTION = "How much room do the cheap and the costly tiers give me, and how do I swap my credentials?"
PLAN = [("the cheap tier's room", "Basic plan projects storage"),
        ("the costly tier's room", "Pro plan projects storage"),
        ("swap my credentials", "rotate an API key")]


def test_a_valid_plan_is_read_with_its_search_words():
    plan = parse_plan(QUESTION, '{"kind": "comparison", "parts": [{"text": "the cheap tier", "query": "Basic plan",'
                                ' "role": "side"}, {"text": "the costly tier", "query": "Pro plan", "role": "side"}]}',
                      "m")
    assert plan.by == "model" and plan.kind == "comparison" and plan.why == "planned by m: 2 parts"
    assert [(p.text, p.query, p.role) for p in plan.parts] == [("the cheap tier", "Basic plan", "side"),
                                                               ("the costly tier", "Pro plan", "side")]
    assert plan.to_dict()["by"] == "model"
    # prose around the JSON, an unknown role, a part without a query
    plan = parse_plan(QUESTION, 'Sure!\n{"kind": "multi-part", "parts": [{"text": "cheap tier", "role": "boss"}, '
                                '{"text": "swap credentials"}]} hope it helps')
    assert [(p.query, p.role) for p in plan.parts] == [("cheap tier", "question"), ("swap credentials", "question")]


def test_one_part_is_a_single_question_and_repeated_parts_are_one():
    plan = parse_plan(QUESTION, '{"kind": "comparison", "parts": [{"text": "cheap tier", "query": "Basic plan"}, '
                                '{"text": "the cheap tier", "query": "basic plan"}]}')
    assert plan.kind == "single" and not plan.split and plan.parts[0].query == "Basic plan"


@pytest.mark.parametrize("reply, why", [
    ("I would search for the plans.", "no JSON object"),
    ('{"kind": "essay", "parts": [{"text": "cheap tier"}]}', "unknown kind"),
    ('{"kind": "comparison", "parts": []}', "no 'parts' list"),
    ('{"kind": "comparison", "parts": [{"query": "x"}]}', "no 'text'"),
    ('{"kind": "multi-part", "parts": [{"text": "cheap tier"}, {"text": "quantum entanglement of llamas"}]}',
     "shares no word with the question"),
    ('{"kind": "multi-part", "parts": [' + ", ".join(f'{{"text": "cheap tier {w}"}}' for w in
                                                      ["alpha", "beta", "gamma", "delta", "epsilon"]) + "]}",
     f"(at most {MAX_PARTS})"),
    ('{"kind": "single", "parts": [{"text": "' + "cheap " * 80 + '"}]}', "longer than"),
])
def test_an_unusable_plan_is_rejected_with_the_reason(reply, why):
    with pytest.raises(ValueError, match=__import__("re").escape(why)):
        parse_plan(QUESTION, reply)


def test_llm_answer_searches_the_models_parts(scripted_server, make_llm_settings, fake_index, fake_retriever):
    """The user's words ("cheap tier", "swap credentials") are not the documents'; the model's search words are."""
    with scripted_server([fake.answer("Basic: 5 projects [1]; Pro: 50 [2]; rotate with wren keys rotate [3].")]) \
            as server:
        server.plans.append(fake.plan_reply("comparison", PLAN))
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask(QUESTION, fake_index, RAGConfig(), policy="llm-answer", llm=client, retriever=fake_retriever)
    assert len(server.plan_requests) == 1 and server.plan_requests[0]["json"]["messages"][1]["content"] == QUESTION
    assert result.plan["by"] == "model" and [p["query"] for p in result.plan["parts"]] == [q for _, q in PLAN]
    searched = [s.args.get("query") for s in result.steps if s.tool == "search"]
    assert {q for _, q in PLAN} <= set(searched)
    # every search but the whole question's is in the model's words, second hops included
    hops = [q for q in searched if q not in {QUESTION} | {q for _, q in PLAN}]
    assert hops and all(any(h.startswith(q) for _, q in PLAN) for h in hops), hops
    assert {"plans-p0", "plans-p1", "auth-p1"} <= {h.chunk.id for h in result.context_hits}
    assert not any("planned by rules" in w for w in result.warnings)


def test_an_unusable_plan_keeps_the_rules_plan_with_a_note(scripted_server, make_llm_settings, fake_index,
                                                            fake_retriever):
    with scripted_server([fake.answer("Rotate with wren keys rotate [1].")]) as server:
        server.plans.append(fake.answer("Let me think about the tiers first."))
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask(QUESTION, fake_index, RAGConfig(), policy="llm-answer", llm=client, retriever=fake_retriever)
    assert result.plan["by"] == "rules"
    assert any("the model's plan was not usable (the reply holds no JSON object); planned by rules" in w
               for w in result.warnings)


def test_the_plan_by_model_can_be_switched_off(scripted_server, make_llm_settings, fake_index, fake_retriever):
    config = RAGConfig(agent={"plan_by_model": False})
    with scripted_server([fake.answer("Rotate with wren keys rotate [1].")]) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask(QUESTION, fake_index, config, policy="llm-answer", llm=client, retriever=fake_retriever)
    assert server.plan_requests == [] and result.plan["by"] == "rules"


def test_the_offline_policy_never_asks_a_model(scripted_server, make_llm_settings, fake_index, fake_retriever):
    with scripted_server([]) as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask(QUESTION, fake_index, RAGConfig(), policy="offline", llm=client, retriever=fake_retriever)
    assert server.plan_requests == [] and server.requests == [] and result.plan["by"] == "rules"


def test_a_plan_given_to_the_agent_is_searched_and_no_model_is_asked(scripted_server, make_llm_settings, fake_index,
                                                                     fake_retriever):
    from rag_core.agent.plan import Part, QuestionPlan

    given = QuestionPlan(QUESTION, "comparison", [Part(t, q) for t, q in PLAN], why="given", by="model")
    with scripted_server([fake.answer("Basic: 5 projects [1]; Pro: 50 [2]; rotate with wren keys rotate [3].")]) \
            as server:
        client = LLMClient(make_llm_settings(server.base_url), sleep=lambda s: None)
        result = ask(QUESTION, fake_index, RAGConfig(), policy="llm-answer", llm=client, retriever=fake_retriever,
                     plan=given)
    assert server.plan_requests == [] and result.plan["why"] == "given"
    assert {q for _, q in PLAN} <= {s.args.get("query") for s in result.steps if s.tool == "search"}
    offline = ask(QUESTION, fake_index, RAGConfig(), policy="offline", retriever=fake_retriever, plan=given)
    assert [p["query"] for p in offline.plan["parts"]] == [q for _, q in PLAN]


def test_the_bench_upper_bound_adds_the_answers_api_names_to_every_part():
    from bench.docsqa import names_plan

    question = "How do I rotate the API key safely, and how long do tokens last before they expire?"
    plan = names_plan(question, "Use `field_validator` or an AfterValidator, then model_dump; see TypeAdapter.")
    assert plan.by == "model" and len(plan.parts) > 1
    assert all(p.query.endswith("field_validator AfterValidator model_dump TypeAdapter") for p in plan.parts)
    assert names_plan(question, "Nothing named here.").by == "rules"
