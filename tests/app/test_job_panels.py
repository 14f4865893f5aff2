"""Background-job panels never hide the page or each other: the sidebar's panel sits below the page's own sidebar
controls and shows one card (the running job) with the queued ones folded into one line; the Documents page shows
every indexing job under way, not only the one this session started last."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.serving.jobs import runner_for
from tests.app.apptest_helpers import finish_jobs, page_app, studio_app

ROOT = Path(__file__).resolve().parents[2]
EXPLORER = str(ROOT / "views" / "chunk_explorer.py")
DOCUMENTS = str(ROOT / "views" / "documents.py")
HASH_CONFIG = RAGConfig(name="hash-test", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def blocked():
    """Three tasks queued on the data directory's runner; the first runs until the test ends."""
    release = threading.Event()
    runner = runner_for(get_settings().data_dir)
    jobs = [runner.submit_task(lambda job: "" if release.wait(120) else "timed out", kind="evaluation",
                               title=f"Task {n}") for n in (1, 2, 3)]
    yield jobs, release
    release.set()
    for job in jobs:
        runner.cancel(job.id)
    finish_jobs()


def test_the_sidebar_jobs_sit_below_the_page_controls_one_card_and_the_queued_folded(data_dir, blocked):
    DocumentStore(data_dir).add(load_bytes("a.md", b"# A\n\nText about a.\n"))
    at = studio_app(HASH_CONFIG)
    at.switch_page(EXPLORER).run()
    assert not at.exception, at.exception
    sidebar = list(at.sidebar)
    kinds = [type(el).__name__ for el in sidebar]
    values = [getattr(el, "value", None) for el in sidebar]
    assert values.index("Configuration A") < values.index("**Background jobs**")  # the page's controls first
    assert kinds.count("Progress") == 1  # one card, not a stack
    [card] = at.sidebar.get("progress")
    assert card.proto.text.startswith("Task 1")
    [queued] = at.sidebar.expander
    assert queued.label == "2 more queued"
    # each says what it waits behind (the running job; its pace not measured yet)
    assert [c.value for c in queued.caption] == [f"Task {n} · waiting behind: Task 1, its time left still being "
                                                 "measured" for n in (2, 3)]
    queued.button[1].click().run()  # each queued job keeps its Cancel button, in the fold
    assert not at.exception
    jobs, release = blocked
    release.set()
    runner = runner_for(data_dir)
    assert [runner.wait(job.id).state for job in jobs] == ["done", "done", "cancelled"]


@pytest.fixture
def gate(monkeypatch):
    """Index.ingest waits until the test opens the gate (so a job stays running while the test looks)."""
    opened, entered = threading.Event(), threading.Event()
    original = Index.ingest

    def gated(self, docs, progress=None, **kwargs):
        entered.set()
        assert opened.wait(60)
        return original(self, docs, progress, **kwargs)

    monkeypatch.setattr(Index, "ingest", gated)
    yield opened, entered
    opened.set()


def _upload(at, *files):
    at.file_uploader(key="documents_uploader").set_value([(n, d, "text/markdown") for n, d in files]).run()
    assert not at.exception, at.exception
    return at


def _page_progress(at) -> list[str]:
    return [p.proto.text for p in at.main.get("progress")]


def test_the_documents_page_keeps_every_running_job_in_view_after_a_conflict(data_dir, gate):
    opened, entered = gate
    at = page_app(DOCUMENTS, HASH_CONFIG)
    at.run()
    _upload(at, ("one.md", b"# One\n\nFirst.\n"), ("two.md", b"# Two\n\nSecond.\n"), ("three.md", b"# Three\n"))
    assert entered.wait(30)  # the three-file job is running
    _upload(at, ("one.md", b"# One again\n\nOther content.\n"))
    at.radio[0].set_value("keep_both")
    at.button(key="conflicts_apply").click().run()
    assert not at.exception, at.exception
    assert len(runner_for(data_dir).active()) == 2
    shown = _page_progress(at)
    assert len(shown) == 2, shown  # the job started before the decision stays in view beside the new one
    assert shown[0].startswith("Indexing 3 document\\(s\\): 0/3 files")
    assert shown[1].startswith("Indexing 1 document\\(s\\): 0/1 files · waiting behind: indexing one\\.md, ")
    opened.set()
    finish_jobs(at)
    finish_jobs(at)
    assert not _page_progress(at)
    assert [s.value.split(" — ")[0] for s in at.success][-2:] == ["Indexing 3 document\\(s\\)",
                                                                  "Indexing 1 document\\(s\\)"]


def test_a_job_card_redraws_less_often_when_many_sessions_are_open(monkeypatch):
    """One session: once a second. Eight sessions that drew a page lately: every 4 s each, 2 redraws a second in
    all (at 1 s each, 8 sessions searching during an ingest had searches that never settled within 180 s)."""
    import time

    from ui import jobs

    monkeypatch.setattr(jobs, "_seen", {})
    sessions = [{} for _ in range(8)]
    monkeypatch.setattr(jobs.st, "session_state", sessions[0])
    assert jobs.refresh_s() == jobs.REFRESH_S == 1.0
    for session in sessions[1:]:
        monkeypatch.setattr(jobs.st, "session_state", session)
        jobs.refresh_s()
    assert jobs.refresh_s() == 8 / jobs.REDRAWS_PER_S == 4.0
    for key in list(jobs._seen)[:6]:  # six of them left more than SEEN_FOR_S ago
        jobs._seen[key] = time.monotonic() - jobs.SEEN_FOR_S - 1
    assert jobs.refresh_s() == 1.0
