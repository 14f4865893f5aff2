"""``ask --policy llm`` with an LLM endpoint that cannot be reached: the offline fallback's answer is still
printed (the fallback is recorded in it), and the failure is one line on stderr with exit 2."""

from __future__ import annotations

import json

from rag_core.cli import main


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
