"""The job line says what is true: the current file with its own chunk count (not the batch's), no ETA before the
job's pace is measured, and a queued job names the job it waits behind and its time left (issue 35.6, 35.8)."""

from __future__ import annotations

from rag_core.serving.jobs import FileStatus, JobStatus
from ui.jobs import files_table, progress_text, waiting_text


def _running(**kw) -> JobStatus:
    job = JobStatus(id="a1", kind="ingest", title="Indexing 3 document(s)", collection="c", state="running", **kw)
    job.files = [FileStatus("1", "docs/a.md", 100, "indexed", chunks=5, seconds=1.5),
                 FileStatus("2", "docs/blog.md", 200, "embedding", chunks=4, embedded=2, seconds=0.7),
                 FileStatus("3", "docs/c.md", 300, "chunked", chunks=9)]
    job.current_done, job.current_total = 2, 40  # the batch's texts (blog.md has 4 chunks of its own)
    return job


def test_the_line_names_the_current_file_with_its_own_chunks_and_waits_for_a_pace():
    job = _running(elapsed_s=30.0)
    text = progress_text(job)
    assert text == "Indexing 3 document\\(s\\): 1/3 files · embedding docs/blog\\.md (2/4 chunks) · estimating…"
    job.pace_from_s, job.pace_from = 10.0, 0.05
    assert progress_text(job).endswith("min left") or progress_text(job).endswith("s left")


def test_files_embedded_before_their_commit_are_counted_apart():
    job = _running(elapsed_s=3.0)
    job.files[2].state, job.files[2].embedded = "embedded", 9
    assert progress_text(job).startswith("Indexing 3 document\\(s\\): 1/3 files (1 more embedded, committed with "
                                         "their batch) · embedding docs/blog\\.md (2/4 chunks)")


def test_each_file_has_its_own_state_and_seconds_in_the_table():
    table = files_table(_running())
    assert list(table["status"]) == ["indexed", "embedding", "chunked, waiting to embed"]
    assert list(table["chunks"]) == ["5", "2/4", "9"] and list(table["seconds"]) == ["1.5", "0.7", ""]


def test_a_queued_job_names_the_one_it_waits_behind_with_its_time_left():
    ahead = _running(elapsed_s=70.0, pace_from_s=10.0, pace_from=0.0)
    queued = JobStatus(id="b2", kind="evaluation", title="Evaluation on 'golden'", collection="c")
    minutes = round(ahead.eta_s / 60)
    assert minutes >= 2
    assert progress_text(queued, ahead) == (f"Evaluation on 'golden' · waiting behind: indexing docs/blog\\.md, "
                                            f"~{minutes} min left")
    assert waiting_text(None) == "waiting for the job before it"
    task = JobStatus(id="c3", kind="evaluation", title="Evaluation on 'golden'", collection="c", state="running")
    assert waiting_text(task) == "waiting behind: Evaluation on 'golden', its time left still being measured"
