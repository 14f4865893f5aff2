"""The guided demo's question: chosen by asking one-shot search and the agent, explained in words, kept per key."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, Settings
from rag_core.evaluation.questions import Question, QuestionSet, load_golden
from rag_core.evaluation.showcase import (
    Comparison,
    asks_about,
    compare,
    explain,
    load_showcase,
    pick_showcase,
    save_showcase,
    showcase_key,
    submit_showcase,
)
from rag_core.jobs import JobRunner
from rag_core.loaders import load_path
from rag_core.services import open_index

ROOT = Path(__file__).resolve().parents[2]
HASH = RAGConfig(name="demo", embedding=EmbeddingConfig(embedder="hash"))
TWO_PARTS = Question(id="q3", question="What is kept in PostgreSQL and how are metrics stored?", intent="fact",
                     answer_texts=["holds jobs, runs, API keys", "compressed in two-hour blocks"])


def _comparison(one_shot: set[str], agent: set[str], searches: list[str], looks: int = 0) -> Comparison:
    where = {t: "overview.md › Storage" for t in agent}
    return Comparison(TWO_PARTS, TWO_PARTS.targets(), one_shot, agent, where, searches, looks)


def test_a_gain_is_explained_with_what_one_shot_missed_and_how_the_agent_found_it():
    c = _comparison({"answer:0"}, {"answer:0", "answer:1"}, ["what is kept", "what is kept", "metrics stored"], 1)
    assert c.gained == ["answer:1"]
    assert explain(c) == (
        "one-shot search (top 5 hybrid) finds 1 of the 2 answer part(s) and misses “compressed in two-hour blocks”; "
        "the agent finds it in overview.md › Storage after 3 searches (“what is kept”, “metrics stored”) and 1 "
        "zoom/read step(s)")


def test_the_rank_prefers_a_gain_then_a_complete_answer_then_more_steps():
    gain = _comparison(set(), {"answer:0"}, ["a"])
    complete = _comparison({"answer:0", "answer:1"}, {"answer:0", "answer:1"}, ["a", "b", "c"])
    more_steps = _comparison({"answer:0"}, {"answer:0"}, ["a", "b", "c", "d"])
    assert gain.rank() > complete.rank() > more_steps.rank()
    assert explain(complete).startswith("both find the answer, but one-shot search bets on a single query while "
                                        "the agent checks it with 3 searches")


@pytest.fixture
def sample_index(data_dir):
    settings = Settings(data_dir=data_dir)
    docs = [load_path(p) for p in sorted((ROOT / "samples").glob("*.md"))]
    index = open_index(HASH, settings)
    index.ingest(docs)
    return index, settings


def test_the_chosen_golden_question_is_one_where_the_agent_finds_what_one_shot_misses(sample_index):
    index, settings = sample_index
    golden = load_golden()
    chosen = pick_showcase(golden, index, HASH, settings)
    assert chosen is not None and chosen.questions_compared == len(golden.questions)
    question = next(q for q in golden.questions if q.id == chosen.question_id)
    again = compare(question, index, HASH, settings)  # what the Agent Playground will show side by side
    assert again.gained and chosen.agent_found > chosen.one_shot_found
    assert "misses" in chosen.why and "the agent finds" in chosen.why


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
