"""AppTest of the plan in the Agent Playground: the parts of a question and their evidence, the "documents do not
answer this" banner, the parts a one-shot search misses, and earlier results kept from before plans existed."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.loaders import load_bytes
from rag_core.services import open_index
from tests.app.apptest_helpers import page_app
from tests.app.test_agent_page import GUIDE, HASH_CONFIG, PAGE
from tests.app.test_untrusted_text import active_parts
from ui.safe_text import md_escape

TWO_PARTS = "How do I rotate the API key, and what does the request timeout default to?"
ONE_MISSING = "How do I rotate the API key, and how many zebras live in the savanna?"
NEVER_MENTIONED = "How do I configure Kubernetes ingress with Terraform?"
NEW_FIELDS = {"found", "found_reason", "plan", "parts"}


@pytest.fixture
def indexed(data_dir):
    open_index(HASH_CONFIG).ingest([load_bytes("guide.md", GUIDE.encode())])


def _ask(question: str, **session) -> AppTest:
    at = page_app(PAGE, HASH_CONFIG, **session)
    at.run()
    at.chat_input[0].set_value(question).run()
    assert not at.exception
    return at


def _plan(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith(":material/checklist: **Plan:")]


def test_a_question_in_two_parts_shows_its_plan_and_a_checklist(indexed):
    at = _ask(TWO_PARTS)
    [plan] = _plan(at)
    head, _, first, second = plan.split("\n")
    assert head == (":material/checklist: **Plan: multi\\-part** · several questions in one: each is searched on its "
                    "own · a part counts as covered when its best evidence reaches 0.45 (not the retrieval threshold)")
    assert first.startswith(r"1. How do I rotate the API key — :green[:material/check_circle:] guide\.md › Keys (0.")
    assert second.startswith(r"2. what does the request timeout default to? — :green[:material/check_circle:] ")
    assert "Extractive answer" in "\n".join(m.value for m in at.markdown)  # the answer is still shown below


def test_a_part_without_evidence_is_marked_not_found(indexed):
    at = _ask(ONE_MISSING)
    [plan] = _plan(at)
    assert "1. How do I rotate the API key — :green[:material/check_circle:] guide\\.md › Keys" in plan
    assert "2. how many zebras live in the savanna? — :orange[:material/cancel:] not found (best 0." in plan
    assert plan.split("\n")[-1].endswith(" < 0.45)") and " ≥ 0.45)" in plan.split("\n")[-2]


def test_a_single_question_shows_no_plan(indexed):
    at = _ask("How do I rotate the API key?")
    assert _plan(at) == []
    assert any("Extractive answer" in m.value for m in at.markdown)


def test_a_question_about_what_the_documents_never_mention_gets_a_banner_not_an_answer(indexed):
    at = _ask(NEVER_MENTIONED)
    assert at.session_state["agent_chat"][0][1].found is False
    [banner] = [w for w in at.warning if "do not answer" in w.value]
    assert banner.value.startswith("**The documents do not answer this question.** Why: the documents never mention")
    assert "Kubernetes" in banner.value and banner.icon == ":material/search_off:"
    assert not any("Not grounded" in w.value for w in at.warning)
    shown = "\n".join(m.value for m in at.markdown)
    assert "Extractive answer" not in shown and "Closest places found (not an answer)" not in shown
    assert not any(b.label.startswith(":material/attach_file:") for b in at.button)  # no citations: nothing answers it
    assert any("closest, not an answer" in c.value for c in at.caption)
    closest = [b for b in at.button if b.help and b.help.startswith("Closest, not an answer: ")]
    assert closest and closest[0].label.startswith(r"guide\.md")


def test_the_one_shot_side_lists_the_parts_it_missed(indexed):
    at = _ask(ONE_MISSING, agent_compare=True)
    shown = [m.value for m in at.markdown]
    assert "One search missed 1 of 2 part(s):\n\n- :orange[:material/cancel:] how many zebras live in the savanna? " \
           "(best 0.08)" in shown
    assert [p["covered"] for p in at.session_state["agent_chat"][0][3]] == [True, False]  # kept with the turn
    at.chat_input[0].set_value(TWO_PARTS).run()  # the earlier turn is drawn again from what was kept
    assert not at.exception
    assert [m.value for m in at.markdown].count(shown[shown.index(next(s for s in shown if "missed" in s))]) == 1
    assert any("One search covers every part of the question." in c.value for c in at.caption)


def test_the_one_shot_parts_failing_does_not_break_the_page(indexed, monkeypatch):
    from ui.agent import agent_plan_view

    def broken(*args, **kwargs):
        raise RuntimeError("embedder gone")

    monkeypatch.setattr(agent_plan_view, "score_parts", broken)
    at = _ask(TWO_PARTS, agent_compare=True)
    assert not at.error
    assert any(c.value == "Coverage of the question's parts is unavailable: RuntimeError" for c in at.caption)
    assert _plan(at) and any("Extractive answer" in m.value for m in at.markdown)  # the agent's side is drawn


class BeforePlans:
    """A result kept in the session from before plans existed: the same result without the new fields."""

    def __init__(self, result) -> None:
        self._result = result

    def __getattr__(self, name: str):
        if name in NEW_FIELDS:
            raise AttributeError(name)
        return getattr(self._result, name)


def test_an_earlier_result_from_before_plans_is_drawn(indexed):
    at = _ask(TWO_PARTS, agent_compare=True)
    question, result, baseline, _ = at.session_state["agent_chat"][0]
    at.session_state["agent_chat"] = [(question, BeforePlans(result), baseline), (question, BeforePlans(result))]
    at.run()
    assert not at.exception and not at.error
    assert _plan(at) == []  # nothing to show for it, and no crash
    assert sum("Extractive answer (offline policy)" in m.value for m in at.markdown) >= 2
    assert any("One search covers every part of the question." in c.value for c in at.caption)  # computed again


def test_parts_are_shown_as_typed(indexed):
    first = "How do I rotate the API key ![x](http://evil.test/p.png) <b>now</b>"
    at = _ask(f"{first}, and what does the request timeout default to for $HOME?", agent_compare=True)
    [plan] = _plan(at)
    assert f"1. {md_escape(first)} — " in plan and r"for \$HOME? — " in plan
    assert active_parts("\n\n".join(m.value for m in at.markdown)) == []


def test_a_part_uncovered_for_a_missing_name_does_not_claim_its_evidence_fell_short():
    from ui.agent.agent_plan_view import checklist_line

    line = checklist_line({"text": "deploy on Heroku", "covered": False, "confidence": 0.85, "chunk_ids": []}, {},
                          None)
    assert line.endswith("not found (best 0.85, but it names what no evidence mentions)") and "<" not in line
    low = checklist_line({"text": "x y", "covered": False, "confidence": 0.31, "chunk_ids": []}, {}, None)
    assert low.endswith("not found (best 0.31 < 0.45)")


def test_a_part_marked_covered_under_the_threshold_shows_no_check():
    """Issue 35.2: 'both plan parts show a green check, the second at 0.51 (under the threshold)'. The check is the
    answer's own rule, whatever ``covered`` a result carries (one kept from an older threshold, say)."""
    from ui.agent.agent_plan_view import COVERED, MISSING, checklist_line

    part = {"text": "reachable on the network", "covered": True, "confidence": 0.44, "chunk_ids": ["c1"]}
    line = checklist_line(part, {}, None)
    assert line == f"reachable on the network — {MISSING} not found (best 0.44 < 0.45)"
    at_threshold = checklist_line({**part, "confidence": 0.45}, {}, None)
    assert COVERED in at_threshold and at_threshold.endswith("(0.45 ≥ 0.45)")


