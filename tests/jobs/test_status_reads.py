"""Issue 39 item 10: job status reads stay cheap with many sessions polling: a running job's status is copied once
per save and shared, an unchanged status file is parsed once; the job thread runs at a lower CPU priority."""

from __future__ import annotations

import json
import os
import threading
import time

from rag_core.serving import jobs as jobs_module
from rag_core.serving.jobs import WORKER_NICENESS, JobRunner


def test_a_running_status_is_copied_once_per_save_and_shared(data_dir):
    runner = JobRunner(data_dir)
    release, started = threading.Event(), threading.Event()

    def task(handle):
        handle.progress(1, 3, "first")
        started.set()
        release.wait(10)
        return "ok"

    job = runner.submit_task(task, kind="evaluation", title="t")
    assert started.wait(10)
    seen = [runner.get(job.id) for _ in range(5)] + runner.active()
    assert all(s is seen[0] for s in seen)  # eight sessions polling: one copy
    with runner._mutex:  # the worker saves its progress: the next read is a new copy with it
        work = runner._work[job.id]
        work.status.steps_done = 2
    runner._save(work)
    assert runner.get(job.id) is not seen[0] and runner.get(job.id).steps_done == 2
    release.set()
    assert runner.wait(job.id).state == "done"


def test_an_unchanged_status_file_is_parsed_once(data_dir, monkeypatch):
    runner = JobRunner(data_dir)
    job = runner.submit_task(lambda handle: "done", kind="evaluation", title="t")
    runner.wait(job.id)
    parsed = []
    real = jobs_module._STATUS.validate_python
    monkeypatch.setattr(jobs_module, "_STATUS", type("Counting", (), {
        "validate_python": staticmethod(lambda data: parsed.append(1) or real(data))})())
    reader = JobRunner(data_dir)  # another process: only the files (read once at start, for interrupted jobs)
    for _ in range(5):
        assert reader.get(job.id).state == "done"
        assert [s.id for s in reader.jobs()] == [job.id]
    assert len(parsed) == 1


def test_the_job_thread_runs_at_a_lower_priority(data_dir):
    runner = JobRunner(data_dir)
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def task(handle):
        return str(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    job = runner.submit_task(task, kind="evaluation", title="t")
    assert int(runner.wait(job.id).message) == min(19, before + WORKER_NICENESS)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # the caller's is unchanged


def test_progress_held_back_by_the_throttle_is_written_soon_after_even_if_the_task_reports_nothing_more(data_dir):
    """Bug seen in the browser suite: a draft kept 9 questions in 0.02 s, then waited on a slow model; every
    report after the first fell inside the save throttle and the page (and the status file) said 0 of 0 for
    minutes. The last report must reach readers within about one throttle interval."""
    runner = JobRunner(data_dir)
    release, reported = threading.Event(), threading.Event()

    def task(handle):
        runner.get(job_id[0])  # a page polled before the first report (it holds the copy of that save)
        for k in range(1, 10):
            handle.progress(k, 30, f"question {k}")
        reported.set()
        release.wait(10)  # a slow model: no report for a long while
        return "ok"

    job_id = [""]
    gate = threading.Event()

    def gated(handle):
        gate.wait(10)
        return task(handle)

    job = runner.submit_task(gated, kind="draft", title="t")
    job_id[0] = job.id
    gate.set()
    assert reported.wait(10)
    deadline = time.monotonic() + 5 * jobs_module._SAVE_EVERY_S + 2
    while runner.get(job.id).steps_done != 9:
        assert time.monotonic() < deadline, runner.get(job.id)
        time.sleep(0.05)
    status = runner.get(job.id)
    assert (status.steps_done, status.steps_total, status.step_text) == (9, 30, "question 9")
    saved = json.loads((data_dir / "jobs" / f"{job.id}.json").read_text())  # other processes read the file
    assert (saved["steps_done"], saved["state"]) == (9, "running")
    release.set()
    final = runner.wait(job.id)
    time.sleep(2 * jobs_module._SAVE_EVERY_S)  # a late flush never writes an ended job back to running
    saved = json.loads((data_dir / "jobs" / f"{job.id}.json").read_text())
    assert final.state == saved["state"] == "done"
