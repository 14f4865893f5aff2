"""Our metrics against ir-measures (pytrec_eval underneath) on a real BM25 run over SciFact."""

import pytest

from rag_core.evaluation.beir import evaluate_beir
from rag_core.evaluation.metrics import evaluate_run
from rag_core.evaluation.questions import load_beir
from rag_core.services import open_index


@pytest.mark.slow
def test_scifact_bm25_metrics_equal_ir_measures(shared_dir):
    import ir_measures
    from ir_measures import MRR, R, nDCG

    dataset = load_beir(shared_dir / "datasets" / "scifact")
    report = evaluate_beir(dataset, "bm25", k=10, open_index=open_index)
    assert report.metrics["queries"] == 300
    ours = evaluate_run(report.run, dataset.qrels, ks=(10, 100))
    qrels = [ir_measures.Qrel(qid, doc, rel) for qid, docs in dataset.qrels.items() for doc, rel in docs.items()]
    # scores that reproduce our order exactly (trec_eval sorts by score, then by doc id)
    run = [ir_measures.ScoredDoc(qid, doc, float(len(ranked) - rank))
           for qid, ranked in report.run.items() for rank, doc in enumerate(ranked)]
    theirs = ir_measures.calc_aggregate([nDCG @ 10, MRR @ 10, R @ 100], qrels, run)
    assert round(ours["ndcg@10"], 4) == round(theirs[nDCG @ 10], 4)
    assert round(ours["mrr@10"], 4) == round(theirs[MRR @ 10], 4)
    assert round(ours["recall@100"], 4) == round(theirs[R @ 100], 4)
    # and the run is as good as published BM25 on this split
    assert ours["ndcg@10"] >= 0.665
