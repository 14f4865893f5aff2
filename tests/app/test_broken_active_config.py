"""Issue 39 item 11: a broken stored active configuration is not replaced by the defaults without a word: every
page's sidebar says which file is broken, why, and what is in use instead."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from rag_core.config import RAGConfig
from rag_core.serving.activestate import ActiveStore
from tests.app.apptest_helpers import APP

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "views" / "retrieval_lab.py")


def _session() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.switch_page(LAB).run()
    assert not at.exception
    return at


@pytest.mark.parametrize(("text", "why"), [
    ('{"name": "tuned", "chunking": {"max_tokens": ', "Invalid JSON"),
    ('{"name": "tuned", "chunking": {"max_tokens": 3}}', "chunking.max_tokens"),
])
def test_a_broken_active_configuration_is_named_on_the_page(data_dir, text, why):
    path = Path(data_dir) / "active" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    at = _session()
    warnings = [w.value for w in at.warning if "active configuration" in w.value]
    assert len(warnings) == 1, [w.value for w in at.warning]
    assert "config.json" in warnings[0] and "broken" in warnings[0] and why in warnings[0]
    assert "the defaults" in warnings[0]


def test_a_readable_active_configuration_says_nothing(data_dir):
    ActiveStore(data_dir).save_config(RAGConfig(name="tuned"))
    at = _session()
    assert not [w for w in at.warning if "active configuration" in w.value]
    assert any("`tuned`" in c.value for c in at.sidebar.caption)


def test_read_config_names_the_file_and_the_problem(data_dir):
    store = ActiveStore(data_dir)
    assert store.read_config() == (None, "")
    (Path(data_dir) / "active").mkdir(parents=True, exist_ok=True)
    (Path(data_dir) / "active" / "config.json").write_bytes(b"\xff\xfe{")
    config, problem = store.read_config()
    assert config is None and "config.json is broken (not UTF-8 text" in problem
