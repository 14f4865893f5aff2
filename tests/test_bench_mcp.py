"""``bench.mcp``'s arithmetic on literals: queries dealt to clients, percentiles, the overhead ratio and verdict."""

from __future__ import annotations

from bench.mcp import dealt, pct, report


def test_queries_are_dealt_round_robin_and_none_is_lost():
    shares = dealt([f"q{i}" for i in range(10)], 8)
    assert shares[0] == ["q0", "q8"] and shares[7] == ["q7"]
    assert sorted(q for share in shares for q in share) == sorted(f"q{i}" for i in range(10))


def test_percentile_picks_the_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert pct(values, 50) == 51.0 and pct(values, 95) == 95.0 and pct([3.0], 95) == 3.0


def test_report_gives_the_ratio_to_the_in_process_search_at_the_same_concurrency():
    times = {("in-process search", 1): [10.0, 10.0, 10.0], ("stdio", 1): [25.0, 25.0, 25.0],
             ("in-process search", 8): [40.0], ("stdio", 8): [20.0]}
    text = report(times, "hash", 3)
    assert "| stdio | 1 | 3 | 25.0 | 25.0 | 25.0 | 2.50x |" in text
    assert "| stdio | 8 | 1 | 20.0 | 20.0 | 20.0 | 0.50x |" in text
    assert "**2.50x** (not met)" in text
