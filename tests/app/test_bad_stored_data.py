"""Stored data of the wrong shape (a crafted bundle imported by an older version, a hand-edited file) is reported
on the page that lists it and can be deleted there; no page breaks on it."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.evaluation.results import ResultsStore
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from tests.app.apptest_helpers import page_app

PAGES = Path(__file__).resolve().parents[2] / "views"
HASH_CONFIG = RAGConfig(name="bad-data-test", embedding=EmbeddingConfig(embedder="hash"))
BAD_RUN = {"id": "bad-run", "created": "2026-01-02T00:00:00+00:00", "question_set": "oops", "configs": [],
           "strategies": ["hybrid", "agent"], "records": [], "status": "complete"}


def _store_bad_run(data_dir: Path) -> Path:
    path = ResultsStore(data_dir).runs_dir / "bad-run.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(BAD_RUN))
    return path


def test_home_lists_around_a_malformed_run(data_dir):
    _store_bad_run(data_dir)
    at = AppTest.from_file(str(PAGES / "home.py"), default_timeout=60).run()
    assert not at.exception
    assert any("stored evaluation run 'bad-run' is malformed: question_set" in e.value for e in at.error)


def test_evaluate_reports_a_malformed_run_and_deletes_it(data_dir):
    path = _store_bad_run(data_dir)
    at = page_app(str(PAGES / "evaluate.py"), HASH_CONFIG)
    at.run()
    assert not at.exception
    assert any("is malformed: question_set" in e.value and "delete it" in e.value for e in at.error)
    at.button(key="eval_delete_run").click().run()
    assert not at.exception and not path.exists()


def test_documents_reports_a_malformed_document_and_removes_it(data_dir):
    store = DocumentStore(data_dir)
    good = load_bytes("good.md", b"# Good\n\nFine text.\n")
    bad = load_bytes("bad.md", b"# Bad\n\nIts metadata is broken below.\n")
    store.add_many([good, bad])
    path = store.root / f"{bad.id}.json"
    path.write_text(json.dumps({**bad.to_dict(), "metadata": {"warnings": 5}}))
    at = page_app(str(PAGES / "documents.py"), HASH_CONFIG)
    at.run()
    assert not at.exception
    assert at.dataframe[0].value["name"].tolist() == ["good.md"]
    assert any("1 stored document file(s) could not be read" in w.value and "metadata.warnings" in w.value
               for w in at.warning)
    at.button(key="documents_remove_unreadable").click().run()
    assert not at.exception and not path.exists()
    assert not [w for w in at.warning if "could not be read" in w.value]


def test_home_opens_around_a_wrongly_typed_job_status_and_a_stale_running_job(data_dir):
    """Issue 39 item 6 on the landing page: a status file with ``"created": 5`` put a traceback on Home, and a
    'running' job whose PID now names another process (PID 1) showed 'running' forever."""
    from rag_core.serving.jobs import JobRunner, JobStatus
    from tests.app.apptest_helpers import studio_app

    root = JobRunner(data_dir).root
    done = JobStatus(id="good00000001", kind="ingest", title="Indexing 3 notes", collection="c", state="done")
    (root / "bad000000001.json").write_text(json.dumps(dict(done.to_dict(), id="bad000000001", created=5)))
    stale = JobStatus(id="deadbeef0002", kind="ingest", title="Indexing 40 files", collection="c", state="running",
                      pid=1, pid_started="")
    (root / "deadbeef0002.json").write_text(json.dumps(stale.to_dict()))
    at = studio_app(HASH_CONFIG)
    at.run()
    assert not at.exception
    last = next(c.value for c in at.caption if "**Last job:**" in c.value)
    assert "Indexing 40 files — interrupted" in last and "running" not in last
