"""The guided demo's question is prepared when the documents change: after an ingest job, once per index
contents; a choice under way for contents that changed is cancelled; nothing is done for documents the questions do
not ask about, or while another job still writes the index."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, Settings
from rag_core.evaluation.questions import load_golden
from rag_core.loaders import load_bytes, load_path
from rag_core.services import open_index
from rag_core.serving.home_demo import (
    choose_showcase,
    load_showcase,
    prepare_after_ingest,
    prepare_showcase,
    save_showcase,
    showcase_key,
)
from rag_core.serving.jobs import JobRunner

ROOT = Path(__file__).resolve().parents[2]
HASH = RAGConfig(name="demo", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def world(data_dir):
    """(settings, index with two sample documents, a runner whose worker is held until the test ends)."""
    settings = Settings(data_dir=data_dir)
    index = open_index(HASH, settings)
    index.ingest([load_path(ROOT / "samples" / name) for name in ("configuration.md", "faq.md")])
    runner = JobRunner(data_dir)
    release = threading.Event()
    runner.submit_task(lambda job: "" if release.wait(60) else "", kind="hold", title="hold the worker")
    yield settings, index, runner
    for job in runner.active():
        runner.cancel(job.id)
    release.set()


def test_a_choice_for_earlier_contents_is_cancelled_and_one_for_the_same_contents_not_repeated(world):
    settings, index, runner = world
    golden = load_golden()
    first = prepare_showcase(runner, golden, index, HASH, settings)
    assert first is not None and first.kind == "demo"
    assert first.settings["key"] == showcase_key(golden, index.documents(), HASH)
    assert prepare_showcase(runner, golden, index, HASH, settings) is None  # being chosen: not twice
    index.ingest([load_path(ROOT / "samples" / "troubleshooting.md")])  # the documents change
    second = prepare_showcase(runner, golden, index, HASH, settings)
    assert second is not None and second.settings["key"] != first.settings["key"]
    assert runner._work[first.id].cancel.is_set()  # cancelled: it would choose for documents no longer there
    assert not runner._work[second.id].cancel.is_set()


def test_nothing_is_prepared_once_chosen_or_for_documents_the_questions_do_not_ask_about(world, data_dir):
    settings, index, runner = world
    golden = load_golden()
    save_showcase(data_dir, showcase_key(golden, index.documents(), HASH), None)
    assert prepare_showcase(runner, golden, index, HASH, settings) is None
    assert choose_showcase(golden, index, HASH, settings) == (False, None)  # kept, not chosen again
    other = open_index(RAGConfig(name="other", embedding=EmbeddingConfig(embedder="hash"),
                                 chunking={"max_tokens": 256}), settings)
    other.ingest([load_bytes("mine.md", b"# Mine\n\nNotes the golden questions never ask about.\n")])
    assert prepare_showcase(runner, golden, other, HASH, settings) is None
    assert [job.kind for job in runner.active()] == ["hold"]


def test_the_ingest_job_end_queues_the_choice_unless_another_job_writes_the_index(world, data_dir):
    settings, index, runner = world
    docs = [load_path(ROOT / "samples" / "troubleshooting.md")]
    finish = prepare_after_ingest(runner, index, HASH, settings)
    first = runner.submit_ingest(index, docs, title="first", finish=finish)
    second = runner.submit_ingest(index, docs, title="second", finish=finish)
    finish("done", runner.get(first.id))  # as the worker calls it: the second job still writes this index
    assert [job.kind for job in runner.active()] == ["hold", "ingest", "ingest"]
    runner.cancel(second.id)
    runner._work.pop(second.id)  # (as if it had ended)
    finish("cancelled", runner.get(first.id))  # a cancelled job prepares nothing
    assert [job.kind for job in runner.active()] == ["hold", "ingest"]
    finish("done", runner.get(first.id))
    [demo] = [job for job in runner.active() if job.kind == "demo"]
    assert demo.settings["key"] == showcase_key(load_golden(), index.documents(), HASH)
    assert load_showcase(data_dir, demo.settings["key"]) == (False, None)  # chosen by the job, not here
