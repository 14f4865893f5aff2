"""The integrity tab's chunk count says what it counts (all granularities), beside the Source view's one."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _integrity():
    from ui.explorer.explorer_view import render_integrity

    render_integrity({"total": 0, "chunks": 152, "oversized_atomic": 0, "counts": {"heading_split": 0},
                      "violations": [], "oversized": []}, 512)


def test_chunks_checked_names_all_granularities():
    at = AppTest.from_function(_integrity, default_timeout=60).run()
    assert not at.exception
    assert [m.label for m in at.metric if m.value == "152"] == ["Chunks checked (all granularities)"]
