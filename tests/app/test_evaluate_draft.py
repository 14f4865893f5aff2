"""AppTest of Evaluate's "Draft questions" tab: a real drafting job over stored documents, the review table (keep,
edit, drop), saving a named set, running it like any set, and the bench's agreement figure beside its results."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.evaluation import agreement, question_sets
from rag_core.evaluation.draft import draft_questions
from rag_core.evaluation.draft_text import normalize_ws
from rag_core.evaluation.question_sets import QuestionSetStore
from rag_core.evaluation.results import ResultsStore
from rag_core.loaders import load_path
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.jobs import runner_for
from rag_core.types import Chunk
from tests.app.apptest_helpers import finish_jobs, page_app, studio_app, visit_another_page
from ui.evaluate import draft_view

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "views" / "evaluate.py")
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
                                "drafted": 150, "configs": [{}] * 12, "human_set": "fastapi_docs_qa (80 questions)",
                                "by_size": [{"drafted": 50, "tau": 0.52}, {"drafted": 150, "tau": 0.71}],
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
    assert any("Agreement 0.71, averaged over 2 drafted sets" in i.value.replace("\\", "")
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
    notes = [i.value.replace("\\", "") for i in at.info if "Agreement 0.71" in i.value.replace("\\", "")]
    assert len(notes) == 2  # the draft tab and the results tab
    # and how it depends on the set's size, measured: the draft tab's default is the size that agreed
    assert "Agreement by set size: 50 questions 0.52, 150 questions 0.71" in notes[0]
    assert "draft about 150 questions" in notes[0]


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


def _review_shown(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("**Drafted ")]


def _offered(at: AppTest) -> list[str]:
    """The unsaved drafts the tab offers to resume (their labels, newest first)."""
    box = next((s for s in at.selectbox if s.label.startswith("Unsaved drafts")), None)
    return [] if box is None else list(box.options)


def test_unsaved_drafts_are_offered_after_a_reload_until_saved_or_discarded(docs, data_dir, figure):
    at = _app().run()
    first = _draft(at, 5)
    second = _draft(at, 6)  # this session now reviews the second one
    assert _review_shown(at)[0].startswith("**Drafted 6 questions**")
    result = draft_questions(DocumentStore(data_dir).list(), 3)  # a third, as a cancelled job leaves it
    result.stopped = "cancelled"
    QuestionSetStore(data_dir).save_draft("dcancelled", result)

    # A reload is a new session: nothing under review, the finished drafts offered, newest first.
    fresh = _app().run()
    assert not fresh.exception, fresh.exception
    assert not _review_shown(fresh)
    offered = _offered(fresh)
    assert len(offered) == 3
    assert offered[0].endswith("3 questions · cancelled")
    assert offered[1].endswith("6 questions · done") and offered[2].endswith("5 questions · done")
    assert all(" UTC · " in label for label in offered)  # when it was drafted
    fresh.selectbox(key="draft_resume").set_value(first)
    _button(fresh, "Review this draft").click().run()
    assert not fresh.exception, fresh.exception
    assert _review_shown(fresh)[0].startswith("**Drafted 5 questions**")
    assert len(_offered(fresh)) == 2  # the one under review is not offered again
    fresh.text_input(key=f"draft_name_{first}").input("resumed")
    _button(fresh, "Save 5 questions as a question set").click().run()
    assert not fresh.exception, fresh.exception
    assert QuestionSetStore(data_dir).load("resumed").questions
    fresh.selectbox(key="draft_resume").set_value(second)
    _button(fresh, "Review this draft").click().run()
    assert _review_shown(fresh)[0].startswith("**Drafted 6 questions**")
    _button(fresh, "Discard draft").click().run()
    assert not fresh.exception, fresh.exception
    assert not _review_shown(fresh) and QuestionSetStore(data_dir).load_draft(second) is None

    # Saved and discarded drafts are no longer offered; the saved set stays.
    again = _app().run()
    assert [label.endswith("3 questions · cancelled") for label in _offered(again)] == [True]
    assert QuestionSetStore(data_dir).list() == ["resumed"]


def test_a_draft_ending_while_the_page_draws_it_running_shows_its_review(docs, data_dir, figure, monkeypatch):
    """The Draft tab sees the job running, then it ends before the panel and the sidebar look (the sidebar then
    has no job card to rerun the page with): the panel reruns the page, which shows the review."""
    release = threading.Event()
    drafting = question_sets.draft_questions
    monkeypatch.setattr(question_sets, "draft_questions",
                        lambda *args, **kwargs: drafting(*args, **kwargs) if release.wait(60) else None)
    at = studio_app(HASH_CONFIG)
    at.switch_page("views/evaluate.py").run()
    at.number_input(key="draft_n").set_value(4)
    _button(at, "Draft questions from your documents").click().run()
    assert not at.exception, at.exception
    job = runner_for_page().jobs(limit=1)[0]
    assert job.active and any(p.proto.text.startswith("Drafting 4 questions") for p in at.get("progress"))
    page_look = draft_view._current_job

    def ends_right_after_the_page_looked():
        seen = page_look()
        if seen is not None and seen.active:
            release.set()
            runner_for_page().wait(seen.id, 60)
        return seen

    monkeypatch.setattr(draft_view, "_current_job", ends_right_after_the_page_looked)
    at.run()
    assert not at.exception, at.exception
    assert runner_for_page().get(job.id).state == "done"
    assert _review_shown(at) and _review_shown(at)[0].startswith("**Drafted 4 questions**")


def test_the_set_name_survives_a_visit_to_another_page(docs, data_dir, figure):
    at = studio_app(HASH_CONFIG)
    at.switch_page("views/evaluate.py").run()
    key = _draft(at, 4)
    at.text_input(key=f"draft_name_{key}").input("kept-name").run()
    visit_another_page(at, "views/evaluate.py")
    assert at.text_input(key=f"draft_name_{key}").value == "kept-name"


def test_open_in_chunk_explorer_selects_the_chunk_holding_the_evidence(docs, data_dir, figure):
    open_index(HASH_CONFIG, get_settings()).ingest(docs.list())
    at = studio_app(HASH_CONFIG)
    at.switch_page("views/evaluate.py").run()
    key = _draft(at, 6)
    picked = at.selectbox(key="draft_explore").value
    question = next(q for q in QuestionSetStore(data_dir).load_draft(key)["questions"]
                    if picked.startswith(f"{q.id} · "))
    place = question.evidence[0]
    _button(at, "Open in Chunk Explorer").click().run()
    assert not at.exception, at.exception
    assert at.radio(key="explorer_view").value == "Source"
    doc = next(d for d in docs.list() if d.name == place["file"])
    assert at.selectbox(key="explorer_doc").value == doc.id
    selected = at.session_state["explorer_selected"]
    chunk = next(c for c in open_index(HASH_CONFIG, get_settings()).chunks(doc.id) if c.id == selected)
    assert normalize_ws(place["spans"][0]) in normalize_ws(chunk.text)
    html = "".join(h.proto.body for h in at.get("html"))
    assert 'id="selected-chunk"' in html and "scrollIntoView" in html


def test_evidence_chunk_is_the_smallest_chunk_holding_the_span_whitespace_collapsed():
    def chunk(chunk_id: str, text: str) -> Chunk:
        return Chunk(id=chunk_id, doc_id="d", granularity="paragraph", chunk_type="prose", text=text, start=0,
                     end=len(text), tokens=1)

    section = chunk("section", "## Retries\n\nA job is retried\n  up to `retry_limit` times.\n\nThen it fails.")
    paragraph = chunk("paragraph", "A job is retried\n  up to `retry_limit` times.")
    other = chunk("other", "Then it fails.")
    chunks = [section, paragraph, other]
    assert draft_view.evidence_chunk(chunks, "A job is retried up to `retry_limit`\ntimes.") is paragraph
    assert draft_view.evidence_chunk(chunks, "Then it fails.") is other
    assert draft_view.evidence_chunk(chunks, "Nowhere in these chunks.") is None


def test_trust_note_speaks_plainly_without_paths_or_jargon(docs, data_dir, figure):
    data = json.loads(figure.read_text())
    corpus = "FastAPI docs (155 Markdown files, ../shared/corpora/fastapi_docs)"
    figure.write_text(json.dumps({**data, "corpus": corpus}))
    at = _app().run()
    assert not at.exception
    note = next(i.value.replace("\\", "") for i in at.info if "drafted set" in i.value)
    assert "FastAPI docs (155 Markdown files)" in note and "human-written questions" in note
    assert "../" not in note and "shared/corpora" not in note and "Kendall" not in note and "τ" not in note
