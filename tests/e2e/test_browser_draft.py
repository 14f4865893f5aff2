"""Evaluate's "Draft questions" tab in a real browser (Debian chromium via Playwright, marker ``browser``): draft a
small set offline from the loaded documents, review it in the editable table (drop one, reword one, look at the
evidence in the Chunk Explorer and come back), save it as a named set, export it as JSONL, reload, run it as the
evaluation's question set and see the agreement figure beside its results; a second draft, written by a (slow)
model, is cancelled from the page and keeps what it drafted, offered again after a reload until it is discarded.

The data folder is prepared as an earlier session would leave it: the sample documents indexed with the hash
embedder (fast and deterministic) and that configuration active. A local llama.cpp-like server stands in for the
model: the offline drafter takes well under a second on the samples, far too short for a person to press Cancel,
while a model that takes two seconds a section gives the time to.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.serving import index_with_hash_embedder, require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _open, _settle
from tests.fakes import openai_server as fake

pytestmark = pytest.mark.browser

SET_NAME = "browser-drafted"
DRAFT_TAB = "Draft questions"
DRAFT_BUTTON = "Draft questions from your documents"
TAU = "How far to trust a drafted set: "  # the agreement figure's wording (ui/evaluate/draft_view.agreement_note)
ROW_PX = 35  # the data editor's header and row height
# The model's reply to every section: readable, but citing a sentence of no section, so each is checked and
# rejected: the drafting goes on, one section every two seconds, until the time budget or a Cancel.
REPLY = json.dumps({"question": "How do I make the nightly export run faster?",
                    "spans": ["The nightly export runs faster when it is given more workers."], "answer": "x"})
SECONDS_PER_REPLY = 2.0
DRAFTING_PROMPT = "You write test questions"  # the drafting system prompt's first words (draft_llm.SYSTEM_PROMPT)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, data dir, model server) of `streamlit run app.py` on the samples indexed with the hash embedder."""
    require_browser()
    from rag_core.loaders import load_path, sample_paths

    data_dir = tmp_path_factory.mktemp("draft_data")
    index_with_hash_embedder(data_dir, [load_path(path) for path in sample_paths()])
    script = [{**fake.answer(REPLY), "delay": SECONDS_PER_REPLY} for _ in range(100)]
    env = {"RAG_LLM_MODEL": "smollm2", "RAG_LLM_API_KEY": "x",
           # Edits to the source tree while the app runs (other work on this checkout) make Streamlit re-import
           # the changed modules mid-test: a configuration made by the old class then no longer equals the same
           # one made by the new (seen: "built with chunking {…}, not {…}" on identical settings).
           "STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}
    with fake.LlamaCppServer(script) as server, serve_app(data_dir, {**env, "RAG_LLM_BASE_URL": server.base_url}) \
            as url:
        yield url, data_dir, server


def _jobs(data_dir: Path, kind: str) -> list[dict]:
    jobs = [json.loads(p.read_text()) for p in (data_dir / "jobs").glob("*.json")]
    return sorted((j for j in jobs if j["kind"] == kind), key=lambda j: j["created"])


def _wait_job(data_dir: Path, kind: str, timeout_s: float = 600) -> dict:
    """The newest job of ``kind`` once it has ended."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = _jobs(data_dir, kind)
        if jobs and jobs[-1]["state"] not in ("queued", "running"):
            return jobs[-1]
        time.sleep(0.5)
    raise AssertionError(f"no {kind} job ended after {timeout_s} s")


def _drafting_requests(server) -> int:
    return sum(1 for r in server.requests
               if str((r["json"].get("messages") or [{}])[0].get("content", "")).startswith(DRAFTING_PROMPT))


def _panel(page):
    return page.locator('[role="tabpanel"]:visible')


def _tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()
    _settle(page)


def _reload(page) -> None:
    """The browser's reload. On a page's own path Streamlit's front end first asks for ``<path>/_stcore/health``
    and ``host-config`` (404) before the root ones: those two console lines are not the app's."""
    before = len(page.watch.console_errors)
    page.reload()
    _settle(page)
    page.watch.console_errors[before:] = [e for e in page.watch.console_errors[before:]
                                          if "status of 404 (Not Found)" not in e]


def _set_number(page, label: str, value: int) -> None:
    box = _panel(page).locator('[data-testid="stNumberInput"]').filter(has_text=label).locator("input")
    box.fill(str(value))
    box.press("Enter")
    _settle(page)


def _draft(page, n: int) -> None:
    _set_number(page, "Questions", n)
    _panel(page).get_by_role("button", name=DRAFT_BUTTON).click()


# --- the review table (a canvas grid: read through its accessibility cells, edited with the keyboard) ----------

def _editor(page):
    editor = _panel(page).locator('[data-testid="stDataFrame"]').last  # the first one is the rejected candidates'
    editor.scroll_into_view_if_needed()
    return editor


def _cell(editor, column: int, row: int) -> str:
    return editor.locator(f'[data-testid="glide-cell-{column}-{row}"]').text_content()


def _rows(editor) -> list[dict[str, str]]:
    """The table's rows as shown: keep, id, type, intent, question (columns 0-4 of the editor)."""
    rows = []
    while editor.locator(f'[data-testid="glide-cell-1-{len(rows)}"]').count():
        r = len(rows)
        rows.append({"keep": _cell(editor, 0, r), "id": _cell(editor, 1, r), "type": _cell(editor, 2, r),
                     "intent": _cell(editor, 3, r), "question": _cell(editor, 4, r)})
    return rows


def _select_cell(page, editor, row: int, column: int) -> None:
    """Select a cell as a person does: click the row in a read-only column at the right, then arrow keys."""
    box = editor.bounding_box()
    editor.click(position={"x": box["width"] - 60, "y": ROW_PX * (row + 1) + ROW_PX / 2})
    for _ in range(8):  # to the first column (keep), whatever column the click landed in
        page.keyboard.press("ArrowLeft")
    for _ in range(column):
        page.keyboard.press("ArrowRight")


def _drop(page, editor, row: int) -> None:
    _select_cell(page, editor, row, 0)
    page.keyboard.press("Space")
    _settle(page)


def _reword(page, editor, row: int, text: str) -> None:
    _select_cell(page, editor, row, 4)
    page.keyboard.press("Enter")  # opens the cell's editor on its text
    box = page.locator("textarea.gdg-input")
    box.fill(text)
    box.press("Enter")
    _settle(page)


def _save_button(page) -> str:
    labels = [b.inner_text() for b in _panel(page).get_by_role("button").all()]
    return next((label for label in labels if label.startswith("Save ")), "")


def _review_shows(page, dropped: str, reworded: str, text: str) -> None:
    rows = {row["id"]: row for row in _rows(_editor(page))}
    assert rows[dropped]["keep"] == "false", rows[dropped]
    assert rows[reworded]["question"] == text and rows[reworded]["keep"] == "true", rows[reworded]
    assert _save_button(page) == "Save 9 questions as a question set"


def test_draft_review_save_export_reload_and_run(served, page):
    url, data_dir, server = served
    from rag_core.evaluation.question_sets import QuestionSetStore
    from rag_core.evaluation.questions import parse_jsonl
    from rag_core.loaders.document_store import DocumentStore

    _open(page, url, "Evaluate")
    _tab(page, DRAFT_TAB)
    assert TAU in _panel(page).inner_text()  # how far a drafted set can be trusted, before drafting one
    _draft(page, 10)
    _panel(page).get_by_role("button", name="Save 10 questions as a question set").wait_for(timeout=120_000)
    _settle(page)
    job = _wait_job(data_dir, "draft")
    assert job["state"] == "done" and job["title"] == "Drafting 10 questions from 12 documents", job
    draft = json.loads((data_dir / "question_sets" / "drafts" / f"{job['result']}.json").read_text())
    panel = _panel(page).inner_text()
    kinds = draft["summary"]["kinds"]
    assert f"Drafted 10 questions ({', '.join(f'{k} {v}' for k, v in kinds.items())})" in panel, panel[-2000:]
    assert "keyword-leaning" in panel  # the offline drafter says how its questions lean

    # The table shows every drafted question with its kind, all kept to start with.
    editor = _editor(page)
    rows = _rows(editor)
    assert [(r["id"], r["type"], r["question"]) for r in rows] == [
        (q["id"], q["type"], q["question"]) for q in draft["questions"]]
    assert {r["type"] for r in rows} == {"single", "multi-part", "null"}  # null: unanswerable by the documents
    assert all(r["keep"] == "true" for r in rows)
    singles = [i for i, r in enumerate(rows) if r["type"] == "single"]
    dropped, reworded = rows[singles[0]]["id"], rows[singles[1]]["id"]
    text = "Reviewed: " + rows[singles[1]]["question"]
    _drop(page, editor, singles[0])
    _reword(page, _editor(page), singles[1], text)
    _review_shows(page, dropped, reworded, text)

    # The evidence of a question in the Chunk Explorer, then back to the review: what was reviewed is still there.
    with_evidence = next(q for q in draft["questions"] if q["evidence"])
    picker = _panel(page).locator('[data-testid="stSelectbox"]').filter(has_text="See a question's evidence")
    assert picker.locator("input").input_value().startswith(with_evidence["id"] + " · ")
    _panel(page).get_by_role("button", name="Open in Chunk Explorer").click()
    _settle(page)
    assert "/chunk_explorer?" in page.url and "chunk=" in page.url, page.url  # like a citation: on a chunk
    document = page.locator('[data-testid="stSelectbox"]').filter(has_text="Document").first
    place = with_evidence["evidence"][0]
    assert document.locator("input").input_value().startswith(place["file"] + " · ")
    first_line = place["spans"][0].splitlines()[0]
    assert first_line in page.locator('[data-testid="stMain"]').inner_text()  # the evidence, in its document
    # On the Source view, the chunk holding the evidence outlined and scrolled to (not the document's top).
    assert page.locator('[data-testid="stRadio"] label').filter(has_text="Source").locator("input").is_checked()
    selected = page.locator("#selected-chunk")
    selected.wait_for(timeout=30_000)
    page.wait_for_timeout(500)  # the scroll runs as the HTML is drawn
    box, chunk_box = page.locator(".chunk-source").bounding_box(), selected.bounding_box()
    assert box["y"] <= chunk_box["y"] <= box["y"] + box["height"], "the evidence's chunk is not scrolled to"
    outlined = "".join(page.locator('.chunk-source span[style*="outline"]').all_inner_texts())
    assert " ".join(first_line.split()) in " ".join(outlined.split()), outlined[:500]
    _check_clean(page, "draft_evidence_in_explorer")
    page.locator('[data-testid="stSidebarNav"]').get_by_text("Evaluate", exact=True).click()
    _settle(page)
    _tab(page, DRAFT_TAB)
    _review_shows(page, dropped, reworded, text)

    # Save as a named set; export the same questions as JSONL.
    name_box = _panel(page).locator('[data-testid="stTextInput"]').filter(has_text="Question set name").locator("input")
    name_box.fill(SET_NAME)
    name_box.press("Enter")
    _settle(page)
    _panel(page).get_by_role("button", name="Save 9 questions as a question set").click()
    _settle(page)
    assert f"Saved '{SET_NAME}' (9 questions)" in _panel(page).inner_text()
    saved = QuestionSetStore(data_dir).load(SET_NAME)
    assert dropped not in [q.id for q in saved.questions] and len(saved.questions) == 9
    assert next(q for q in saved.questions if q.id == reworded).question == text
    with page.expect_download(timeout=60_000) as download:
        _panel(page).get_by_role("button", name="Export JSONL").click()
    assert download.value.suggested_filename == f"{SET_NAME}.jsonl"
    exported = Path(download.value.path()).read_text(encoding="utf-8")
    records = [json.loads(line) for line in exported.splitlines()]  # every line parses on its own
    assert [r["id"] for r in records] == [q.id for q in saved.questions]
    assert next(r for r in records if r["id"] == reworded)["question"] == text
    assert len(parse_jsonl(exported, f"{SET_NAME}.jsonl")) == 9  # and reads back as a question set
    texts = {doc.name: doc.text for doc in DocumentStore(data_dir).list()}
    spans = [(place["file"], span) for r in records for place in r["evidence"] for span in place["spans"]]
    assert spans and not [s for s in spans if s[1] not in texts[s[0]]], "a span is not verbatim in its document"
    assert any(r["type"] == "null" and r["evidence"] == [] for r in records)
    _check_clean(page, "draft_saved_and_exported")

    # After a reload (a new session) the saved set is a question-set source of the evaluation, and its draft is
    # not offered as an unsaved one.
    _reload(page)
    _tab(page, DRAFT_TAB)
    assert "Unsaved drafts" not in _panel(page).inner_text()
    page.locator('[data-testid="stRadio"]').filter(has_text="Question set").get_by_text(
        "Saved question sets", exact=True).click()
    _settle(page)
    chosen = page.locator('[data-testid="stSelectbox"]').filter(has_text="Saved question set").first
    assert chosen.locator("input").input_value() == SET_NAME
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert f"{SET_NAME}: 9 questions" in main, main[:2000]

    # Run it; beside its results the agreement figure says how far such a set ranks configurations rightly.
    _tab(page, "Run")
    _panel(page).get_by_role("button", name="Run evaluation").click()
    _settle(page)
    run_job = _wait_job(data_dir, "evaluation")
    assert run_job["state"] == "done", run_job
    run = json.loads((data_dir / "evaluations" / "runs" / f"{run_job['result']}.json").read_text())
    assert run["question_set"]["name"] == SET_NAME and run["question_set"]["kind"] == "drafted"
    page.wait_for_function("t => document.body.innerText.includes(t)", arg=f"{run_job['result']} complete",
                           timeout=120_000)  # the page redraws itself when the job ends
    _settle(page)
    _tab(page, "Results")
    results = _panel(page)
    run_box = results.locator('[data-testid="stSelectbox"]').first
    assert SET_NAME in run_box.locator("input").input_value()
    assert run_box.locator("input").input_value().endswith(run_job["result"])
    assert results.locator('[data-testid="stDataFrame"]').count() >= 1  # the leaderboard
    assert TAU in results.inner_text() and "FastAPI docs" in results.inner_text()
    assert _drafting_requests(server) == 0, "the offline drafter asked the model"
    _check_clean(page, "draft_set_evaluated")


def test_cancel_a_draft_keeps_what_it_drafted(served, page):
    url, data_dir, server = served
    _open(page, url, "Evaluate")
    _tab(page, DRAFT_TAB)
    _panel(page).get_by_text("Let the LLM write the single-place questions").click()
    _settle(page)
    before = {j["id"] for j in _jobs(data_dir, "draft")}
    _draft(page, 30)
    # Progress on the page while the model writes (one section every two seconds).
    progress = _panel(page).locator('[data-testid="stProgress"]')
    progress.filter(has_text="with the LLM: ").wait_for(timeout=120_000)
    assert "Drafting 30 questions from 12 documents with the LLM" in progress.inner_text()
    deadline = time.monotonic() + 120
    while _drafting_requests(server) < 1:
        assert time.monotonic() < deadline, "the model was never asked"
        time.sleep(0.5)
    running = _jobs(data_dir, "draft")[-1]
    assert running["id"] not in before and running["state"] == "running", running
    _panel(page).get_by_role("button", name="Cancel").click()
    job = _wait_job(data_dir, "draft", timeout_s=60)
    assert job["id"] == running["id"] and job["state"] == "cancelled", job
    assert "cancelled: what was drafted is kept" in job["message"], job["message"]
    asked = _drafting_requests(server)
    time.sleep(3 * SECONDS_PER_REPLY)
    assert _drafting_requests(server) == asked, "the model is still being asked after the Cancel"
    page.get_by_text("stopped: cancelled").wait_for(timeout=60_000)  # the page redraws itself when the job ends
    _settle(page)
    panel = _panel(page).inner_text()
    assert "— cancelled: " in panel and "what was drafted is kept" in panel, panel[-2000:]
    draft = json.loads((data_dir / "question_sets" / "drafts" / f"{job['result']}.json").read_text())
    kept = len(draft["questions"])
    assert kept and draft["summary"]["stopped"] == "cancelled"
    assert f"Drafted {kept} questions" in panel and f"Save {kept} questions as a question set" in panel
    assert progress.count() == 0
    _check_clean(page, "draft_cancelled")

    # After a reload the unsaved draft is offered, with its job's state, and its review resumes; discarded, it is
    # offered no more.
    _reload(page)
    _tab(page, DRAFT_TAB)
    assert f"Drafted {kept} questions" not in _panel(page).inner_text()
    offer = _panel(page).locator('[data-testid="stSelectbox"]').filter(has_text="Unsaved drafts")
    assert offer.locator("input").input_value().endswith(f"{kept} questions · cancelled")
    _panel(page).get_by_role("button", name="Review this draft").click()
    _settle(page)
    panel = _panel(page).inner_text()
    assert f"Drafted {kept} questions" in panel and "stopped: cancelled" in panel, panel[-2000:]
    assert "Unsaved drafts" not in panel  # the one under review is the only one
    _panel(page).get_by_role("button", name="Discard draft").click()
    _settle(page)
    panel = _panel(page).inner_text()
    assert f"Drafted {kept} questions" not in panel and "Unsaved drafts" not in panel, panel[-2000:]
    assert not (data_dir / "question_sets" / "drafts" / f"{job['result']}.json").exists()
    _check_clean(page, "draft_discarded")
