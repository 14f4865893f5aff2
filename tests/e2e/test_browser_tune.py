"""Evaluate's "Tune" tab in a real browser (Debian chromium via Playwright, marker ``browser``): start a 30-second
study on the sample documents (indexed with the hash embedder) and the golden set, see its progress, reload the
page and see it still running, then its result: the recommendation, the measured gain, the charts, a Pareto point's
configuration; no exception, traceback or console error."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.serving import index_with_hash_embedder, require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _open, _select, _settle
from tests.e2e.test_browser_draft import _reload

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    require_browser()
    from rag_core.config import Settings
    from rag_core.loaders import load_path, sample_paths
    from rag_core.serving.tuning_jobs import save_result
    from rag_core.tuning import TuneSpec
    from tests.fakes.tune_result import fake_result

    data_dir = tmp_path_factory.mktemp("tune_data")
    index_with_hash_embedder(data_dir, [load_path(path) for path in sample_paths()])
    settings = Settings(data_dir=data_dir)  # an earlier study of six trials (five on the chart), stored first
    save_result(settings, "earlier", "earlier set", TuneSpec(collection="docs"), fake_result(settings,
                                                                                          significant=True))
    with serve_app(data_dir, {"STREAMLIT_SERVER_FILE_WATCHER_TYPE": "none"}) as url:
        yield url, data_dir


def _tune_jobs(data_dir: Path) -> list[dict]:
    jobs = [json.loads(p.read_text()) for p in (data_dir / "jobs").glob("*.json")]
    return sorted((j for j in jobs if j["kind"] == "tune"), key=lambda j: j["created"])


def _options(page, label: str) -> list[str]:
    page.locator('[data-testid="stSelectbox"]').filter(has_text=label).first.click()
    options = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return options


def _picked(selectbox) -> str:
    """What a selectbox shows: its text and the value of its input (where the chosen option is drawn)."""
    return selectbox.evaluate("e => e.textContent + ' ' + [...e.querySelectorAll('input')].map(i => i.value)"
                              ".join(' ') + ' ' + [...e.querySelectorAll('[value]')].map(i => i.getAttribute("
                              "'value')).join(' ')")


def _panel(page):
    return page.locator('[role="tabpanel"]:visible')


def start_study(page, url: str, minutes: float) -> None:
    """Open Evaluate › Tune, set the time budget to ``minutes`` and click Start tuning (the page's question set)."""
    _open(page, url, "Evaluate")
    page.get_by_role("tab", name="Tune").click()
    _settle(page)
    box = _panel(page).locator('[data-testid="stNumberInput"]').filter(has_text="Time budget").locator("input")
    box.fill(f"{minutes:g}")
    box.press("Enter")
    _settle(page)
    _panel(page).get_by_role("button", name="Start tuning").click()


def test_a_study_runs_survives_a_reload_and_shows_its_result(served, page):
    url, data_dir = served
    start_study(page, url, 0.5)
    page.get_by_text("Trials done").first.wait_for(timeout=60_000)
    assert _tune_jobs(data_dir)[-1]["state"] in ("queued", "running")
    _reload(page)
    page.get_by_role("tab", name="Tune").click()
    if _tune_jobs(data_dir)[-1]["state"] == "running":  # still running after the reload: its progress is shown
        page.get_by_text("Trials done").first.wait_for(timeout=30_000)
        _check_clean(page, "tune_running")
    deadline = time.monotonic() + 300
    while _tune_jobs(data_dir)[-1]["state"] in ("queued", "running") and time.monotonic() < deadline:
        time.sleep(1)
    job = _tune_jobs(data_dir)[-1]
    assert job["state"] == "done", job["message"]
    page.get_by_text("Gain on validation").first.wait_for(timeout=60_000)
    _settle(page)
    page.get_by_text("Study result").first.scroll_into_view_if_needed()
    _check_clean(page, "tune_verdict")
    stored = json.loads((data_dir / "tuning" / "results" / f"{job['result']}.json").read_text())["result"]
    panel = _panel(page)
    assert panel.get_by_text(f"{stored['gain']:+.3f}", exact=True).count() >= 1
    heading = "Keep the current configuration" if not stored["significant"] else "Recommendation: use the tuned"
    assert panel.get_by_text(heading).count() >= 1
    assert panel.locator('[data-testid="stPlotlyChart"]').count() >= 2
    # the earlier study's Pareto front: five points; picking a trial shows its configuration
    _select(page, "Study result", next(o for o in _options(page, "Study result") if "earlier set" in o))
    panel = _panel(page)
    assert panel.get_by_text("Recommendation: use the tuned configuration: +0.071").count() >= 1
    panel.get_by_role("tab", name="Pareto front").click()
    _settle(page)
    chart = panel.locator('[data-testid="stPlotlyChart"]').filter(has_text="Quality vs context tokens")
    chart.scroll_into_view_if_needed()
    assert chart.locator(".scatterlayer .point").count() == 5
    picker = panel.locator('[data-testid="stSelectbox"]').filter(has_text="Configuration of a trial")
    assert "trial 1 (Pareto front)" in _picked(picker)  # the first of the front
    _select(page, "Configuration of a trial", "trial 3 (Pareto front): 0.580 quality, 700 tokens, 9 ms")
    assert "trial 3 (Pareto front)" in _picked(picker)
    _check_clean(page, "tune_result")
