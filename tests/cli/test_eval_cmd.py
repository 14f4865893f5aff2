"""``eval questions`` end to end on a tiny hash-embedder collection (real index, retriever and agent)."""

import json

from rag_core.cli import main
from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from tests.fakes import openai_server as fake

GUIDE = """# Wrenfall guide

## Keys

To rotate the API key, open Settings, choose Keys and press Rotate. The old key stops working after one hour.

## Timeouts

The request timeout defaults to 30 seconds. Raise it with `--timeout`.
"""
CONFIG = RAGConfig(name="cli-eval", embedding=EmbeddingConfig(embedder="hash"))


def test_eval_questions_json(tmp_path, capsys):
    open_index(CONFIG, collection="cli-eval").ingest([load_bytes("guide.md", GUIDE.encode())])
    questions = tmp_path / "q.csv"
    questions.write_text("id,question,answer_text,intent\n"
                         "k,How do I rotate the API key?,press Rotate,procedure\n"
                         "t,What is the default request timeout?,defaults to 30 seconds,fact\n")
    config = tmp_path / "c.json"
    config.write_text(CONFIG.model_dump_json())
    code = main(["eval", "questions", str(questions), "--collection", "cli-eval", "--config", str(config),
                 "--strategy", "keyword", "--strategy", "agent", "--per-question", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert (data["questions"], data["status"], data["config"]) == (2, "complete", "cli-eval")
    summary = {row["strategy"]: row for row in data["summary"]}
    assert set(summary) == {"keyword", "agent"}
    assert summary["keyword"]["hit@5"] == 1.0  # two sections, each answer in one of them
    assert summary["agent"]["steps"] >= 1 and summary["agent"]["errors"] == 0
    assert len(data["records"]) == 4 and "trace" not in data["records"][0]


def test_eval_questions_errors(tmp_path, capsys):
    assert main(["eval", "questions", str(tmp_path / "none.csv"), "--collection", "x"]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("question,colour\nQ?,red\n")
    assert main(["eval", "questions", str(bad), "--collection", "x"]) == 2
    assert "bad.csv row 2: unknown field 'colour'" in capsys.readouterr().err
    good = tmp_path / "good.csv"
    good.write_text("question,answer_text\nQ?,x\n")
    hash_config = tmp_path / "c.json"
    hash_config.write_text(CONFIG.model_dump_json())
    assert main(["eval", "questions", str(good), "--collection", "empty-one", "--config", str(hash_config)]) == 2
    assert "no collection 'empty-one'" in capsys.readouterr().err


def test_missing_collection_is_not_created(tmp_path, capsys):
    good = tmp_path / "good.csv"
    good.write_text("question,answer_text\nQ?,x\n")
    hash_config = tmp_path / "c.json"
    hash_config.write_text(CONFIG.model_dump_json())
    assert main(["eval", "questions", str(good), "--collection", "never-made", "--config", str(hash_config)]) == 2
    err = capsys.readouterr().err
    assert "no collection 'never-made'" in err and err.count("\n") == 1
    # The failed evaluation left nothing behind: searching it still says it does not exist.
    assert main(["search", "Q", "--collection", "never-made"]) == 2
    assert "no collection 'never-made'" in capsys.readouterr().err


def test_without_config_the_collection_own_embedder_and_chunking_are_used(tmp_path, capsys):
    doc = tmp_path / "guide.md"
    doc.write_text(GUIDE)
    assert main(["ingest", str(doc), "--collection", "cli-own", "--embedder", "hash", "--max-tokens", "256"]) == 0
    capsys.readouterr()
    questions = tmp_path / "q.csv"
    questions.write_text("question,answer_text\nHow do I rotate the API key?,press Rotate\n")
    code = main(["eval", "questions", str(questions), "--collection", "cli-own", "--strategy", "keyword", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out)["summary"][0]["hit@5"] == 1.0


def _eval_llm_answer(tmp_path, capsys, monkeypatch, collection: str, rows: str, replies: list[str]) -> dict:
    """``eval questions`` (agent, llm-answer policy) of the question ``rows`` over the guide, the fake model
    replying ``replies`` in turn; the records by question id."""
    open_index(CONFIG, collection=collection).ingest([load_bytes("guide.md", GUIDE.encode())])
    questions = tmp_path / "q.csv"
    questions.write_text("id,question,answer_text,intent\n" + rows)
    config = tmp_path / "c.json"
    config.write_text(CONFIG.model_copy(update={"agent": CONFIG.agent.model_copy(
        update={"policy": "llm-answer"})}).model_dump_json())
    with fake.LlamaCppServer([fake.answer(reply) for reply in replies], route="hybrid") as server:
        monkeypatch.setenv("RAG_LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("RAG_LLM_MODEL", "smollm2")
        code = main(["eval", "questions", str(questions), "--collection", collection, "--config", str(config),
                     "--strategy", "agent", "--per-question", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return {r["question_id"]: r for r in json.loads(out)["records"]}


def test_llm_answer_policy_is_scored_by_the_gold_evidence_it_cites(tmp_path, capsys, monkeypatch):
    # the model cites its first document for the first question, nothing at all for the second
    records = _eval_llm_answer(tmp_path, capsys, monkeypatch, "cli-eval-llm",
                               "k,How do I rotate the API key?,press Rotate,procedure\n"
                               "t,What is the default request timeout?,defaults to 30 seconds,fact\n",
                               ["Open Settings and press Rotate [1].", "Nobody knows."])
    assert records["k"]["metrics"]["cited"] == 1.0 and records["k"]["metrics"]["grounded"] == 1.0
    assert records["t"]["metrics"]["cited"] == 0.0 and records["t"]["metrics"]["grounded"] == 0.0
    assert records["k"]["answer"].startswith("Open Settings and press Rotate [")


def test_grounded_metric_is_the_sentence_check_not_a_citation(tmp_path, capsys, monkeypatch):
    # Both answers cite the right document; the second states a number it does not hold (the old metric, "cites a
    # retrieved chunk", scored both 1.0).
    records = _eval_llm_answer(tmp_path, capsys, monkeypatch, "cli-eval-check",
                               "k,What is the default request timeout?,defaults to 30 seconds,fact\n"
                               "t,What is the default request timeout?,defaults to 30 seconds,fact\n",
                               ["The request timeout defaults to 30 seconds [1].",
                                "The request timeout defaults to 429 seconds [1]."])
    assert records["k"]["metrics"]["grounded"] == 1.0 and records["t"]["metrics"]["grounded"] == 0.0
    assert records["t"]["metrics"]["cited"] == 1.0  # it cites the gold evidence; it is still not grounded
