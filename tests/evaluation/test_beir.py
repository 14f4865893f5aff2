import json

import pytest

from rag_core.cli import main
from rag_core.evaluation.beir import evaluate_beir, fuse
from rag_core.evaluation.questions import load_beir
from rag_core.services import open_index

CORPUS = [
    {"_id": "d1", "title": "Aspirin and headaches", "text": "Aspirin relieves tension headaches in adults."},
    {"_id": "d2", "title": "Vitamin C", "text": "Vitamin C does not prevent the common cold."},
    {"_id": "d3", "title": "Sleep", "text": "Short sleep raises the risk of obesity in children."},
    {"_id": "d4", "title": "Coffee", "text": "Coffee intake is linked to lower liver disease risk."},
]
QUERIES = [{"_id": "q1", "text": "aspirin headaches"}, {"_id": "q2", "text": "vitamin c common cold"},
           {"_id": "q3", "text": "sleep obesity children"}]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\nq3\td4\t1\n"


@pytest.fixture
def beir_dir(tmp_path):
    folder = tmp_path / "tinybeir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in CORPUS) + "\n")
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n")
    (folder / "qrels" / "test.tsv").write_text(QRELS)
    return folder


def test_bm25_on_a_tiny_beir_folder(beir_dir):
    report = evaluate_beir(load_beir(beir_dir), "bm25", k=10, open_index=open_index)
    # q1, q2 find their document first; q3 finds d3 first and never d4 (no shared term)
    assert report.run["q1"][0] == "d1" and report.run["q2"][0] == "d2" and report.run["q3"] == ["d3"]
    assert report.metrics["mrr@10"] == 1.0
    assert report.metrics["recall@10"] == pytest.approx((1 + 1 + 0.5) / 3)
    assert report.metrics["queries"] == 3 and report.settings["embedder"] == "hash"
    # a second run reuses the index built by the first
    assert evaluate_beir(load_beir(beir_dir), "bm25", k=10, open_index=open_index).metrics == report.metrics


def test_fuse_rrf_and_weighted():
    rankings = {"vector": [("a", 0.9), ("b", 0.8)], "keyword": [("b", 12.0), ("c", 3.0)]}
    assert fuse(rankings, "rrf", 60, 0.5) == ["b", "a", "c"]
    assert fuse(rankings, "weighted", 60, 1.0) == ["a", "b", "c"]
    assert fuse({"vector": [], "keyword": []}, "rrf", 60, 0.5) == []


def test_cli_eval_beir_json(beir_dir, capsys):
    code = main(["eval", "beir", str(beir_dir), "--retriever", "hybrid", "--embedder", "hash", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"ndcg@10", "recall@10", "recall@100", "mrr@10", "latency_ms"}
    assert data["retriever"] == "hybrid" and data["settings"]["fusion"] == "rrf" and data["queries"] == 3


def test_cli_eval_beir_errors(tmp_path, capsys):
    assert main(["eval", "beir", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_runner_on_a_beir_question_set_uses_the_beir_index(beir_dir):
    from rag_core.config import EmbeddingConfig, RAGConfig
    from rag_core.evaluation.runner import run_evaluation

    question_set = load_beir(beir_dir).question_set()
    assert question_set.source == str(beir_dir.resolve())
    stages = []
    run = run_evaluation(question_set, [RAGConfig(name="h", embedding=EmbeddingConfig(embedder="hash"))],
                         ["keyword"], progress=lambda d, t, label: stages.append(label), open_index=open_index)
    assert run.status == "complete" and len(run.records) == 3
    assert any(label.startswith("indexing the tinybeir corpus") for label in stages)
    by_question = {r["question_id"]: r for r in run.records}
    assert by_question["q1"]["hits"][0]["chunk_id"] == "d1" and by_question["q1"]["metrics"]["mrr"] == 1.0
