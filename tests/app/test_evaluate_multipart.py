"""AppTest of multi-part question sets on the Evaluate page: loading one, a run with ``complete`` and the agent's
"not found" rates, per-type results, and runs stored before those metrics existed."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.evaluation.results import ResultsStore
from tests.app.apptest_helpers import finish_jobs, page_app
from tests.app.test_evaluate_page import docs  # noqa: F401 - the same two sample documents, as a fixture

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "evaluate.py")
HASH_CONFIG = RAGConfig(name="multipart-test", embedding=EmbeddingConfig(embedder="hash"))
ROWS = [
    {"id": "m-1", "type": "comparison", "question": "Where do settings come from, and what does Wrenfall do?",
     "answer": "Flags, environment, file, defaults; it schedules jobs.",
     "evidence": [{"file": "samples/configuration.md", "heading_path": ["Configuration reference",
                                                                       "Where configuration comes from"],
                   "spans": ["Settings are resolved in this order, and the first source that sets a value wins:"]},
                  {"file": "samples/overview.md", "heading_path": ["Wrenfall overview"],
                   "spans": ["Wrenfall is a self-hosted job scheduler and metrics platform."]}]},
    {"id": "m-2", "type": "procedure", "question": "How do I set a list option from the environment?",
     "answer": "Comma-separated values.",
     "evidence": [{"file": "samples/configuration.md", "heading_path": [],
                   "spans": ["Lists are written as comma-separated values"]}]},
    {"id": "m-n1", "type": "null", "question": "Can Wrenfall <b>export</b> to [Excel](http://x.test/p.png)?",
     "answer": "Not answered by the documents.", "evidence": []},
]




def _jsonl(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.radio(key="eval_source").set_value("Upload CSV/JSONL").run()
    at.file_uploader(key="eval_upload").set_value((name, data, "application/jsonl")).run()
    assert not at.exception, at.exception
    return at


def test_a_multipart_set_loads_with_its_types(data_dir):
    at = _upload(page_app(PAGE, HASH_CONFIG).run(), "multihop.jsonl", _jsonl(ROWS))
    caption = next(c.value for c in at.caption if c.value.startswith("**multihop**"))
    assert "3 questions" in caption and "types: comparison 1, procedure 1, null 1" in caption
    assert "not answered by the documents" in caption
    assert next(b for b in at.button if b.label == "Run evaluation").disabled is False


def test_a_malformed_multipart_file_names_the_line(data_dir):
    bad = {**ROWS[2], "evidence": ROWS[0]["evidence"]}
    at = _upload(page_app(PAGE, HASH_CONFIG).run(), "multihop.jsonl", _jsonl([ROWS[0], bad]))
    errors = [e.value for e in at.error]
    assert any("multihop.jsonl line 2: a 'null' question" in e and "empty 'evidence'" in e for e in errors), errors
    assert next(b for b in at.button if b.label == "Run evaluation").disabled is True


@pytest.mark.usefixtures("docs")
def test_a_multipart_run_reports_complete_and_not_found_rates(data_dir):
    at = _upload(page_app(PAGE, HASH_CONFIG).run(), "multihop.jsonl", _jsonl(ROWS))
    at.multiselect(key="eval_strategies").set_value(["keyword", "agent"])
    next(b for b in at.button if b.label == "Run evaluation").click()
    at.run()
    finish_jobs(at)
    assert not at.exception, at.exception
    (stored,) = ResultsStore(data_dir).list()
    assert stored["status"] == "complete" and stored["records"] == 6
    board = at.tabs[1].dataframe[0].value.set_index("strategy")
    assert {"complete", "said_not_found", "false_not_found"} <= set(board.columns)
    assert math.isnan(board.loc["keyword", "said_not_found"])  # search only: not measured, not a fake 0
    assert 0 <= board.loc["agent", "said_not_found"] <= 1 and 0 <= board.loc["agent", "complete"] <= 1
    run = ResultsStore(data_dir).load(stored["id"])
    assert {r["type"] for r in run.by_type} == {"comparison", "procedure", "null"}
    assert all("recall@10" not in r["metrics"] for r in run.records if r["question_id"] == "m-n1")
    assert at.selectbox(key="eval_im").label == "Per-type metric"
    table = at.dataframe[1].value  # per question: the type column beside the intent
    assert list(table["type"]) == ["comparison", "procedure", "null"]


OLD_RUN = {  # as stored before multi-part sets: no types, no complete / not-found metrics, no summary keys for them
    "id": "old-run", "created": "2026-01-02T00:00:00+00:00",
    "question_set": {"name": "golden", "kind": "golden", "source": "", "questions": [
        {"id": "q1", "question": "What port?", "intent": "fact", "answer_texts": ["8443"]}]},
    "configs": [{"name": "c"}], "strategies": ["hybrid", "agent"], "status": "complete", "elapsed_s": 1.0,
    "records": [
        {"question_id": "q1", "question": "What port?", "intent": "fact", "config": "c", "strategy": strategy,
         "latency_ms": 3.0, "context_tokens": 10, "steps": 1, "route": strategy, "answer": "", "hits": [],
         "trace": {}, "metrics": {"hit@1": 1.0, "hit@3": 1.0, "hit@5": 1.0, "hit@10": 1.0, "recall@5": 1.0,
                                  "recall@10": 1.0, "mrr": 1.0, "ndcg@10": 1.0,
                                  **({"cited": 1.0, "grounded": 1.0} if strategy == "agent" else {})}}
        for strategy in ("hybrid", "agent")],
}


def test_a_run_stored_before_the_new_metrics_still_renders(data_dir):
    path = ResultsStore(data_dir).runs_dir / "old-run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(OLD_RUN))
    at = page_app(PAGE, HASH_CONFIG).run()
    assert not at.exception, at.exception
    board = at.tabs[1].dataframe[0].value
    assert len(board) == 2 and "mrr" in board.columns and "complete" not in board.columns
    assert at.selectbox(key="eval_im").label == "Per-intent metric"
    at.selectbox(key="eval_im").set_value("complete").run()  # a metric this run never measured
    assert not at.exception, at.exception
    assert any(e.label.startswith("c · hybrid — complete –") for e in at.expander)


def test_a_run_lacking_a_metric_keeps_every_control_of_the_page(data_dir):
    """A bundle's run without ``ndcg@10`` (or any metric): the leaderboard, Delete and the Sweep tab still draw."""
    import copy

    run = copy.deepcopy(OLD_RUN)
    run["id"] = "no-ndcg"
    for record in run["records"]:
        record["metrics"] = {"hit@1": 1.0}
    path = ResultsStore(data_dir).runs_dir / "no-ndcg.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run))
    at = page_app(PAGE, HASH_CONFIG).run()
    assert not at.exception, at.exception
    assert list(at.tabs[1].dataframe[0].value.columns)[:4] == ["config", "strategy", "questions", "hit@1"]
    assert at.button(key="eval_delete_run") is not None
    assert len(at.tabs) >= 3  # the Sweep tab is drawn too
