"""The tuner: search chunking and retrieval settings on a question set, prove the winner on held-out questions."""

from rag_core.tuning.models import TrialRecord, TuneProgress, TuneResult, TuneSpec, Validation
from rag_core.tuning.proof import KEEP
from rag_core.tuning.space import KNOBS, Knob, apply, knob, knobs_for, parse_pins
from rag_core.tuning.split import document_of, split_by_document
from rag_core.tuning.study import TuneInputs, open_study, run_study, storage_url, study_name

__all__ = ["KEEP", "KNOBS", "Knob", "TrialRecord", "TuneInputs", "TuneProgress", "TuneResult", "TuneSpec",
           "Validation", "apply", "document_of", "knob", "knobs_for", "open_study", "parse_pins", "run_study",
           "split_by_document", "storage_url", "study_name"]
