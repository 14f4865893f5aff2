"""The offline policy end to end on the shipped sample documents (hash embedder): one question per intent and a
comparison. Each must put the expected answer text in the final context and cite it in an extractive answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rag_core.agent import AgentState, ask
from rag_core.agent.answer import EXTRACTIVE_NOTE
from rag_core.config import RAGConfig, Settings
from rag_core.evaluation.questions import normalise
from rag_core.loaders import load_path, sample_paths
from rag_core.services import open_index

REPO = Path(__file__).resolve().parents[2]
CONFIG = RAGConfig(name="agent-samples", embedding={"embedder": "hash"})

CASES = [
    ("fact", "What is CVE-2026-41877?", ["Webhook deliveries no longer follow HTTP redirects"]),
    ("code", "SQL query for the slowest jobs by 95th percentile duration",
     ["percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_seconds)"]),
    ("procedure", "What are the steps to rotate an API key?", ["wrenctl keys rotate key_9TQ2M4 --grace 48h"]),
    ("data", "How much do extra job runs cost on Business?", ["Extra runs cost 3 USD per 100000"]),
    ("comparison", "How do the Team and Enterprise plans differ in how long metrics are kept?",
     ["Set storage.metrics_retention up to 90d", "Longer retention on request"]),
]


@pytest.fixture(scope="module")
def samples(tmp_path_factory):
    settings = Settings(data_dir=tmp_path_factory.mktemp("agent_samples"))
    index = open_index(CONFIG, settings)
    index.ingest([load_path(p) for p in sample_paths()])
    return index, settings


@pytest.mark.parametrize(("intent", "question", "answers"), CASES, ids=[c[0] for c in CASES])
def test_offline_policy_finds_and_cites(samples, intent, question, answers):
    index, settings = samples
    result = ask(question, index, CONFIG, settings, policy="offline")
    context = normalise(result.context_text)
    for answer in answers:
        assert normalise(answer) in context
    assert result.answer.startswith(EXTRACTIVE_NOTE) and result.extractive
    assert result.citations and set(result.citations) <= {h.chunk.id for h in result.context_hits}
    assert result.steps[0].tool == "search" and result.steps[0].granularity == "paragraph"
    assert result.steps[-1].tool == "done" and len(result.steps) <= CONFIG.agent.max_steps
    assert result.context_tokens <= CONFIG.agent.context_budget
    if intent == "comparison":
        assert "comparison question (" in result.steps[0].reason
        assert "search it whole first" in result.steps[0].reason


def test_multi_turn_excludes_what_was_retrieved(samples):
    index, settings = samples
    conversation = AgentState()
    first = ask("What are the steps to rotate an API key?", index, CONFIG, settings, state=conversation)
    second = ask("How much do extra job runs cost on Business?", index, CONFIG, settings, state=conversation)
    assert [t.question for t in conversation.turns] == [first.question, second.question]
    first_ids = {h["chunk_id"] for s in first.steps for h in s.hits}
    second_ids = {h["chunk_id"] for s in second.steps for h in s.hits}
    assert first_ids and not first_ids & second_ids


def test_ask_cli_json(samples, tmp_path):
    index, settings = samples
    env = {"RAG_DATA_DIR": str(settings.data_dir), "PATH": "/usr/bin:/bin", "ANONYMIZED_TELEMETRY": "False"}
    out = subprocess.run([sys.executable, "-m", "rag_core", "ask", "What is CVE-2026-41877?", "--collection",
                          index.name, "--max-steps", "4", "--json"], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["collection"] == index.name and data["policy"] == "offline"
    assert data["steps"][0]["tool"] == "search" and data["steps"][-1]["tool"] == "done"
    assert data["citations"] and "Webhook deliveries no longer follow HTTP redirects" in data["context"]["text"]


def test_ask_cli_errors_are_one_line(samples, monkeypatch, capsys):
    from rag_core.cli import main

    index, settings = samples
    monkeypatch.setenv("RAG_DATA_DIR", str(settings.data_dir))
    assert main(["ask", "x", "--collection", index.name, "--max-steps", "0", "--json"]) == 2
    assert capsys.readouterr().err.startswith("error: --max-steps: Input should be greater than or equal to 1")
    assert main(["ask", "x", "--collection", index.name, "--policy", "llm"]) == 2
    assert "RAG_LLM_BASE_URL" in capsys.readouterr().err
    assert main(["ask", "?!", "--collection", index.name]) == 2
    assert capsys.readouterr().err == "error: the question has no words: use terms that appear in the documents\n"
    assert main(["ask", "x", "--collection", "missing-one"]) == 2
    assert "no collection 'missing-one'" in capsys.readouterr().err


def test_a_multi_part_question_over_budget_keeps_more_places_by_trimming_chunks(samples):
    index, settings = samples
    question = "How do the Team and Enterprise plans differ in how long metrics are kept?"

    def run(trim: bool):
        config = CONFIG.model_copy(update={"agent": CONFIG.agent.model_copy(
            update={"context_budget": 300, "trim_chunks": trim})})
        return ask(question, index, config, settings, policy="offline")

    whole, trimmed = run(False), run(True)
    assert not any("trimmed_from" in h.chunk.metadata for h in whole.context_hits)
    cut = [h for h in trimmed.context_hits if "trimmed_from" in h.chunk.metadata]
    assert cut and all(h.chunk.tokens < h.chunk.metadata["trimmed_from"] for h in cut)
    assert sum(h.chunk.tokens for h in trimmed.context_hits) <= 300
    context = normalise(trimmed.context_text)
    # Here the Team plan's retention row only fits as a row of its trimmed table.
    team_row = "set storage.metrics_retention up to 90d"
    assert team_row in context and team_row not in normalise(whole.context_text)
    assert "trimmed to their most relevant sentences" in trimmed.steps[-1].reason
    for hit in cut:  # every kept piece is the document's own text
        source = index.get(hit.chunk.id).text
        assert all(piece.strip() in source for piece in hit.chunk.text.split("[…]"))


def test_ask_cli_whole_chunks_turns_trimming_off(samples, monkeypatch, capsys):
    from rag_core.cli import main

    index, settings = samples
    monkeypatch.setenv("RAG_DATA_DIR", str(settings.data_dir))
    question = "How do the Team and Enterprise plans differ in how long metrics are kept?"

    def trimmed(*flags):
        assert main(["ask", question, "--collection", index.name, "--budget", "300", "--json", *flags]) == 0
        data = json.loads(capsys.readouterr().out)
        return [c["chunk_id"] for c in data["context"]["trimmed"] if c["tokens"] < c["trimmed_from"]]

    assert trimmed() and trimmed("--whole-chunks") == []


@pytest.mark.slow
def test_a_follow_up_answered_from_the_earlier_context_quotes_what_bears_on_it(tmp_path):
    """The earlier context is ranked for the new question before it is quoted: "rotate the database password" after
    "rotate an API key" (whose context holds the password section too, so no new search) quotes the password
    steps, not the key's. With MiniLM, as the app runs by default."""
    settings = Settings(data_dir=tmp_path)
    config = RAGConfig(name="follow-up")
    index = open_index(config, settings)
    index.ingest([load_path(p) for p in sample_paths()])
    state = AgentState()
    ask("How do I rotate an API key?", index, config, settings, policy="offline", state=state)
    second = ask("How do I rotate the database password?", index, config, settings, policy="offline", state=state)
    assert "ALTER ROLE wrenfall PASSWORD" in second.answer
    assert "Rotation issues a new key" not in second.answer  # the first answer's passage


@pytest.mark.parametrize("question", [
    "How do I rotate an API key?",
    "What is the run history retention on the Enterprise plan, and how do I rotate an API key?",
])
def test_a_how_to_part_is_answered_with_its_steps(samples, question):
    """The answer quotes the procedure's steps with their command, not only a row or sentence that shares the
    question's words (an error table's "past its rotation grace period" row was the quote for the first)."""
    index, settings = samples
    result = ask(question, index, CONFIG, settings, policy="offline")
    answer = normalise(result.answer)
    assert normalise("wrenctl keys rotate key_9TQ2M4 --grace 48h") in answer, result.answer
    assert normalise("3. Update each client to the new key and restart it.") in answer
    if "retention" in question:  # the other part keeps its own quote
        assert "| Enterprise | Run history retention | 730 | days |" in result.answer, result.answer
    assert result.grounded, result.grounding
