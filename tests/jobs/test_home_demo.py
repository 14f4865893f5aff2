"""The guided demo's question: chosen by asking one-shot search and the agent, explained in words, kept per key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.agent import ask
from rag_core.agent.answer import EXTRACTIVE_NOTE, extractive_answer
from rag_core.config import EmbeddingConfig, RAGConfig, Settings
from rag_core.evaluation.questions import Question, QuestionSet, load_golden, normalise
from rag_core.loaders import load_path
from rag_core.retrieval import Retriever
from rag_core.services import open_index
from rag_core.serving import home_demo as showcase
from rag_core.serving.home_demo import (
    Comparison,
    Quote,
    asks_about,
    explain,
    load_showcase,
    pick_showcase,
    quotes_of,
    save_showcase,
    showcase_key,
    submit_showcase,
)
from rag_core.serving.jobs import JobRunner
from rag_core.types import Chunk, Hit

ROOT = Path(__file__).resolve().parents[2]
HASH = RAGConfig(name="demo", embedding=EmbeddingConfig(embedder="hash"))
TWO_PARTS = Question(id="q3", question="What is kept in PostgreSQL and how are metrics stored?", intent="fact",
                     answer_texts=["holds jobs, runs, API keys", "compressed in two-hour blocks"])


def _comparison(one_shot: set[str], agent: set[str], searches: list[str], looks: int = 0) -> Comparison:
    where = {t: "overview.md › Storage" for t in agent}
    return Comparison(TWO_PARTS, TWO_PARTS.targets(), one_shot, agent, where, searches, looks)


def _answered(one_shot_says: list[Quote], agent_says: list[Quote], one_quoted: set[str], agent_quoted: set[str],
              searches: list[str]) -> Comparison:
    return Comparison(TWO_PARTS, TWO_PARTS.targets(), set(one_quoted), set(agent_quoted), {}, searches, 0,
                      one_quoted, agent_quoted, one_shot_says, agent_says)


ROW = Quote("overview.md › Storage", "| metrics | by default, compressed in two-hour blocks |")
OTHER = Quote("overview.md › The coordinator", "```yaml\nIt serves the REST API on port 7420.")


def test_the_words_name_what_each_answer_quotes_built_from_the_answers():
    c = _answered([OTHER], [ROW], set(), {"answer:1"}, ["what is kept", "metrics stored"])
    assert c.answer_gained == ["answer:1"] and c.answer_lost == []
    assert explain(c) == (
        "the agent's answer quotes overview.md › Storage (“| metrics | by default, compressed in two-hour blocks |”) "
        "after 2 searches (“what is kept”, “metrics stored”); one search's answer (top 5 hybrid) quotes "
        "overview.md › The coordinator (“It serves the REST API on port 7420.”), but not "
        "“compressed in two-hour blocks”")


def test_without_a_win_the_words_say_both_answers_quote_as_much():
    c = _answered([ROW], [ROW, OTHER], {"answer:1"}, {"answer:1"}, ["a"])
    assert c.answer_gained == []
    assert explain(c).startswith("both answers quote 1 of the 2 answer part(s): the agent's answer quotes "
                                 "overview.md › Storage (“| metrics | by default, compressed in two-hour blocks |”) "
                                 "and overview.md › The coordinator after 1 search")
    table = Quote("plans.csv", "| plan | limit |\n| --- | --- |\n| Team | 90 days |")
    assert "one search's answer (top 5 hybrid) quotes plans.csv (“| Team | 90 days |”)" in explain(
        _answered([table], [ROW], set(), {"answer:1"}, ["a"]))
    nothing = _answered([], [ROW], set(), set(), ["a"])
    assert "one search's answer (top 5 hybrid) quotes nothing (it says the documents do not answer)" in explain(nothing)


def test_the_rank_puts_what_the_answers_quote_before_what_the_contexts_hold():
    answer_win = _answered([], [ROW], set(), {"answer:1"}, ["a"])
    context_win = _comparison(set(), {"answer:0", "answer:1"}, ["a", "b", "c"])  # only the context holds more
    answer_loss = _answered([ROW], [], {"answer:1"}, set(), ["a", "b", "c", "d"])
    assert answer_win.rank() > context_win.rank() > answer_loss.rank()


def test_quotes_are_cut_at_the_answers_citations_with_their_places():
    hits = [Hit(chunk=Chunk(id="c1", doc_id="d", granularity="paragraph", chunk_type="prose", text="x", start=0,
                            end=1, tokens=1, heading_path=["Guide", "Ports"]),
                score=1.0, source_name="guide.md")]
    answer = f"{EXTRACTIVE_NOTE}\n\n- The port is 7420. [c1]\n- Unknown. [zz]"
    assert quotes_of(answer, hits) == [Quote("guide.md › Ports", "- The port is 7420.")]


def test_without_any_answer_win_the_best_tie_is_chosen_and_says_so(monkeypatch, data_dir):
    ties = iter([_answered([ROW], [ROW], {"answer:1"}, {"answer:1"}, ["a", "b"]),
                 _answered([], [], set(), set(), ["a"])])
    monkeypatch.setattr(showcase, "compare", lambda *args: next(ties))
    two = QuestionSet(name="two", kind="upload", questions=[TWO_PARTS, TWO_PARTS])
    chosen = pick_showcase(two, None, HASH, Settings(data_dir=data_dir))
    assert chosen is not None and not chosen.agent_wins and chosen.agent_quoted == chosen.one_shot_quoted == 1
    assert chosen.why.startswith("both answers quote 1 of the 2 answer part(s)")


@pytest.fixture
def sample_index(data_dir):
    settings = Settings(data_dir=data_dir)
    docs = [load_path(p) for p in sorted((ROOT / "samples").glob("*.md"))]
    index = open_index(HASH, settings)
    index.ingest(docs)
    return index, settings


def test_the_chosen_golden_question_is_one_where_the_agents_answer_quotes_what_one_shots_does_not(sample_index):
    index, settings = sample_index
    golden = load_golden()
    chosen = pick_showcase(golden, index, HASH, settings)
    assert chosen is not None and chosen.questions_compared == len(golden.questions) and chosen.agent_wins
    question = next(q for q in golden.questions if q.id == chosen.question_id)
    # What the Agent Playground will show side by side, answered again through the public functions.
    agent = ask(question.question, index, HASH, settings, policy="offline")
    one_shot = Retriever(index, HASH.retrieval.one_shot(), settings).retrieve(question.question)
    one_answer = extractive_answer(question.question, one_shot.hits).text
    only_agent = [a for a in question.answer_texts if normalise(a) in normalise(agent.answer)
                  and normalise(a) not in normalise(one_answer)]
    assert only_agent and chosen.agent_quoted > chosen.one_shot_quoted
    assert chosen.why.startswith("the agent's answer quotes ") and "one search's answer (top 5 hybrid)" in chosen.why
    # The places named are the places each answer cites.
    cited = {h.chunk.id: h for h in agent.context_hits}
    first_place = chosen.why.removeprefix("the agent's answer quotes ").split(" (“")[0]
    assert any(first_place.startswith(cited[c].source_name) for c in agent.citations if c in cited)


def test_no_choice_when_the_documents_do_not_answer_the_questions(data_dir):
    settings = Settings(data_dir=data_dir)
    index = open_index(HASH, settings)
    index.ingest([load_path(ROOT / "samples" / "changelog.md")])
    other = QuestionSet(name="elsewhere", kind="upload", questions=[
        Question(id="x", question="What is the boiling point of tungsten?", answer_texts=["5,555 °C"])])
    assert pick_showcase(other, index, HASH, settings) is None


def test_the_choice_runs_as_a_job_and_is_kept_per_key(sample_index):
    index, settings = sample_index
    golden = QuestionSet(name="golden", kind="golden", questions=load_golden().questions[:12])
    key = showcase_key(golden, index.documents(), HASH)
    assert load_showcase(settings.data_dir, key) == (False, None)
    runner = JobRunner(settings.data_dir)
    job = runner.wait(submit_showcase(runner, golden, index, HASH, settings, key).id, 120)
    assert job.state == "done" and job.kind == "demo" and job.steps_done == 12
    chosen, found = load_showcase(settings.data_dir, key)
    assert chosen and job.result == (found.question_id if found else "")
    assert showcase_key(golden, [], HASH) != key  # other index contents: chosen again
    hot = [{**row, "expires_in_s": 12.5} for row in index.documents()]
    assert showcase_key(golden, hot, HASH) == key  # a changing field is no other content
    assert asks_about(golden, index.documents()) and not asks_about(golden, [{"name": "mine.md"}])
    save_showcase(settings.data_dir, "other", None)
    assert load_showcase(settings.data_dir, "other") == (True, None) and load_showcase(settings.data_dir, key)[0]
