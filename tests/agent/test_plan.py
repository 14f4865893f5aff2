"""The question's plan: the parts a complete answer needs, by rules over the question's structure."""

from __future__ import annotations

import pytest

from rag_core.agent.plan import plan_question, sentences


def _texts(question: str) -> list[str]:
    return [p.text for p in plan_question(question).parts]


def test_a_plain_question_is_one_part_itself():
    plan = plan_question("How do I rotate the API key?")
    assert plan.kind == "single" and not plan.split
    assert [p.query for p in plan.parts] == ["How do I rotate the API key?"]


def test_a_thin_follow_up_sentence_joins_the_story():
    # "How?" cannot be searched alone: the question stays one part.
    plan = plan_question("After someone registers I want to send a welcome email without waiting on the mail server. "
                         "How?")
    assert plan.kind == "single"


def test_sentences_keep_abbreviations_code_and_file_names_whole():
    text = "Use e.g. `json.loads. x` or q1.csv here. Then what? Done."
    assert sentences(text) == ["Use e.g. `json.loads. x` or q1.csv here.", "Then what?", "Done."]


def test_a_story_and_two_questions_are_three_parts_and_a_bridge():
    plan = plan_question("Since upgrading, passing 10.5 for an integer attribute fails with an error we never saw "
                         "before. Which error is that, and what's the rule now for floats going into integer fields?")
    assert plan.kind == "bridge"
    assert [p.role for p in plan.parts] == ["context", "question"]
    # "Which error is that" is too thin to search alone: it joins the next question.
    assert plan.parts[1].text == "Which error is that, what's the rule now for floats going into integer fields?"


def test_a_choice_is_one_part_per_side_each_with_the_story():
    plan = plan_question("I need a derived order total from quantity and unit price. Should I expose it through a "
                         "decorated getter or compute it in the post-init hook?")
    assert plan.kind == "comparison"
    sides = [p for p in plan.parts if p.role == "side"]
    assert [p.text for p in sides] == ["expose it through a decorated getter", "compute it in the post-init hook"]
    # "it" refers to the story: each side's query carries the story's topic.
    assert all("derived" in p.query and "order" in p.query for p in sides)


@pytest.mark.parametrize("question, sides", [
    ("Compare the Basic and Pro plans", ["Basic plans", "Pro plans"]),
    ("What is the difference between model_dump and model_dump_json?", ["model_dump", "model_dump_json"]),
])
def test_comparisons_name_their_sides(question, sides):
    plan = plan_question(question)
    assert plan.kind == "comparison"
    assert [p.query.split(" (")[0] for p in plan.parts] == sides


def test_an_enumeration_is_one_part_per_item_with_the_head():
    plan = plan_question("How can I change the generated schema: per attribute, per class, per custom type, and for "
                         "the whole process?")
    assert plan.kind == "enumeration"
    assert [p.text for p in plan.parts] == [
        "How can I change the generated schema per attribute", "How can I change the generated schema per class",
        "How can I change the generated schema per custom type",
        "How can I change the generated schema for the whole process"]


def test_no_false_enumeration_or_comparison():
    # Commas that are not a list, and "VS Code" (a name, not "vs").
    assert plan_question("What options are there for mapping attribute names to differently named, or even "
                         "nested, keys in the payloads I receive and send?").kind == "single"
    assert plan_question("How do I configure VS Code so it flags missing required arguments when I construct "
                         "objects?").kind == "single"


def test_a_thin_opening_phrase_joins_its_clause():
    texts = _texts("For custom checks, when should I attach the function inside the annotation and when should I "
                   "use the method decorator on the class?")
    assert texts[0].startswith("For custom checks, when should I attach")
    assert len(texts) == 2


def test_parts_are_capped_and_unique():
    plan = plan_question("What is alpha beta gamma? What is delta epsilon zeta? What is eta theta iota? What is "
                         "kappa lambda mu? What is nu xi omicron? What is alpha beta gamma?")
    assert len(plan.parts) == 4
    assert len({p.query for p in plan.parts}) == 4


def test_a_comparison_coordinated_with_another_question_keeps_that_question_apart():
    plan = plan_question("How do the Team and Enterprise plans differ in how long metrics are kept, and how do I "
                         "rotate an API key?")
    assert plan.kind == "comparison"
    assert [(p.text, p.role) for p in plan.parts] == [("Team plans long metrics kept", "side"),
                                                      ("Enterprise plans long metrics kept", "side"),
                                                      ("how do I rotate an API key?", "question")]
