"""The MCP call log stays bounded: past ``MAX_BYTES`` the older half is dropped and the newest calls are kept;
long arguments and client names are cut; a damaged line is skipped, not an error."""

from __future__ import annotations

from rag_core.mcp_server import calllog


def _call(data_dir, i: int, **extra) -> None:
    calllog.record(data_dir, client="agent", tool="search_documents", arguments={"query": f"question {i}"},
                   chunk_ids=[f"c{i}"], latency_ms=1.0, ok=True, **extra)


def test_the_log_drops_its_older_half_past_the_cap_and_keeps_the_newest(data_dir, monkeypatch):
    monkeypatch.setattr(calllog, "MAX_BYTES", 4_000)
    for i in range(200):
        _call(data_dir, i)
    path = calllog.log_path(data_dir)
    assert path.stat().st_size <= 4_000 + 300  # at most the cap and the line that crossed it
    calls = calllog.read_calls(data_dir, limit=1_000)
    assert calls[-1]["chunk_ids"] == ["c199"] and 10 < len(calls) < 200
    assert [int(c["chunk_ids"][0][1:]) for c in calls] == list(range(200 - len(calls), 200))  # none lost between


def test_long_fields_are_cut_and_a_damaged_line_is_skipped(data_dir):
    calllog.record(data_dir, client="x" * 5_000, tool="search_documents", arguments={"query": "q" * 50_000},
                   chunk_ids=["c"] * 500, latency_ms=1.0, ok=False, error="e" * 5_000)
    with calllog.log_path(data_dir).open("a", encoding="utf-8") as f:
        f.write("{not json\n")
    _call(data_dir, 1)
    first, second = calllog.read_calls(data_dir)
    assert len(first["client"]) == 200 and len(first["arguments"]) == calllog.MAX_ARG_CHARS
    assert len(first["chunk_ids"]) == 50 and len(first["error"]) == 500
    assert second["chunk_ids"] == ["c1"]