def test_the_answer_quotes_each_part_in_the_plans_order_and_says_so_for_a_part_under_the_threshold(indexed):
    """Issue 35.2 on the page: the checklist and the answer agree part by part; the covered part is quoted from its
    own evidence, the part under 0.45 quotes nothing and says why; the run's stop reason names the retrieval
    threshold, not a 'confidence threshold' the checked part seems to miss."""
    at = _ask(ONE_MISSING)
    [plan] = _plan(at)
    [answer] = [m.value for m in at.markdown if m.value.startswith("Extractive answer (offline policy)")]
    first, second = answer.split("\n\n#### 2. how many zebras live in the savanna?\n\n")
    assert "#### 1. How do I rotate the API key\n\n- To rotate the API key, open Settings, choose Keys and press " \
           "Rotate. \\[guide.md › Keys\\]" in first
    best = plan.split("\n")[-1].split("(best ")[1].split(" < ")[0]
    assert second == (f"No passage found covers: how many zebras live in the savanna? (best evidence {best}, under "
                      "the 0.45 a part needs)")
    assert not any("Not grounded" in w.value for w in at.warning)
    [stopped] = [c.value for c in at.caption if c.value.startswith("Stopped: ")]
    assert "retrieval threshold 0.70" in stopped and "the confidence threshold" not in stopped
