"""Multi-part question sets (the pydantic_multihop_qa format): parsing, ``complete`` and the agent's "not found"."""

from __future__ import annotations

import json

import pytest

from rag_core.agent.agent_types import AgentResult
from rag_core.config import RAGConfig
from rag_core.evaluation.questions import Question, QuestionSet, parse_upload
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import Outcome, default_execute, run_evaluation
from rag_core.types import Hit

ROWS = [
    {"id": "pm-001", "type": "comparison", "question": "Dataclass or model?", "answer": "Models dump; extras differ.",
     "evidence": [{"file": "docs/concepts/dataclasses.md", "heading_path": [],
                   "spans": ["dataclasses have no dump methods", "an unused second span of the place"]},
                  {"file": "docs/concepts/models.md", "heading_path": ["Extra data"],
                   "spans": ["extra data is ignored by default"]}]},
    {"id": "pm-002", "type": "bridge", "question": "Why does 10.5 fail?", "answer": "int_from_float.",
     "evidence": [{"file": "docs/errors/validation_errors.md", "heading_path": ["`int_from_float`"],
                   "spans": ["raised when you provide a float for an int"]},
                  {"file": "docs/migration.md", "heading_path": ["Migration guide"],
                   "spans": ["floats with a fractional part are refused"]}]},
    {"id": "pm-n01", "type": "null", "question": "TypeScript interfaces?",
     "answer": "Not answered by the pydantic documentation.", "evidence": []},
]
TEXTS = {"docs/concepts/dataclasses.md": "Note: dataclasses have no dump methods.",
         "docs/concepts/models.md": "By default extra data is ignored by default.",
         "docs/errors/validation_errors.md": "This is raised when you provide a float for an int field.",
         "docs/migration.md": "unrelated migration text"}


