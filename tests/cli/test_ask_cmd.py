"""``ask --config NAME``: a saved configuration's retrieval and agent settings, single flags overriding them; an
unknown name or a saved LLM policy without an LLM is one line on stderr; help shows AgentConfig's defaults."""

from __future__ import annotations

import json

import pytest

import rag_core.agent
from rag_core.cli import main
from rag_core.config import AgentConfig

QUESTION = "How do I rotate the API key?"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def collection(tmp_path, capsys):
    doc = tmp_path / "guide.md"
    doc.write_text("# Keys\n\nTo rotate the API key, open Settings and press Rotate.\n\n# Billing\n\n"
                   "Business extra runs cost 3 USD per 100,000.\n")
    assert main(["ingest", str(doc), "--collection", "cli-ask-config", "--embedder", "hash"]) == 0
    capsys.readouterr()
    return "cli-ask-config"


def _save(tmp_path, capsys, config: dict) -> str:
    path = tmp_path / f"{config['name']}.json"
    path.write_text(json.dumps(config))
    assert main(["config", "import", str(path)]) == 0
    capsys.readouterr()
    return config["name"]


@pytest.fixture
def seen_configs(monkeypatch):
    """The RAGConfig each ``ask`` ran with (the real agent still runs)."""
    seen = []
    real_ask = rag_core.agent.ask

    def spy(question, index, config, *args, **kwargs):
        seen.append(config)
        return real_ask(question, index, config, *args, **kwargs)

    monkeypatch.setattr(rag_core.agent, "ask", spy)
    return seen


def test_config_sets_retrieval_and_agent_and_flags_override(tmp_path, capsys, collection, seen_configs):
    # chunking and embedder differ from the collection's (hash): they are not used, nothing is re-chunked
    name = _save(tmp_path, capsys, {"name": "tight", "retrieval": {"strategy": "keyword", "max_k": 7},
                                    "agent": {"max_retrievals": 1, "context_budget": 900},
                                    "chunking": {"max_tokens": 64, "overlap": 8}, "embedding": {"embedder": "minilm"}})
    code, out, err = _run(capsys, "ask", QUESTION, "--collection", collection, "--config", name, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["config_name"] == "tight" and data["policy"] == "offline"
    assert sum(step["tool"] == "search" for step in data["steps"]) <= 1  # the saved retrieval budget
    config = seen_configs[-1]
    assert (config.retrieval.strategy, config.retrieval.max_k) == ("keyword", 7)
    assert (config.agent.max_retrievals, config.agent.context_budget, config.agent.trim_chunks) == (1, 900, True)

    code, out, err = _run(capsys, "ask", QUESTION, "--collection", collection, "--config", name, "--json",
                          "--max-retrievals", "3", "--whole-chunks")
    assert code == 0, err
    config = seen_configs[-1]
    assert (config.agent.max_retrievals, config.agent.context_budget, config.agent.trim_chunks) == (3, 900, False)
    assert config.retrieval.strategy == "keyword"

    # without --config: the built-in defaults, as before
    code, out, _ = _run(capsys, "ask", QUESTION, "--collection", collection, "--json")
    assert code == 0 and json.loads(out)["config_name"] is None
    assert seen_configs[-1].agent == AgentConfig()


def test_unknown_config_is_one_line_naming_the_saved_ones(tmp_path, capsys):
    _save(tmp_path, capsys, {"name": "tight"})
    code, out, err = _run(capsys, "ask", QUESTION, "--collection", "not-there", "--config", "ghost")
    assert (code, out) == (2, "")
    assert err == "error: --config: no saved configuration named 'ghost'; saved: tight\n"


def test_saved_llm_policy_without_an_llm_says_what_to_do(tmp_path, capsys, collection):
    name = _save(tmp_path, capsys, {"name": "with-llm", "agent": {"policy": "llm"}})
    code, out, err = _run(capsys, "ask", QUESTION, "--collection", collection, "--config", name)
    assert (code, out) == (2, "")
    assert err.startswith("error: configuration 'with-llm' uses the llm policy") and "--policy offline" in err
    code, out, err = _run(capsys, "ask", QUESTION, "--collection", collection, "--config", name,
                          "--policy", "offline", "--json")
    assert code == 0 and json.loads(out)["policy"] == "offline"


def test_help_defaults_are_agent_configs(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["ask", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    defaults = AgentConfig()
    for phrase in (f"before answering (default {defaults.max_steps})",
                   f"most searches (default {defaults.max_retrievals})",
                   f"context token budget (default {defaults.context_budget})"):
        assert phrase in text, (phrase, text)
    assert "--config NAME" in text and "chunking and embedder are not used" in text
