"""Saved question sets, drafting as a background job, Kendall's τ and the published agreement figure."""

from __future__ import annotations

import json
import os

import pytest
from scipy.stats import kendalltau

from rag_core.evaluation.agreement import kendall_tau, load_agreement
from rag_core.evaluation.draft import draft_questions
from rag_core.evaluation.question_sets import QuestionSetStore, submit_draft
from rag_core.evaluation.schema import parse_question_set
from rag_core.loaders import load_bytes
from rag_core.serving.jobs import runner_for

GUIDE = """# Wrenfall queues

A delivery queue is a durable list of jobs that workers take in order of arrival.

## Retry behaviour

Every job is retried when a worker crashes, up to the value of `retry_limit` set on the queue.
The retries wait longer each time, doubling the pause between two attempts of one job.

## Payload storage

Payloads larger than 256 KB must be stored in the object store and referenced by their address.
"""


@pytest.fixture
def doc():
    return load_bytes("queues.md", GUIDE.encode())


def test_store_saves_lists_loads_and_deletes(data_dir, doc):
    store = QuestionSetStore(data_dir)
    questions = draft_questions([doc], 3, kinds=["single", "null"]).questions
    saved = store.save("team set", questions, label="offline draft", method="offline")
    assert store.list() == ["team set"] and saved.kind == "drafted" and saved.source == "offline draft"
    assert [q.evidence for q in store.load("team set").questions] == [q.evidence for q in questions]
    assert parse_question_set(saved.to_dict()).kind == "drafted"  # a run of it is stored and read back
    store.delete("team set")
    assert store.list() == []
    with pytest.raises(ValueError, match="question set name"):
        store.save("../escape", questions)
    with pytest.raises(ValueError, match="empty"):
        store.save("empty", [])
    with pytest.raises(ValueError, match="no saved question set"):
        store.load("missing")
    assert store.load_draft("../etc") is None and store.load_draft("nope") is None


def test_drafting_job_keeps_its_result_for_review(data_dir, doc):
    runner = runner_for(data_dir)
    job = submit_draft(runner, [doc], data_dir=data_dir, n=3, seed=1)
    assert job.kind == "draft" and job.title == "Drafting 3 questions from 1 documents"
    done = runner.wait(job.id, 60)
    assert done.state == "done" and "3 questions drafted" in done.message and done.steps_done == 3
    draft = QuestionSetStore(data_dir).load_draft(done.result)
    assert len(draft["questions"]) == 3 and draft["summary"]["method"] == "offline"
    with pytest.raises(ValueError, match="no documents are loaded"):
        submit_draft(runner, [], data_dir=data_dir)
    with pytest.raises(ValueError, match="between 1 and 500"):
        submit_draft(runner, [doc], data_dir=data_dir, n=0)


def test_kendall_tau_matches_scipy_with_ties():
    for x, y in (([1, 2, 3, 4], [1, 2, 3, 4]), ([1, 2, 3, 4], [4, 3, 2, 1]), ([0.5, 0.5, 0.7, 0.1, 0.9],
                                                                          [0.2, 0.3, 0.3, 0.1, 0.8])):
        assert kendall_tau(x, y) == pytest.approx(kendalltau(x, y)[0])
    assert kendall_tau([1, 1, 1], [1, 2, 3]) == 0.0
    with pytest.raises(ValueError):
        kendall_tau([1], [1])


def test_load_agreement(tmp_path):
    path = tmp_path / "a.json"
    assert load_agreement(path) is None
    path.write_text("not json")
    assert load_agreement(path) is None
    path.write_text(json.dumps({"tau": 0.6, "corpus": "FastAPI docs"}))
    assert load_agreement(path)["tau"] == 0.6
    path.write_text(json.dumps({"tau": "high"}))
    assert load_agreement(path) is None


def test_drafts_wait_for_review_until_saved_or_discarded(data_dir, doc):
    store = QuestionSetStore(data_dir)
    done, cancelled = draft_questions([doc], 2), draft_questions([doc], 1)
    cancelled.stopped = "cancelled"
    store.save_draft("d1", done)
    store.save_draft("d2", cancelled)
    old = store.root / "drafts" / "d0.json"  # written before drafts recorded when: the file's time stands in
    old.write_text(json.dumps({k: v for k, v in json.loads((store.root / "drafts" / "d1.json").read_text()).items()
                               if k != "created"}))
    os.utime(old, (0, 0))
    (store.root / "drafts" / "broken.json").write_text("{")
    assert [(d["key"], d["questions"], d["state"]) for d in store.drafts()] == [
        ("d2", 1, "cancelled"), ("d1", 2, "done"), ("d0", 2, "done")]
    assert store.drafts()[-1]["created"].startswith("1970-01-01T00:00:00")
    store.mark_draft_saved("d1", "team set")
    assert store.load_draft("d1")["saved_as"] == "team set" and len(store.load_draft("d1")["questions"]) == 2
    store.discard_draft("d2")
    assert [d["key"] for d in store.drafts()] == ["d0"] and store.load_draft("d2") is None
    with pytest.raises(ValueError, match="draft key"):
        store.discard_draft("../sets")
