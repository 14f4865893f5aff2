"""Evaluation runs as background jobs and the guided demo's step 3, in a real browser (Debian chromium via
Playwright, marker ``browser``), on the sample documents as ``make run`` serves them.

Step 3's question is chosen by asking one-shot search and the agent every golden question (when the samples are
indexed, before the app starts, so Home opens on a ready demo) and comparing what their answers quote; the
browser checks that on the page it opens the agent's answer really quotes an answer the one-shot answer lacks. An
evaluation run goes on while the person visits other pages (the sidebar follows it) and opens when it ends; a
second one is cancelled from the sidebar and kept as a cancelled run.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from rag_core.evaluation.questions import load_golden, normalise
from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _open, _settle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, data dir) of `streamlit run app.py` on the indexed sample documents."""
    require_browser()
    data_dir = tmp_path_factory.mktemp("eval_jobs_data")
    with serve_app(data_dir, samples=True) as url:
        yield url, data_dir


def _jobs(data_dir: Path, kind: str) -> list[dict]:
    jobs = [json.loads(p.read_text()) for p in (data_dir / "jobs").glob("*.json")]
    return sorted((j for j in jobs if j["kind"] == kind), key=lambda j: j["created"])


def _wait_job(data_dir: Path, kind: str, timeout_s: float = 600, running: bool = False) -> dict:
    """The newest job of ``kind`` once it has ended (``running``: once it has started and measured something)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = _jobs(data_dir, kind)
        if jobs:
            job = jobs[-1]
            if running and job["state"] == "running" and job["steps_done"] > 0:
                return job
            if not running and job["state"] not in ("queued", "running"):
                return job
        time.sleep(0.5)
    raise AssertionError(f"no {kind} job {'running' if running else 'ended'} after {timeout_s} s")


def _wait_text(page, text: str, timeout_ms: int = 120_000) -> None:
    page.wait_for_function("t => document.body.innerText.includes(t)", arg=text, timeout=timeout_ms)


def _nav(page, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
    _settle(page)


def test_demo_step_three_asks_a_question_where_the_agents_answer_quotes_what_one_shots_misses(served, page):
    url, data_dir = served
    page.goto(url)
    _settle(page)
    # Prepared when the samples were indexed (``make run``'s bootstrap): ready on arrival, and opening Home
    # starts no job.
    _wait_text(page, "chosen among 60 golden questions", timeout_ms=10_000)
    assert "Demo ready" in page.inner_text("body") and _jobs(data_dir, "demo") == []
    body = page.inner_text("body")
    step = body[body.index("3. One-shot RAG versus the agent"):body.index("4. The evaluation leaderboard")]
    golden = {q.question: q for q in load_golden().questions}
    question = re.search(r"“(.+?)”", step).group(1)
    assert question in golden, step  # a golden question, computed by the job: the one it stored
    stored = json.loads((data_dir / "evaluations" / "showcase.json").read_text())
    assert [c["question"] for c in stored.values() if c] == [question]
    assert "the agent's answer quotes" in step and "one search's answer (top 5 hybrid) quotes" in step, step
    _check_clean(page, "demo_3_chosen")

    page.get_by_role("button", name="Ask both").click()
    _settle(page, 300_000)
    body = page.inner_text("body")
    assert question in body and "One-shot RAG (top-5 hybrid)" in body and "Agent (offline policy)" in body
    row = page.locator('[data-testid="stHorizontalBlock"]').filter(has_text="One-shot RAG (top-5 hybrid)").last
    one_shot_column = row.locator(':scope > [data-testid="stColumn"]').first
    one_shot = one_shot_column.inner_text().split("One-shot context")[0]  # its answer, not its context
    agent = page.locator('[data-testid="stChatMessage"]').last.inner_text()
    answers = golden[question].answer_texts
    only_agent = [a for a in answers if normalise(a) in normalise(agent) and normalise(a) not in normalise(one_shot)]
    assert only_agent, f"the agent's answer quotes no answer the one-shot answer lacks: {answers}"
    _check_clean(page, "demo_3_asked")


def test_an_evaluation_run_goes_on_while_visiting_other_pages(served, page):
    url, data_dir = served
    _open(page, url, "Evaluate")
    before = len(_jobs(data_dir, "evaluation"))
    page.get_by_role("button", name="Run evaluation").click()
    _settle(page)
    assert len(_jobs(data_dir, "evaluation")) == before + 1
    assert "Runs in the background" in page.inner_text("body")
    sidebar = page.locator('[data-testid="stSidebar"]')
    seen_elsewhere = 0
    for title in ("Retrieval Lab", "Agent Playground", "Documents"):
        _nav(page, title)
        if _jobs(data_dir, "evaluation")[-1]["state"] in ("queued", "running"):
            text = sidebar.inner_text()
            assert "Background jobs" in text and "Evaluation on 'golden'" in text, text
            seen_elsewhere += 1
    assert seen_elsewhere, "the run ended before any other page was visited: nothing was checked"
    _check_clean(page, "eval_job_on_another_page")
    _nav(page, "Evaluate")
    job = _wait_job(data_dir, "evaluation")
    assert job["state"] == "done", job
    run = json.loads((data_dir / "evaluations" / "runs" / f"{job['result']}.json").read_text())
    assert run["status"] == "complete" and len(run["records"]) == len(load_golden().questions) * 4
    _wait_text(page, f"{job['result']} complete")  # the page redraws itself when the job ends
    _settle(page)
    page.get_by_role("tab", name="Results").click()
    run_box = page.locator('[role="tabpanel"]:visible [data-testid="stSelectbox"]').first  # "Run"
    assert run_box.inner_text().startswith("Run")
    assert run_box.locator("input").input_value().endswith(job["result"])  # the new run is the one shown
    _check_clean(page, "eval_job_done")


def test_cancel_an_evaluation_from_the_sidebar(served, page):
    url, data_dir = served
    _open(page, url, "Evaluate")
    page.get_by_role("button", name="Run evaluation").click()
    _settle(page)
    running = _wait_job(data_dir, "evaluation", running=True)
    page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Cancel").click()
    job = _wait_job(data_dir, "evaluation")
    assert job["id"] == running["id"] and job["state"] == "cancelled", job
    assert "what was measured is kept" in job["message"]
    run = json.loads((data_dir / "evaluations" / "runs" / f"{job['result']}.json").read_text())
    assert run["status"] == "cancelled" and 0 < len(run["records"]) < len(load_golden().questions) * 4
    _wait_text(page, "cancelled")
    _settle(page)
    _check_clean(page, "eval_job_cancelled")
