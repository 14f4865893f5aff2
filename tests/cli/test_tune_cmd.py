"""`python -m rag_core tune`: the JSON fields, --save, a bad pin as one line; `ingest --config SAVED`."""

from __future__ import annotations

import json

import pytest

from rag_core.cli import main
from rag_core.cli.tune_cmd import TUNE_STRATEGIES
from rag_core.tuning.space import TUNE_STRATEGIES as ENGINE_STRATEGIES
from tests.fakes.tiny_corpus import ingest_tiny_collection


@pytest.fixture
def tiny_collection(tmp_path):
    return ingest_tiny_collection(tmp_path)


FIELDS = ("best", "current", "best_metrics", "gain", "interval", "p_value", "significant", "recommendation",
          "trials", "pareto", "counts", "seconds", "split", "study", "status", "metric")


def test_tune_prints_the_study_as_json_and_saves_the_best(tiny_collection, capsys):
    name, path, _ = tiny_collection
    capsys.readouterr()
    code = main(["tune", "--collection", name, "--questions", str(path), "--trials", "2", "--budget", "300",
                 "--pin", "chunking.max_tokens=256", "--save", "tuned", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(FIELDS) <= set(out)
    assert out["best"]["name"] == "tuned" and out["best"]["chunking"]["max_tokens"] == 256
    assert out["best"]["retrieval"]["token_budget"] == 300
    assert {"params", "metrics", "state"} <= set(out["trials"][0])
    assert isinstance(out["significant"], bool) and out["counts"]["trials"] == 2
    assert main(["config", "show", "tuned"]) == 0
    assert json.loads(capsys.readouterr().out)["chunking"]["max_tokens"] == 256

    # the saved configuration builds a collection with its chunking
    folder = path.parent / "docs"
    assert main(["ingest", str(folder), "--collection", "rebuilt", "--config", "tuned", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["embedder"] == "hash-384"
    from rag_core.config import get_settings
    from rag_core.stores.collections import read_manifest

    assert read_manifest("rebuilt", get_settings())["chunking"]["max_tokens"] == 256


def test_a_bad_pin_or_an_unknown_saved_config_is_one_line(tiny_collection, capsys):
    name, path, _ = tiny_collection
    capsys.readouterr()
    code = main(["tune", "--collection", name, "--questions", str(path), "--pin", "retrieval.rrf_k=0"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error:") and "rrf_k" in err and "Traceback" not in err
    code = main(["ingest", str(path.parent / "docs"), "--collection", "x2", "--config", "nope"])
    assert code == 2 and "--config" in capsys.readouterr().err


def test_the_cli_offers_the_engines_strategies():
    assert TUNE_STRATEGIES == ENGINE_STRATEGIES


def test_tune_drafts_in_the_style_asked_and_names_the_trial_put_forward(tiny_collection, capsys):
    name, _, _ = tiny_collection
    capsys.readouterr()
    outputs = {}
    for style in ("area", "verbatim"):
        code = main(["tune", "--collection", name, "--draft", "20", "--draft-style", style, "--trials", "2",
                     "--budget", "300", "--seed", str(len(outputs)), "--json"])
        assert code == 0
        outputs[style] = json.loads(capsys.readouterr().out)
    for out in outputs.values():
        assert out["best_trial"] in {t["number"] for t in out["trials"]} and out["chosen_because"]
        assert out["top_trial"] is not None
    # each drafted set carries the agreement figure of its own style (``bench drafted [--style area]``)
    from rag_core.evaluation.agreement import load_agreement

    for style, out in outputs.items():
        figure = load_agreement(style=style)
        assert out["trust"]["tau"] == (figure["tau"] if figure else None)
    with pytest.raises(SystemExit) as refused:  # argparse's one-line refusal
        main(["tune", "--collection", name, "--draft", "20", "--draft-style", "nope"])
    assert refused.value.code == 2 and "--draft-style" in capsys.readouterr().err
