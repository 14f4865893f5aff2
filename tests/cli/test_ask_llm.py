"""``ask`` with an LLM: an endpoint that cannot be reached (the offline fallback's answer is still printed, the
failure is one line on stderr, exit 2); ``--policy llm-answer`` against a llama.cpp-like server (cited, grounded);
an uncited answer flagged as ungrounded in the output."""

from __future__ import annotations

import json

from rag_core.cli import main  # noqa: E402
from tests.fakes import openai_server as fake


def test_unreachable_llm_is_reported_and_exit_is_non_zero(tmp_path, capsys, monkeypatch):
    doc = tmp_path / "guide.md"
    doc.write_text("# Keys\n\nTo rotate the API key, open Settings and press Rotate.\n")
    assert main(["ingest", str(doc), "--collection", "cli-llm", "--embedder", "hash"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("RAG_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RAG_LLM_MODEL", "x")
    monkeypatch.setenv("RAG_LLM_MAX_RETRIES", "0")
    code = main(["ask", "How do I rotate the API key?", "--collection", "cli-llm", "--policy", "llm", "--json"])
    out, err = capsys.readouterr()
    assert code == 2
    data = json.loads(out)  # the fallback answer is still there, with the fallback recorded
    assert data["fallback"] and data["answer"]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "127.0.0.1:9" in errors[0] and "offline" in errors[0]

    # The offline policy does not use the LLM: it still succeeds with the same settings.
    assert main(["ask", "How do I rotate the API key?", "--collection", "cli-llm", "--json"]) == 0


def _ingest(tmp_path, capsys, name):
    doc = tmp_path / "guide.md"
    doc.write_text("# Keys\n\nTo rotate the API key, open Settings and press Rotate.\n\n# Billing\n\n"
                   "Business extra runs cost 3 USD per 100,000.\n")
    assert main(["ingest", str(doc), "--collection", name, "--embedder", "hash"]) == 0
    capsys.readouterr()


def test_llm_answer_policy_cites_and_says_grounded(tmp_path, capsys, monkeypatch):
    _ingest(tmp_path, capsys, "cli-answer")
    with fake.LlamaCppServer([fake.answer("Open Settings and press Rotate [1].")], route="hybrid") as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM_MODEL", "smollm2")
        code = main(["ask", "How do I rotate the API key?", "--collection", "cli-answer", "--policy", "llm-answer",
                     "--json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 0 and data["policy"] == "llm-answer" and data["extractive"] is False
    assert data["grounded"] is True and data["grounding"].startswith("grounded: 1 sentence(s)")
    assert data["unsupported"] == [] and [c["source"] for c in data["citation_sources"]] == ["model"]
    assert data["citations"] and data["answer"] == f"Open Settings and press Rotate [{data['citations'][0]}]."
    assert data["warnings"] == [] and "error:" not in err


def test_uncited_llm_answer_is_flagged_ungrounded(tmp_path, capsys, monkeypatch):
    _ingest(tmp_path, capsys, "cli-flag")
    invented = {"answer": "Business extra runs cost $1.15 per job.", "citations": []}
    script = [fake.tool_call("done", invented), fake.tool_call("done", invented, call_id="c2")]
    with fake.LlamaCppServer(script, route="hybrid") as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM_MODEL", "smollm2")
        code = main(["ask", "What do Business extra runs cost?", "--collection", "cli-flag", "--policy", "llm"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "$1.15 per job" in out
    assert "grounded: NO (ungrounded: 1 of 1 sentence(s) not supported" in out
    assert "unsupported: “Business extra runs cost $1.15 per job.” — " in out
    assert err == ""  # the server answered under the model name asked for


def test_a_repetition_stop_and_a_time_budget_stop_exit_2_naming_the_cause(tmp_path, capsys, monkeypatch):
    _ingest(tmp_path, capsys, "cli-stops")
    args = ["ask", "How do I rotate the API key?", "--collection", "cli-stops", "--policy", "llm-answer", "--json"]
    monkeypatch.setenv("RAG_LLM_MODEL", "smollm2")
    monkeypatch.setenv("RAG_LLM_MAX_TOKENS_ANSWER", "40")
    # numbers that vary, no spaces inside the repeated piece: "[1:n] [2:n] [3:n] ..."
    numbered = " ".join(f"[{n}:n]" for n in range(1, 60))
    with fake.LlamaCppServer([fake.answer(numbered)], route="hybrid") as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        code = main(args)
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 2 and data["extractive"] and "repeated itself" in data["fallback"]
    assert "error: the model's answer repeated itself" in err and "endpoint" not in err
    assert any(w.startswith("the model's answer was not used") for w in data["warnings"])

    monkeypatch.setenv("RAG_LLM_TIME_BUDGET_S", "1")
    with fake.LlamaCppServer([fake.held_open(3.0)] * 3, route="hybrid") as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        code = main(args)
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert code == 2 and data["fallback"].startswith("the question's time budget (RAG_LLM_TIME_BUDGET_S=1 s) ran out")
    assert "warning: the model's answer was not used: the question's time budget" in err and "LLM failed" not in err
