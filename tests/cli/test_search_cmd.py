"""``search`` flag values are checked before the collection is opened, and errors name the flag; ``--config NAME``
takes a saved configuration's retrieval settings, which single flags override; help shows RetrievalConfig's
defaults."""

from __future__ import annotations

import json

import pytest

from rag_core.cli import main
from rag_core.config import RetrievalConfig


@pytest.mark.parametrize("flag, value", [("--max-k", "0"), ("--budget", "-1"), ("--min-confidence", "5")])
def test_bad_values_name_the_flag(capsys, flag, value):
    assert main(["search", "rotate key", "--collection", "not-there", flag, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag}: ") and err.count("\n") == 1, err


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _help(capsys, command: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([command, "--help"])
    assert exit_info.value.code == 0
    return " ".join(capsys.readouterr().out.split())  # argparse wraps lines wherever it likes


@pytest.fixture
def saved_keyword_config(tmp_path, capsys):
    """A collection built with the hash embedder, and a saved configuration whose chunking and embedder differ
    from the collection's (they must not matter: only its retrieval settings are used)."""
    doc = tmp_path / "guide.md"
    doc.write_text("# Keys\n\nTo rotate the API key, open Settings and press Rotate.\n\n# Billing\n\n"
                   "Business extra runs cost 3 USD per 100,000.\n")
    assert main(["ingest", str(doc), "--collection", "cli-config", "--embedder", "hash"]) == 0
    saved = tmp_path / "kw.json"
    saved.write_text(json.dumps({"name": "kw", "retrieval": {"strategy": "keyword", "initial_k": 5, "max_k": 7},
                                 "agent": {"max_retrievals": 1, "context_budget": 900},
                                 "chunking": {"max_tokens": 64, "overlap": 8}, "embedding": {"embedder": "minilm"}}))
    assert main(["config", "import", str(saved)]) == 0
    capsys.readouterr()
    return "kw"


def test_help_defaults_are_retrieval_configs(capsys):
    text = _help(capsys, "search")
    defaults = RetrievalConfig()
    for phrase in (f"initial k (default {defaults.initial_k})", f"may reach (default {defaults.max_k})",
                   f"searched first (default {defaults.granularity})",
                   f"stops widening (default {defaults.min_confidence})",
                   f"formatted context (default {defaults.token_budget})"):
        assert phrase in text, (phrase, text)
    assert "--config NAME" in text and "chunking and embedder are not used" in text


def test_config_sets_the_retrieval_and_flags_override_it(capsys, saved_keyword_config):
    query = ["search", "rotate key", "--collection", "cli-config", "--json"]
    code, out, err = _run(capsys, *query, "--config", saved_keyword_config)
    assert code == 0, err
    data = json.loads(out)
    assert data["config_name"] == "kw" and data["embedder"].startswith("hash")  # the collection's own embedder
    assert (data["config"]["strategy"], data["config"]["initial_k"], data["config"]["max_k"]) == ("keyword", 5, 7)
    assert data["route"] == "keyword" and data["iterations"][0]["k"] == 5

    code, out, err = _run(capsys, *query, "--config", saved_keyword_config, "--strategy", "vector", "--k", "2")
    data = json.loads(out)
    assert code == 0 and data["route"] == "vector" and data["iterations"][0]["k"] == 2
    assert data["config"]["max_k"] == 7  # the saved max k, not the built-in one

    # --k above the saved max k raises it, as --k above the default max k always did
    data = json.loads(_run(capsys, *query, "--config", saved_keyword_config, "--k", "9")[1])
    assert (data["config"]["initial_k"], data["config"]["max_k"]) == (9, 9)

    # without --config nothing changes: the command's own auto strategy and the built-in k
    data = json.loads(_run(capsys, *query)[1])
    assert data["config_name"] is None and data["config"]["strategy"] == "auto"
    assert (data["config"]["initial_k"], data["config"]["max_k"]) == (RetrievalConfig().initial_k,
                                                                      RetrievalConfig().max_k)


def test_unknown_config_is_one_line_naming_the_saved_ones(capsys, saved_keyword_config):
    # checked before the collection is opened: the collection here does not exist
    code, out, err = _run(capsys, "search", "rotate key", "--collection", "not-there", "--config", "ghost")
    assert (code, out) == (2, "")
    assert err == "error: --config: no saved configuration named 'ghost'; saved: kw\n"
