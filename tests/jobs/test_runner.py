"""The background job runner: per-file status, progress and ETA, cancel, persistence, searches during an ingest."""

from __future__ import annotations

import json
import threading

import pytest

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.serving.jobs import JobRunner, JobStatus, format_eta, runner_for
from rag_core.types import Document


class GatedEmbedder:
    """The hash embedder, but each embedding call waits until the test opens the gate."""

    def __init__(self, settings: Settings):
        self.inner = get_embedder("hash", settings, None)
        self.dim, self.id = self.inner.dim, self.inner.id
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def embed_documents(self, texts, progress=None):
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        half = len(texts) // 2
        if progress is not None:
            progress(half, len(texts))
        out = self.inner.embed_documents(texts)
        if progress is not None:
            progress(len(texts), len(texts))
        return out

    def embed_query(self, text):
        return self.inner.embed_query(text)


def _doc(name: str, words: str) -> Document:
    return load_bytes(name, f"# {name}\n\n{words}\n\n## More\n\n{words} again.\n".encode())


@pytest.fixture
def gated(data_dir):
    settings = Settings(data_dir=data_dir)
    embedder = GatedEmbedder(settings)
    return Index.open("jobs-test", settings, embedder), embedder


def test_ingest_job_indexes_each_file_and_says_so(data_dir, gated):
    index, _ = gated
    runner = JobRunner(data_dir)
    docs = [_doc("a.md", "alpha apples"), _doc("b.md", "beta bananas")]
    first = runner.submit_ingest(index, docs, title="2 uploads")
    assert first.state == "queued" and [f.state for f in first.files] == ["queued", "queued"]
    final = runner.wait(first.id)
    assert final.state == "done"
    assert [(f.name, f.state) for f in final.files] == [("a.md", "indexed"), ("b.md", "indexed")]
    assert all(f.chunks > 0 for f in final.files)
    assert final.progress == 1.0 and final.message.startswith("2 indexed")
    assert {row["name"] for row in index.documents()} == {"a.md", "b.md"}
    # persisted: a fresh runner (another process, or after a restart) reads the same status
    assert JobRunner(data_dir).get(first.id).to_dict() == final.to_dict()
    again = runner.wait(runner.submit_ingest(index, docs[:1], title="again").id)
    assert [f.state for f in again.files] == ["unchanged"]


def test_a_file_that_fails_says_why_and_the_others_go_on(data_dir, gated, monkeypatch):
    index, _ = gated
    original = Index.ingest

    def picky(self, docs, progress=None, **kw):
        if docs[0].name == "bad.md":
            raise ValueError("the chunker refused it")
        return original(self, docs, progress, **kw)

    monkeypatch.setattr(Index, "ingest", picky)
    runner = JobRunner(data_dir)
    job = runner.wait(runner.submit_ingest(index, [_doc("bad.md", "x"), _doc("good.md", "y")], title="t").id)
    assert job.state == "done"
    assert [(f.state, f.error) for f in job.files] == [("failed", "the chunker refused it"), ("indexed", "")]


def test_progress_eta_and_searches_answer_from_the_previous_index_meanwhile(data_dir, gated):
    index, embedder = gated
    index.ingest([_doc("old.md", "zebra stripes")])
    embedder.gate.clear()
    embedder.entered.clear()
    runner = JobRunner(data_dir)
    job = runner.submit_ingest(index, [_doc("new.md", "zebra crossing")], title="t")
    assert embedder.entered.wait(10)
    running = runner.get(job.id)
    assert running.state == "running" and running.files[0].state in ("chunking", "embedding")
    # the ingest is blocked inside embedding: searches answer at once from the committed index
    hits = index.keyword_search("zebra", 5)
    assert hits and {index.doc_name(c.doc_id) for c, _ in hits} == {"old.md"}
    embedder.gate.set()
    done = runner.wait(job.id)
    assert done.state == "done"
    assert "new.md" in {index.doc_name(c.doc_id) for c, _ in index.keyword_search("zebra crossing", 5)}


def test_cancel_rolls_back_the_file_in_progress_and_skips_the_rest(data_dir, gated):
    index, embedder = gated
    embedder.gate.clear()
    runner = JobRunner(data_dir)
    job = runner.submit_ingest(index, [_doc(f"d{i}.md", f"word{i}") for i in range(3)], title="t")
    assert embedder.entered.wait(10)
    assert runner.cancel(job.id)
    embedder.gate.set()
    final = runner.wait(job.id)
    assert final.state == "cancelled"
    assert [f.state for f in final.files] == ["cancelled"] * 3
    assert index.documents() == []  # nothing half-written
    assert not runner.cancel(job.id)  # finished: nothing to cancel


def test_queued_jobs_run_in_order_and_a_cancelled_queued_job_never_starts(data_dir, gated):
    index, embedder = gated
    embedder.gate.clear()
    runner = JobRunner(data_dir)
    first = runner.submit_ingest(index, [_doc("one.md", "one")], title="first")
    second = runner.submit_ingest(index, [_doc("two.md", "two")], title="second")
    assert embedder.entered.wait(10)
    assert runner.get(second.id).state == "queued"
    assert {j.id for j in runner.active()} == {first.id, second.id}
    runner.cancel(second.id)
    embedder.gate.set()
    assert runner.wait(first.id).state == "done"
    assert runner.wait(second.id).state == "cancelled"
    assert [row["name"] for row in index.documents()] == ["one.md"]
    assert [j.title for j in runner.jobs()] == ["second", "first"]