def _jsonl(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def test_the_multihop_format_loads_with_types_and_null_questions():
    qs = parse_upload("multihop.jsonl", _jsonl(ROWS))
    first, _, null = qs.questions
    assert qs.types() == {"comparison": 1, "bridge": 1, "null": 1}
    assert first.type == "comparison" and first.targets() == ["place:0", "place:1"]
    assert first.reference_answer == "Models dump; extras differ." and first.answer_texts == []
    assert null.unanswerable and null.targets() == [] and null.evidence == []
    assert null.reference_answer == "Not answered by the pydantic documentation."
    assert not first.unanswerable


def test_the_shared_multihop_dataset_loads(shared_dir):
    path = shared_dir / "datasets" / "pydantic_multihop_qa" / "questions.jsonl"
    qs = parse_upload(path.name, path.read_bytes())
    assert len(qs.questions) == 72 and qs.types()["null"] == 12
    assert sum(len(q.evidence) for q in qs.questions) == 159


@pytest.mark.parametrize(("row", "message"), [
    ({**ROWS[2], "evidence": ROWS[0]["evidence"]}, "line 2: a 'null' question .* must have empty 'evidence'"),
    ({**ROWS[0], "evidence": []}, "line 2: field 'evidence' must be a list of places.*'type': 'null'"),
    ({**ROWS[0], "type": "multi hop!"}, "line 2: field 'type' must be one short word"),
    ({**ROWS[0], "type": ["bridge"]}, "line 2: field 'type' must be text, got list"),
    ({**ROWS[0], "evidence": [{"file": "a.md", "spans": "not a list"}]}, "line 2: evidence place 1: 'spans' must"),
    ({**ROWS[2], "heading": "Intro"}, "line 2: a 'null' question .* takes no 'doc' or 'heading'"),
    ({**ROWS[0], "notes": "x"}, "line 2: unknown field 'notes'"),
])
def test_a_malformed_multipart_line_is_named(row, message):
    with pytest.raises(ValueError, match=message):
        parse_upload("multihop.jsonl", _jsonl([ROWS[1] | {"id": "other"}, row]))


def _hits(fakes, files) -> list[Hit]:
    return [Hit(chunk=fakes.make_chunk(TEXTS[f], doc_id=f, cid=f), score=1.0, source_name=f) for f in files]


def _fake_ask(fakes, script):
    """An ``ask`` returning the context and verdict scripted per question (the agent itself is not run)."""
    def ask(question, index, config, settings, llm=None):
        files, found = script[question]
        hits = _hits(fakes, files)
        answer = "An answer." if found else "The documents do not answer this question."
        return AgentResult(question=question, answer=answer, citations=[h.chunk.id for h in hits][:1], steps=[],
                           context={"tokens": 10}, context_hits=hits, stop_reason="done", policy="offline",
                           extractive=True, grounded=found, found=found)
    return ask


def _run(monkeypatch, fakes, script):
    """Run the three ROWS with a search-only strategy and the agent, both retrieving the files ``script`` names."""
    monkeypatch.setattr("rag_core.evaluation.runner.ask", _fake_ask(fakes, script))
    qs = parse_upload("multihop.jsonl", _jsonl(ROWS))

    def execute(question, strategy, config, index, settings):
        if strategy == "agent":
            return default_execute(question, strategy, config, index, settings)  # the runner's agent path
        ranked = [(hit.chunk, hit.source_name) for hit in _hits(fakes, script[question][0])]
        return Outcome(ranked=ranked, context_tokens=10, steps=1)

    return run_evaluation(qs, [RAGConfig(name="base")], ["vector", "agent"], index_factory=lambda c: fakes.FakeIndex(),
                          execute=execute)


def test_complete_and_said_not_found_from_agent_results(monkeypatch, fakes):
    run = _run(monkeypatch, fakes, {
        "Dataclass or model?": (["docs/concepts/models.md", "docs/concepts/dataclasses.md"], True),  # both places
        "Why does 10.5 fail?": (["docs/errors/validation_errors.md", "docs/migration.md"], False),  # one; "not found"
        "TypeScript interfaces?": (["docs/migration.md"], False),  # unanswerable, and the agent says so
    })
    by = {(r["strategy"], r["question_id"]): r for r in run.records}
    assert by["agent", "pm-001"]["metrics"]["complete"] == 1.0 and by["agent", "pm-001"]["type"] == "comparison"
    assert by["agent", "pm-002"]["metrics"]["complete"] == 0.0 and by["agent", "pm-002"]["metrics"]["recall@10"] == 0.5
    assert by["agent", "pm-n01"]["metrics"] == {"said_not_found": 1.0}  # no recall on an unanswerable question
    assert by["vector", "pm-n01"]["metrics"] == {}
    summary = {row["strategy"]: row for row in run.summary}
    agent, vector = summary["agent"], summary["vector"]
    assert (agent["complete"], agent["recall@10"], agent["hit@1"]) == (0.5, 0.75, 1.0)  # over the 2 answerable
    assert (agent["said_not_found"], agent["false_not_found"], agent["questions"]) == (1.0, 0.5, 3)
    assert "said_not_found" not in vector and "false_not_found" not in vector and vector["complete"] == 0.5
    types = {(r["strategy"], r["type"]): r for r in run.by_type}
    assert types["agent", "null"]["said_not_found"] == 1.0 and "complete" not in types["agent", "null"]
    assert types["agent", "bridge"]["false_not_found"] == 1.0 and types["agent", "comparison"]["complete"] == 1.0


def test_an_agent_that_answers_an_unanswerable_question_fails_it(monkeypatch, fakes):
    run = _run(monkeypatch, fakes, {
        "Dataclass or model?": (["docs/concepts/models.md"], True),
        "Why does 10.5 fail?": (["docs/migration.md"], True),
        "TypeScript interfaces?": (["docs/migration.md"], True),
    })
    agent = next(row for row in run.summary if row["strategy"] == "agent")
    assert (agent["said_not_found"], agent["false_not_found"], agent["complete"]) == (0.0, 0.0, 0.0)


def test_a_multipart_run_round_trips_through_the_store_with_types_and_evidence(monkeypatch, fakes, tmp_path):
    run = _run(monkeypatch, fakes, {q["question"]: (["docs/migration.md"], True) for q in ROWS})
    store = ResultsStore(tmp_path)
    store.save(run)
    loaded = store.load(run.id)
    assert loaded.summary == run.summary and loaded.by_type == run.by_type
    questions = QuestionSet.from_dict(loaded.question_set).questions  # a bundle's replay judges by these
    assert [q.type for q in questions] == ["comparison", "bridge", "null"]
    assert questions[0].evidence == run.question_set["questions"][0]["evidence"]


def test_complete_needs_every_answer_of_the_question(fakes):
    qs = QuestionSet(name="t", kind="upload", questions=[
        Question(id="q1", question="What port?", answer_texts=["port 8443"]),
        Question(id="q2", question="How to deploy?", answer_texts=["run deploy", "check health"])])
    executor = fakes.ScriptedExecutor({("vector", "What port?"): ["x", "port 8443"],
                                       ("vector", "How to deploy?"): ["run deploy now"]})
    run = run_evaluation(qs, [RAGConfig(name="base")], ["vector"], index_factory=lambda c: fakes.FakeIndex(),
                         execute=executor)
    q1, q2 = (r["metrics"] for r in run.records)
    assert q1["complete"] == q1["hit@10"] == 1.0  # one answer: complete is question-level recall
    assert (q2["complete"], q2["hit@10"], q2["recall@10"]) == (0.0, 1.0, 0.5)
    assert "said_not_found" not in q1 and "false_not_found" not in q1
