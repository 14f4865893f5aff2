import json

import pytest

from rag_core.cli import main
from rag_core.evaluation.beir import beir_config, evaluate_beir, open_beir_index, run_queries
from rag_core.evaluation.questions import load_beir
from rag_core.index import Filters
from rag_core.retrieval.fusion import hybrid_weights, rrf_fuse, weighted_fuse
from rag_core.retrieval.retriever import Retriever
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


def test_beir_options_map_to_a_retrieval_config():
    assert [beir_config(name).strategy for name in ("bm25", "dense", "hybrid")] == ["keyword", "vector", "hybrid"]
    weighted = beir_config("hybrid", "weighted", rrf_k=7, weight=0.3)
    assert (weighted.fusion, weighted.rrf_k, weighted.hybrid_weight, weighted.section_weight) == ("weighted", 7, 0.3, 0)
    with pytest.raises(ValueError, match="unknown retriever 'splade'"):
        beir_config("splade")
    with pytest.raises(ValueError, match="unknown fusion 'max'"):
        beir_config("hybrid", "max")


@pytest.mark.parametrize(("retriever", "fusion", "weight"), [
    ("bm25", "rrf", 0.5), ("dense", "rrf", 0.5), ("hybrid", "rrf", 0.5), ("hybrid", "weighted", 0.3)])
def test_beir_ranks_as_the_retriever_over_depth_deep_lists(beir_dir, retriever, fusion, weight):
    # The reference is BEIR's ranking before it went through the Retriever: the index's two lists, depth deep,
    # fused by hand; the published SciFact figures rest on it.
    dataset = load_beir(beir_dir)
    index = open_beir_index(dataset, "hash", open_index=open_index)
    run, _ = run_queries(index, dataset, retriever, depth=3, fusion=fusion, rrf_k=5, weight=weight)
    config = beir_config(retriever, fusion, rrf_k=5, weight=weight)
    for qid, text in dataset.queries.items():
        lists = {"vector": [(c.id, s) for c, s in index.vector_search(text, 3)],
                 "keyword": [(c.id, s) for c, s in index.keyword_search(text, 3)]}
        if retriever != "hybrid":
            expected = [chunk_id for chunk_id, _ in lists["keyword" if retriever == "bm25" else "vector"]]
        elif fusion == "rrf":
            expected = [item.id for item in rrf_fuse(lists, k=5)][:3]
        else:
            expected = [item.id for item in weighted_fuse(lists, hybrid_weights(weight))][:3]
        assert run[qid] == expected
        ranked = Retriever(index, config).ranked(config.strategy, text, 3, Filters(), candidates=3)
        assert run[qid] == [hit.chunk.doc_id for hit in ranked]


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


def test_beir_reports_progress_as_done_total_and_its_stage(beir_dir):
    """One ``Progress`` signature everywhere: BEIR says which stage in the third argument, after the counts."""
    calls = []
    evaluate_beir(load_beir(beir_dir), "bm25", progress=lambda done, total, label="": calls.append(
        (done, total, label)), open_index=open_index)
    assert {label for _, _, label in calls} == {"indexing", "searching"}
    assert all(isinstance(done, int) and isinstance(total, int) and done <= total for done, total, _ in calls)
    assert calls[-1] == (3, 3, "searching")


def test_cli_eval_beir_says_each_stage_on_stderr(beir_dir, capsys):
    assert main(["eval", "beir", str(beir_dir), "--json"]) == 0
    err = capsys.readouterr().err
    assert "searching 3/3" in err and "indexing" in err