def test_a_job_left_running_by_a_dead_process_is_shown_interrupted(data_dir):
    runner = JobRunner(data_dir)
    stale = JobStatus(id="deadbeef0001", kind="ingest", title="old", collection="c", state="running",
                      pid=2**22 + 12345)
    stale.files = []
    (runner.root / "deadbeef0001.json").write_text(json.dumps(stale.to_dict()))
    status = JobRunner(data_dir).get("deadbeef0001")
    assert status.state == "interrupted" and "Run it again" in status.message


def test_eta_follows_the_pace_measured_since_the_job_first_moved():
    """The batch being embedded counts by its texts embedded; the ETA is the pace measured from the first progress
    on (the 4 s before it, e.g. a model load, are not work), and there is none before a measurement."""
    from rag_core.serving.jobs import FileStatus

    status = JobStatus(id="x", kind="ingest", title="t", collection="c", state="running", elapsed_s=10.0)
    status.files = [FileStatus("a", "a", 100, "indexed"), FileStatus("b", "b", 300, "embedding", chunks=4, embedded=2)]
    status.current_done, status.current_total = 1, 2  # the batch's texts (the file's own chunks: 2 of 4)
    assert status.progress == pytest.approx((100 + 300 * 0.95 * 0.5) / 400)
    assert status.eta_s is None  # no pace measured yet
    status.pace_from_s, status.pace_from = 4.0, 0.25
    assert status.eta_s == pytest.approx((1 - status.progress) * 6.0 / (status.progress - 0.25))
    status.pace_from_s, status.pace_from = 9.5, 0.25  # half a second measured: still estimating
    assert status.eta_s is None
    assert format_eta(5.0) == "about 5 s left"
    assert format_eta(None) == "estimating…" and format_eta(600) == "about 10 min left"


def test_runner_for_is_one_per_data_dir(data_dir, tmp_path):
    assert runner_for(data_dir) is runner_for(str(data_dir))
    assert runner_for(tmp_path / "other") is not runner_for(data_dir)


def test_bad_job_id_is_refused(data_dir):
    with pytest.raises(ValueError, match="not a job id"):
        JobRunner(data_dir).get("../etc")


def test_a_task_reports_steps_with_an_eta_keeps_its_result_and_stops_on_cancel(data_dir):
    runner = JobRunner(data_dir)
    gate, reported = threading.Event(), threading.Event()

    def task(job) -> str:
        job.progress(1, 4, "question 1")
        reported.set()
        assert gate.wait(30)
        if job.cancelled():
            job.set_result("partial-run")
            from rag_core.serving.jobs import Cancelled

            raise Cancelled("run partial-run cancelled after 1 of 4; what was measured is kept")
        job.progress(4, 4, "question 4")
        job.set_result("run-1")
        return "run run-1 complete"

    done = runner.submit_task(task, kind="evaluation", title="Evaluation on 'tiny'")
    assert reported.wait(30)
    status = runner.get(done.id)
    assert (status.state, status.steps_done, status.steps_total, status.step_text) == ("running", 1, 4, "question 1")
    assert status.progress == 0.25 and status.files == []
    assert status.pace_from_s >= 0 and status.pace_from == 0.25  # measured from the first step on
    status.elapsed_s = status.pace_from_s + 3.0
    assert status.eta_s is None  # one point: no pace yet
    status.steps_done = 2  # a second step 3 s later: 3 s a step, 2 steps left
    assert status.eta_s == pytest.approx(6.0)
    gate.set()
    final = runner.wait(done.id)
    assert (final.state, final.message, final.result, final.progress) == ("done", "run run-1 complete", "run-1", 1.0)
    saved = json.loads((data_dir / "jobs" / f"{done.id}.json").read_text())
    assert saved["result"] == "run-1" and saved["kind"] == "evaluation"

    gate.clear()
    reported.clear()
    cancelled = runner.submit_task(task, kind="evaluation", title="Evaluation on 'tiny'")
    assert reported.wait(30)
    assert runner.cancel(cancelled.id)
    gate.set()
    final = runner.wait(cancelled.id)
    assert final.state == "cancelled" and final.result == "partial-run"
    assert final.message == "run partial-run cancelled after 1 of 4; what was measured is kept"


def test_a_status_file_with_a_wrong_type_is_ignored_not_a_traceback(data_dir):
    runner = JobRunner(data_dir)
    good = JobStatus(id="good00000001", kind="ingest", title="ok", collection="c", state="done")
    (runner.root / "good00000001.json").write_text(json.dumps(good.to_dict()))
    bad = dict(good.to_dict(), id="bad000000001", created=5)
    (runner.root / "bad000000001.json").write_text(json.dumps(bad))
    assert [s.id for s in JobRunner(data_dir).jobs()] == ["good00000001"]
    assert runner.get("bad000000001") is None


@pytest.mark.parametrize("pid_started", ["", "1"])
def test_a_running_job_whose_pid_now_names_another_process_is_interrupted(data_dir, pid_started):
    # PID 1 is alive (init, or the container's entry point) but never ran this job; "1" is not its start time.
    runner = JobRunner(data_dir)
    stale = JobStatus(id="deadbeef0002", kind="ingest", title="old", collection="c", state="running", pid=1,
                      pid_started=pid_started)
    (runner.root / "deadbeef0002.json").write_text(json.dumps(stale.to_dict()))
    assert JobRunner(data_dir).get("deadbeef0002").state == "interrupted"


def test_a_running_job_of_this_process_from_before_a_restart_is_interrupted(data_dir):
    import os

    runner = JobRunner(data_dir)
    stale = JobStatus(id="deadbeef0003", kind="ingest", title="old", collection="c", state="running",
                      pid=os.getpid(), pid_started="1")  # same PID, another start: the app restarted
    (runner.root / "deadbeef0003.json").write_text(json.dumps(stale.to_dict()))
    assert JobRunner(data_dir).get("deadbeef0003").state == "interrupted"
