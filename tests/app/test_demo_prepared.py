"""The guided demo is prepared when the documents change, not when Home is opened: the end of an indexing job on
the Documents page queues the choice of step 3's question; Home says truthfully whether the demo is ready or being
prepared (with its progress) and keeps **Ask both** usable meanwhile; loading samples already indexed queues
nothing."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
import streamlit as st

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders import sample_paths
from rag_core.services import open_index
from rag_core.serving import home_demo as showcase
from rag_core.serving.jobs import runner_for
from tests.app.apptest_helpers import finish_jobs, page_app

ROOT = Path(__file__).resolve().parents[2]
HOME = str(ROOT / "views" / "home.py")
DOCUMENTS = str(ROOT / "views" / "documents.py")
HASH_CONFIG = RAGConfig(name="demo", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def switched(monkeypatch):
    """Records ``st.switch_page`` targets: a page run alone has no ``st.navigation`` to switch within."""
    targets: list[str] = []
    monkeypatch.setattr(st, "switch_page", targets.append)
    return targets


def _runner():
    return runner_for(get_settings().data_dir)


def _finish_all(at=None):
    """Wait until no job is left (an ingest job's end queues the demo's; that one is waited for too)."""
    while _runner().active():
        finish_jobs()
    return at.run() if at is not None else None


def _load_samples(switched):
    """The Documents page as Home's step 1 opens it: the samples loaded and queued for indexing."""
    at = page_app(DOCUMENTS, HASH_CONFIG, prefill={"page": "documents", "load_samples": True}).run()
    assert not at.exception, at.exception
    return at


def _step_three(at) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**3. One-shot RAG versus the agent**"))


@pytest.fixture
def gate(monkeypatch):
    """The demo's choice waits at its first question until the test opens the gate (so it stays under way)."""
    opened, entered = threading.Event(), threading.Event()
    original = showcase.compare

    def gated(*args, **kwargs):
        entered.set()
        assert opened.wait(120)
        return original(*args, **kwargs)

    monkeypatch.setattr(showcase, "compare", gated)
    yield opened, entered
    opened.set()


def test_indexing_the_samples_prepares_the_demo_and_home_finds_it_ready(data_dir, switched):
    _load_samples(switched)
    ingest = next(job for job in _runner().active() if job.kind == "ingest")
    _runner().wait(ingest.id, 120)
    kinds = [job.kind for job in _runner().jobs()]
    assert sorted(kinds) == ["demo", "ingest"]  # queued by the ingest job's end, with no page open
    _finish_all()
    jobs_before = len(_runner().jobs())
    at = page_app(HOME, HASH_CONFIG, timeout=60).run()
    assert not at.exception, at.exception
    assert "**Demo ready:**" in _step_three(at) and "chosen among 60 golden questions" in _step_three(at)
    assert not at.button(key="demo_agent").disabled
    assert len(_runner().jobs()) == jobs_before  # Home only reads the choice


def test_home_says_the_demo_is_being_prepared_with_its_progress_and_ask_both_stays_usable(data_dir, switched,
                                                                                           gate):
    opened, entered = gate
    _load_samples(switched)
    assert entered.wait(120)  # the ingest job ended; the demo's job is at its first question
    at = page_app(HOME, HASH_CONFIG, timeout=60).run()
    assert not at.exception, at.exception
    text = _step_three(at)
    assert "**Preparing the demo…**" in text and "Demo ready" not in text
    [bar] = [p for p in at.get("progress") if p.proto.text.startswith("Choosing the demo question")]
    assert "0/60" in bar.proto.text or "waiting" in bar.proto.text or "estimating" in bar.proto.text
    assert not at.button(key="demo_agent").disabled
    at.button(key="demo_agent").click().run()
    assert at.session_state["prefill"] == {"page": "agent", "compare": True}
    assert [job.kind for job in _runner().active()] == ["demo"]  # Home started nothing beside it
    opened.set()
    _finish_all(at)
    assert "**Demo ready:**" in _step_three(at)


def test_loading_samples_already_indexed_queues_nothing(data_dir, switched):
    _load_samples(switched)
    _finish_all()
    before = len(_runner().jobs())
    at = _load_samples(switched)
    assert _runner().active() == [] and len(_runner().jobs()) == before
    [message] = [i.value for i in at.info if i.value.startswith("Samples already indexed")]
    assert message.startswith(f"Samples already indexed: {len(sample_paths())} document(s) with this content are "
                              f"in collection `{open_index(HASH_CONFIG, get_settings()).name}`")
    assert message.endswith("; no job queued.")
    at.button[0].click().run()  # the page's own "Load sample documents" button: the same
    assert not at.exception and _runner().active() == [] and len(_runner().jobs()) == before


def test_loading_samples_twice_while_the_first_job_runs_queues_one_job(data_dir, switched, gate):
    opened, entered = gate
    at = _load_samples(switched)
    at.button[0].click().run()  # "Load sample documents" again before the job has ended
    assert not at.exception
    assert [job.kind for job in _runner().jobs()].count("ingest") == 1
    assert any("being indexed by a job under way" in i.value for i in at.info)
    opened.set()
    _finish_all()
