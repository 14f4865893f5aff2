"""Counted quantities get integer ticks in one number format (no ``2,214.5`` beside ``2215``)."""

from __future__ import annotations

from types import SimpleNamespace

from ui.charts import tokens_vs_recall


def _row(config: str, strategy: str, tokens: float, recall: float) -> dict:
    return {"config": config, "config_name": config, "strategy": strategy, "context_tokens": tokens,
            "recall@5": recall}


def test_context_tokens_axis_has_integer_ticks_in_one_format():
    run = SimpleNamespace(summary=[_row("a", "hybrid", 2214.2, 0.5), _row("a", "agent", 2215.4, 0.7)])
    axis = tokens_vs_recall(run).layout.xaxis
    assert axis.tickformat == ",d" and axis.hoverformat == ",.0f"
    assert axis.tickmode == "linear" and axis.dtick == 1  # whole tokens, never 2,214.5


def test_a_wide_token_range_keeps_plotlys_own_steps_in_the_integer_format():
    run = SimpleNamespace(summary=[_row("a", "hybrid", 800, 0.5), _row("a", "agent", 2400, 0.7)])
    axis = tokens_vs_recall(run).layout.xaxis
    assert axis.tickformat == ",d" and axis.dtick is None
