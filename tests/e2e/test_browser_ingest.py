"""Uploads and background indexing in a real browser (Debian chromium via Playwright, marker ``browser``).

A fresh data directory (no samples): a folder of same-named files kept apart, a same-name upload that waits for a
decision, an ingest that goes on while the person visits other pages (status in the sidebar), and Cancel.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _open, _settle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, data dir) of `streamlit run app.py` on an empty data directory."""
    require_browser()
    data_dir = tmp_path_factory.mktemp("ingest_data")
    with serve_app(data_dir) as url:
        yield url, data_dir


def _names(data_dir: Path) -> list[str]:
    index = data_dir / "documents" / "index.json"
    return sorted(d["name"] for d in json.loads(index.read_text())["documents"]) if index.exists() else []


def _jobs(data_dir: Path) -> list[dict]:
    jobs = [json.loads(p.read_text()) for p in (data_dir / "jobs").glob("*.json")]
    return sorted(jobs, key=lambda j: j["created"])


def _wait_jobs_done(data_dir: Path, timeout_s: float = 300) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        jobs = _jobs(data_dir)
        if jobs and all(j["state"] not in ("queued", "running") for j in jobs):
            return jobs[-1]
        time.sleep(0.5)
    raise AssertionError(f"jobs still running after {timeout_s} s: {_jobs(data_dir)}")


