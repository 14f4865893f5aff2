"""A long ingest asks first, in a real browser (issue 35.8): the Documents page says the estimate from this
machine's recorded throughput, queues nothing before a click, and Don't index now keeps the file stored only."""

from __future__ import annotations

import json

import pytest

from tests.e2e.serving import require_browser, serve_app
from tests.e2e.test_browser import _check_clean, _open, _settle

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, data dir) of the app on an empty data directory whose machine measured 200 bytes/s with MiniLM."""
    require_browser()
    data_dir = tmp_path_factory.mktemp("cost_data")
    (data_dir / "throughput.json").write_text(json.dumps({"minilm-l6-v2": {
        "bytes_per_s": 200.0, "chunks_per_byte": 0.004, "source": "measured on this machine",
        "bytes_measured": 1_000_000}}))
    with serve_app(data_dir) as url:
        yield url, data_dir


def test_a_long_ingest_waits_for_a_choice(served, page, tmp_path):
    url, data_dir = served
    big = tmp_path / "big.txt"
    big.write_text("\n\n".join(f"Paragraph {i} about setting {i * 7} and its default." for i in range(600)))
    _open(page, url, "Documents")
    page.locator('[data-testid="stFileUploaderDropzoneInput"]').first.set_input_files([str(big)])
    page.get_by_role("button", name="Don't index now").wait_for(timeout=120_000)
    text = page.locator('[data-testid="stMain"]').inner_text()
    minutes = round(big.stat().st_size / 200 / 60)
    assert f"will take about {minutes} min on this machine" in text, text
    assert "Index anyway" in text and "wait until it ends" in text
    assert not (data_dir / "jobs").exists() or not list((data_dir / "jobs").glob("*.json"))  # nothing queued
    _check_clean(page, "long_ingest_asks")
    page.get_by_role("button", name="Don't index now").click()
    page.wait_for_function("() => document.body.innerText.includes('Stored, not indexed: big.txt')", timeout=60_000)
    _settle(page)
    assert not list((data_dir / "jobs").glob("*.json")) if (data_dir / "jobs").exists() else True
    _check_clean(page, "long_ingest_not_indexed")
