"""Evaluation runs and sweeps as background jobs: stored when they end, cancel keeps what was measured."""

from __future__ import annotations

import threading

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, Settings
from rag_core.evaluation.background import submit_evaluation
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.evaluation.results import ResultsStore
from rag_core.loaders import load_bytes
from rag_core.services import open_index
from rag_core.serving.jobs import JobRunner

CONFIG = RAGConfig(name="bg", embedding=EmbeddingConfig(embedder="hash"))
DOCS = [load_bytes("ports.md", b"# Ports\n\nThe API listens on port 8443.\n\n## Health\n\nRun deploy, then check "
                                b"health.\n")]
QSET = QuestionSet(name="tiny", kind="upload", questions=[
    Question(id=f"q{i}", question="Which port does the API listen on?", intent="fact", answer_texts=["port 8443"])
    for i in range(6)])


@pytest.fixture
def settings(data_dir):
    return Settings(data_dir=data_dir)


def test_an_evaluation_job_stores_its_run_and_names_it(settings):
    runner = JobRunner(settings.data_dir)
    job = submit_evaluation(runner, QSET, [CONFIG], ["keyword"], settings=settings, documents=DOCS,
                            index_factory=lambda c: open_index(c, settings))
    assert job.kind == "evaluation" and job.title == "Evaluation on 'tiny': bg × keyword"
    final = runner.wait(job.id, 120)
    assert final.state == "done" and final.steps_done == final.steps_total == 6
    run = ResultsStore(settings.data_dir).load(final.result)
    assert run.status == "complete" and len(run.records) == 6 and run.summary[0]["hit@1"] == 1.0
    assert final.message == f"run {run.id} complete: 6 question runs in {run.elapsed_s:.1f} s"


def test_a_cancelled_job_keeps_the_questions_measured(settings):
    runner = JobRunner(settings.data_dir)
    gate, opened = threading.Event(), threading.Event()

    def factory(config):
        opened.set()
        assert gate.wait(30)
        return open_index(config, settings)

    job = submit_evaluation(runner, QSET, [CONFIG], ["keyword"], settings=settings, documents=DOCS,
                            index_factory=factory, label="sweep")
    assert job.kind == "sweep" and job.title.startswith("Sweep on 'tiny'")
    assert opened.wait(30)
    runner.cancel(job.id)
    gate.set()
    final = runner.wait(job.id, 120)
    assert final.state == "cancelled" and "what was measured is kept" in final.message
    run = ResultsStore(settings.data_dir).load(final.result)
    assert run.status == "cancelled" and run.label == "sweep" and len(run.records) == 0


def test_a_bad_request_is_refused_before_it_is_queued(settings):
    runner = JobRunner(settings.data_dir)
    with pytest.raises(ValueError, match="unknown strategy"):
        submit_evaluation(runner, QSET, [CONFIG], ["psychic"], settings=settings)
    assert runner.jobs() == []