def _big_docs(folder: Path, prefix: str, n_files: int = 8, paragraphs: int = 40) -> list[str]:
    """Markdown files with many distinct paragraphs: an ingest that takes a while even on a fast machine."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(n_files):
        parts = [f"# {prefix} guide {f}"]
        for p in range(paragraphs):
            if p % 8 == 0:
                parts.append(f"## Part {p // 8} of {prefix} {f}")
            parts.append(f"Paragraph {p} of {prefix} file {f} explains setting number {p * 7 + f} for the "
                         f"{prefix} service, with the flag --opt-{p}-{f} and its default value {p * 13 % 97}.")
        path = folder / f"{prefix}-{f}.md"
        path.write_text("\n\n".join(parts) + "\n")
        paths.append(str(path))
    return paths


def _files_input(page):
    return page.locator('[data-testid="stFileUploaderDropzoneInput"]').first


def test_a_folder_of_same_named_files_is_kept_apart(served, page, tmp_path):
    url, data_dir = served
    root = tmp_path / "docs"
    for sub, title in (("guide", "Guide"), ("config", "Config")):
        (root / sub).mkdir(parents=True)
        (root / sub / "index.md").write_text(f"# {title}\n\nThe {title.lower()} index page.\n")
    _open(page, url, "Documents")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').nth(1).set_input_files(str(root))
    _settle(page, 120_000)
    _wait_jobs_done(data_dir)
    assert _names(data_dir) == ["docs/config/index.md", "docs/guide/index.md"]
    _check_clean(page, "ingest_folder_kept_apart")


def test_a_same_name_upload_waits_for_a_decision(served, page, tmp_path):
    url, data_dir = served
    theirs = tmp_path / "theirs" / "docs" / "guide"
    theirs.mkdir(parents=True)
    (theirs / "index.md").write_text("# Another project's guide\n\nDifferent content.\n")
    _open(page, url, "Documents")
    folder_input = page.locator('[data-testid="stFileUploaderDropzoneInput"]').nth(1)
    folder_input.set_input_files(str(tmp_path / "theirs" / "docs"))
    _settle(page, 120_000)
    assert "have the name of a stored document but other content" in page.inner_text("body")
    assert _names(data_dir) == ["docs/config/index.md", "docs/guide/index.md"]  # nothing replaced yet
    _check_clean(page, "ingest_same_name_question")
    page.get_by_text("Keep both (rename the new one)").click()
    _settle(page)
    page.get_by_role("button", name="Apply choices").click()
    _settle(page, 120_000)
    _wait_jobs_done(data_dir)
    assert _names(data_dir) == ["docs/config/index.md", "docs/guide/index (2).md", "docs/guide/index.md"]


def _slider(page, label: str):
    sliders = page.locator('[data-testid="stSidebar"] [data-testid="stSlider"]').filter(has_text=label)
    return sliders.first.locator('input[type="range"]')


def test_explorer_sliders_at_their_extremes_then_use_these_settings(served, page):
    url, data_dir = served
    _open(page, url, "Chunk Explorer")
    for label, key in (("Max tokens", "End"), ("Overlap", "End"), ("Max tokens", "Home"), ("Overlap", "Home"),
                       ("Overlap", "End"), ("Max tokens", "End"), ("Max tokens", "Home")):
        thumb = _slider(page, label)
        thumb.focus()
        thumb.press(key)
        _settle(page)
        body = page.inner_text("body")
        assert "must be smaller than" not in body, (label, key)
        assert "chunks at paragraph granularity" in body, (label, key)  # the page is still there
        _check_clean(page, "explorer_slider_extremes")
    assert _slider(page, "Overlap").get_attribute("value") == "16"  # half of 32
    thumb = _slider(page, "Max tokens")  # 32 → 128
    thumb.focus()
    for _ in range(3):
        thumb.press("ArrowRight")
    _settle(page)
    jobs_before = len(_jobs(data_dir))
    page.get_by_role("button", name="Use these settings").click()
    _settle(page)
    assert "Saved into the active configuration" in page.inner_text("body")
    job = _wait_jobs_done(data_dir)
    assert len(_jobs(data_dir)) == jobs_before + 1 and job["kind"] == "reindex" and job["state"] == "done"
    assert job["settings"]["max_tokens"] == 128
    page.wait_for_function("() => document.body.innerText.includes('Last job:')", timeout=30_000)
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "structure 128 tok" in sidebar and "built with structure 128 tok, overlap 16" in sidebar, sidebar
    _check_clean(page, "explorer_applied")


def test_ingest_goes_on_while_visiting_other_pages(served, page, tmp_path):
    url, data_dir = served
    paths = _big_docs(tmp_path / "big", "alpha")
    _open(page, url, "Documents")
    _files_input(page).set_input_files(paths)
    page.wait_for_function("() => document.body.innerText.includes('Background jobs')", timeout=120_000)
    sidebar = page.locator('[data-testid="stSidebar"]')
    for title in ("Retrieval Lab", "Chunk Explorer"):
        sidebar.locator('[data-testid="stSidebarNav"]').get_by_text(title, exact=True).click()
        _settle(page)  # the page's run, sidebar included (a fixed 1.5 s was too short under the ingest's load)
        if _jobs(data_dir)[-1]["state"] in ("queued", "running"):
            text = sidebar.inner_text()
            assert "Background jobs" in text and "Indexing 8 document(s)" in text, text
    _check_clean(page, "ingest_status_on_another_page")
    sidebar.locator('[data-testid="stSidebarNav"]').get_by_text("Documents", exact=True).click()
    job = _wait_jobs_done(data_dir)
    assert job["state"] == "done" and [f["state"] for f in job["files"]] == ["indexed"] * 8
    page.wait_for_function("() => document.body.innerText.includes('Last job:')", timeout=30_000)
    _settle(page)
    _check_clean(page, "ingest_done_after_coming_back")


def test_cancel_from_the_sidebar(served, page, tmp_path):
    url, data_dir = served
    paths = _big_docs(tmp_path / "big", "beta", n_files=10, paragraphs=60)
    _open(page, url, "Documents")
    _files_input(page).set_input_files(paths)
    page.wait_for_function("() => document.body.innerText.includes('Background jobs')", timeout=120_000)
    page.locator('[data-testid="stSidebar"]').get_by_role("button", name="Cancel").click()
    job = _wait_jobs_done(data_dir)
    assert job["state"] == "cancelled", job["state"]
    states = [f["state"] for f in job["files"]]
    assert "cancelled" in states and set(states) <= {"indexed", "cancelled"}
    page.wait_for_function("() => document.body.innerText.includes('cancelled')", timeout=30_000)
    _check_clean(page, "ingest_cancelled")
