"""AppTest of Evaluate's "Draft questions" tab: a real drafting job over stored documents, the review table (keep,
edit, drop), saving a named set, running it like any set, and the bench's agreement figure beside its results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.documents import DocumentStore
from rag_core.evaluation import agreement
from rag_core.evaluation.question_sets import QuestionSetStore
from rag_core.evaluation.results import ResultsStore
from rag_core.jobs import runner_for
from rag_core.loaders import load_path
from tests.app.apptest_helpers import finish_jobs, page_app

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "evaluate.py")
HASH_CONFIG = RAGConfig(name="draft-test", embedding=EmbeddingConfig(embedder="hash"))


@pytest.fixture
def docs(data_dir):
    store = DocumentStore(data_dir)
    for name in ("configuration.md", "operations.md", "troubleshooting.md"):
        store.add(load_path(ROOT / "samples" / name))
    return store


@pytest.fixture
def figure(tmp_path, monkeypatch):
    path = tmp_path / "draft_agreement.json"
    path.write_text(json.dumps({"tau": 0.71, "tau_by_seed": {"0": 0.66, "1": 0.76},
                                "corpus": "FastAPI docs (155 Markdown files)", "method": "offline",
                                "drafted": 50, "configs": [{}] * 12, "human_set": "fastapi_docs_qa (80 questions)",
                                "command": "python -m bench drafted", "measured": "2026-12-02"}))
    monkeypatch.setattr(agreement, "AGREEMENT_PATH", path)
    return path


def _app() -> AppTest:
    return page_app(PAGE, HASH_CONFIG)


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label.startswith(label))


def _draft(at: AppTest, n: int = 8) -> str:
    at.number_input(key="draft_n").set_value(n)
    _button(at, "Draft questions from your documents").click()
    at.run()
    assert not at.exception, at.exception
    job = runner_for_page().jobs(limit=1)[0]
    assert job.kind == "draft" and job.title == f"Drafting {n} questions from 3 documents"
    finish_jobs(at)
    assert not at.exception, at.exception
    return runner_for_page().get(job.id).result


def runner_for_page():
    from rag_core.config import get_settings

    return runner_for(get_settings().data_dir)


def test_draft_review_save_and_run_a_drafted_set(docs, data_dir, figure):
    at = _app().run()
    assert not at.exception
    assert any("Kendall's τ = 0.71 on average over 2 drafted sets (0.66, 0.76)" in i.value.replace("\\", "")
               and "FastAPI docs" in i.value for i in at.info)  # on the draft tab
    key = _draft(at)
    assert key and any(m.value.startswith("**Drafted 8 questions**") for m in at.markdown)
    assert any("keyword-leaning" in c.value for c in at.caption)
    draft = QuestionSetStore(data_dir).load_draft(key)
    questions = draft["questions"]
    assert len(questions) == 8
    # review: drop the first question, reword the second (the editor's own state, as a person's edits set it)
    editor_key = f"draft_editor_{key}"
    at.session_state[editor_key] = {"edited_rows": {0: {"keep": False}, 1: {"question": "Reworded by a reviewer?"}},
                                    "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, at.exception
    at.text_input(key=f"draft_name_{key}").input("my-set")
    _button(at, "Save 7 questions as a question set").click()
    at.run()
    assert not at.exception, at.exception
    saved = QuestionSetStore(data_dir).load("my-set")
    assert [q.id for q in saved.questions] == [q.id for q in questions[1:]]
    assert saved.questions[0].question == "Reworded by a reviewer?"
    assert saved.questions[0].evidence == questions[1].evidence and "keyword-leaning" in saved.source

    # run it like the other sets: the saved set is a question-set source
    at.radio(key="eval_source").set_value("Saved question sets")
    at.run()
    assert not at.exception
    assert any("my-set" in c.value.replace("\\", "") and "7 questions" in c.value for c in at.caption)
    at.multiselect(key="eval_strategies").set_value(["keyword"])
    _button(at, "Run evaluation").click()
    at.run()
    finish_jobs(at)
    assert not at.exception, at.exception
    runs = ResultsStore(data_dir).list()
    assert len(runs) == 1 and runs[0]["question_set"] == "my-set"
    # beside the drafted set's results: the agreement figure, with the corpus it was measured on
    notes = [i.value for i in at.info if "Kendall's τ = 0.71" in i.value]
    assert len(notes) == 2  # the draft tab and the results tab


def test_no_documents_says_what_to_do_and_no_figure_says_so(data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(agreement, "AGREEMENT_PATH", tmp_path / "missing.json")
    at = _app().run()
    _button(at, "Draft questions from your documents").click()
    at.run()
    assert not at.exception
    assert any("No documents are loaded yet" in w.value for w in at.warning)
    assert not runner_for_page().jobs(limit=5)
    assert any("has not been measured here yet" in c.value for c in at.caption)


def test_saved_sets_source_without_sets(data_dir):
    at = _app().run()
    at.radio(key="eval_source").set_value("Saved question sets")
    at.run()
    assert not at.exception
    assert any("No saved question set yet" in i.value for i in at.info)
