"""The Agent Playground's side-by-side view cannot overlap, in a real browser (Debian chromium via Playwright,
marker ``browser``): a one-shot answer quoting a table with a long "description" column ran into the agent's
step list (issue 35 item 1). The content of each column is measured with its bounding boxes and a screenshot is
saved under test-artifacts/screenshots/.
"""

from __future__ import annotations

import pytest

from rag_core.loaders import load_bytes
from tests.e2e.serving import index_with_hash_embedder, require_browser, serve_app
from tests.e2e.test_browser import ARTIFACTS, _check_clean, _open, _settle

pytestmark = pytest.mark.browser

LONG = ("How long the coordinator keeps the metrics of every finished run before compaction removes them, "
        "counted from the end of the run and applied per namespace; overridden by "
        "`storage.metrics.retention_window_override_for_every_namespace_and_every_worker_pool` when set")
SETTINGS = (
    "# Retention settings\n\nThe retention options of the metrics store.\n\n"
    "| Option | Default | Unit | Scope | Description |\n| --- | --- | --- | --- | --- |\n"
    f"| `metrics.retention_window` | `30` | days | namespace | {LONG} |\n"
    f"| `metrics.retention_floor` | `7` | days | cluster | {LONG.replace('keeps', 'always keeps')} |\n"
)
QUESTION = "How long does the coordinator keep the metrics of a finished run before compaction?"

# Per column of the side-by-side row: the right edge of its rightmost drawn content and the left edge of its
# leftmost (text nodes' boxes included: text overflowing a cell overflows no element box).
_EDGES_JS = """() => {
  const row = [...document.querySelectorAll('[data-testid="stHorizontalBlock"]')]
    .find(r => r.innerText.includes('One-shot RAG (top-5 hybrid)'));
  if (!row) return null;
  const clipped = (box, node, col) => {  // the part of box an ancestor that scrolls or clips leaves visible
    let {left, right} = box;
    for (let el = node.nodeType === 3 ? node.parentElement : node.parentElement; el && el !== col;
         el = el.parentElement) {
      if (getComputedStyle(el).overflowX !== 'visible') {
        const r = el.getBoundingClientRect();
        left = Math.max(left, r.left); right = Math.min(right, r.right);
      }
    }
    return {left, right};
  };
  return [...row.querySelectorAll(':scope > [data-testid="stColumn"]')].map(col => {
    let left = Infinity, right = -Infinity, widest = '';
    const walker = document.createTreeWalker(col, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
    for (let node = walker.currentNode; node; node = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const box of (node.nodeType === 3 ? range.getClientRects() : [node.getBoundingClientRect()])) {
        if (box.width === 0 || box.height === 0) continue;
        const seen = clipped(box, node, col);
        if (seen.right <= seen.left) continue;
        if (seen.right > right) widest = (node.textContent || '').slice(0, 80);
        left = Math.min(left, seen.left); right = Math.max(right, seen.right);
      }
    }
    return {left, right, widest, box: col.getBoundingClientRect().toJSON()};
  });
}"""


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    require_browser()
    data_dir = tmp_path_factory.mktemp("compare_layout_data")
    index_with_hash_embedder(data_dir, [load_bytes("retention.md", SETTINGS.encode())])
    with serve_app(data_dir) as url:
        yield url


def test_a_wide_table_in_the_one_shot_column_stays_in_its_column(app_url, page):
    _open(page, app_url, "Agent Playground")
    page.locator('[data-testid="stSidebar"]').get_by_text("Side by side: one-shot RAG vs agent").click()
    _settle(page)
    chat = page.locator('[data-testid="stChatInputTextArea"]')
    chat.fill(QUESTION)
    chat.press("Enter")
    _settle(page, 180_000)
    _check_clean(page, "agent_compare_wide_table")
    row = page.locator('[data-testid="stHorizontalBlock"]').filter(has_text="One-shot RAG (top-5 hybrid)").first
    page.set_viewport_size({"width": 1400, "height": 3200})  # the whole row in view for its screenshot
    _settle(page)
    row.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    row.screenshot(path=str(ARTIFACTS / "agent_compare_columns.png"))
    one_shot, agent = page.evaluate(_EDGES_JS)
    assert page.locator('[data-testid="stColumn"] table').count() >= 1, "the one-shot answer quotes no table"
    assert one_shot["right"] <= agent["left"], f"the one-shot column's content runs into the agent's: {one_shot}"
    assert one_shot["right"] <= one_shot["box"]["right"] + 1 and agent["right"] <= agent["box"]["right"] + 1
