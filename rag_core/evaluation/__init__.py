"""Evaluation: ranking metrics, question sets, BEIR runs, configuration × strategy runs and their results, and the
demo bundles that carry them to another machine (``bundle``)."""

from rag_core.evaluation.metrics import evaluate_run, hit_at_k, mrr, ndcg_at_k, precision_at_k, recall_at_k
from rag_core.evaluation.questions import (
    BeirDataset,
    Question,
    QuestionSet,
    load_beir,
    load_golden,
    parse_upload,
)

__all__ = [
    "BeirDataset",
    "Question",
    "QuestionSet",
    "evaluate_run",
    "hit_at_k",
    "load_beir",
    "load_golden",
    "mrr",
    "ndcg_at_k",
    "parse_upload",
    "precision_at_k",
    "recall_at_k",
]
