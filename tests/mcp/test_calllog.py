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


class MemoryRecords:
    """A ``RecordStore`` in a dict, counting its key listings (each one is a request on a Chroma server)."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.listings = 0

    def get(self, key):
        return self.texts.get(key)

    def put(self, key, text):
        self.texts[key] = text

    def delete(self, key):
        return self.texts.pop(key, None) is not None

    def get_many(self, keys):
        return {key: self.texts[key] for key in keys if key in self.texts}

    def delete_many(self, keys):
        for key in keys:
            self.texts.pop(key, None)

    def keys(self):
        self.listings += 1
        return sorted(self.texts)

    def summaries(self):
        return [(key, "") for key in self.keys()]

    def version(self):
        return tuple(sorted(self.texts.items()))


def test_a_record_store_log_keeps_the_newest_calls_past_its_count_cap_in_order():
    records = MemoryRecords()
    log = calllog.RecordCallLog(records, cap=30, trim_every=10)
    for i in range(95):
        _call(log, i)
    assert records.listings == 10  # trimmed on the first call and every 10th: not a listing per call
    assert 30 <= len(records.texts) <= 30 + 10
    calls = calllog.read_calls(log, limit=1_000)
    assert [int(c["chunk_ids"][0][1:]) for c in calls] == list(range(95 - len(calls), 95))  # newest, in order
    assert [c["chunk_ids"] for c in calllog.read_calls(log, limit=3)] == [["c92"], ["c93"], ["c94"]]
    records.put(sorted(records.texts)[-1], "{not json")  # a damaged record is left out, not an error
    assert calllog.read_calls(log, limit=3)[-1]["chunk_ids"] == ["c93"]


def test_the_log_is_a_file_in_a_folder_and_the_chroma_servers_records_with_one(data_dir):
    from rag_core.config import Settings
    from rag_core.stores.records import ServerRecords

    embedded = calllog.open_call_log(Settings(data_dir=data_dir))
    assert isinstance(embedded, calllog.FileCallLog) and embedded.path == calllog.log_path(data_dir)
    served = Settings(data_dir=data_dir, chroma_host="127.0.0.1", chroma_port=1)
    on_server = calllog.open_call_log(served)  # nothing connects before a call is written
    assert isinstance(on_server, calllog.RecordCallLog) and isinstance(on_server.records, ServerRecords)
    assert on_server.records.kind == calllog.KIND
    other_dir = Settings(data_dir=data_dir / "elsewhere", chroma_host="127.0.0.1", chroma_port=1)
    assert calllog.open_call_log(other_dir) is on_server  # one log per server: its trim count spans calls


def test_a_search_logs_what_the_agents_step_shows_each_field_bounded():
    row = {"chunk_id": "c" * 500, "doc_id": "d", "source": "s" * 500, "heading": "h" * 5_000,
           "granularity": "paragraph", "chunk_type": "prose", "tokens": 12, "score": 0.1234567891, "confidence": 0.9}
    call = calllog.entry(client="a", tool="search_documents", arguments={"query": "q"}, chunk_ids=["c"],
                         latency_ms=1.0, ok=True,
                         retrieval={"route": "hybrid", "route_reason": "r" * 5_000, "confidence": 0.81,
                                    "threshold": 0.7, "granularity": "paragraph", "k_by_iteration": [3, 6] * 20,
                                    "hits": [row] * 500})
    assert call["route"] == "hybrid" and len(call["route_reason"]) == 300
    assert call["confidence"] == 0.81 and call["threshold"] == 0.7 and call["granularity"] == "paragraph"
    assert len(call["k_by_iteration"]) == 10 and len(call["hits"]) == calllog.MAX_CHUNKS
    hit = call["hits"][0]
    assert len(hit["chunk_id"]) == 100 and len(hit["source"]) == 200 and len(hit["heading"]) == 300
    assert hit["score"] == 0.123457 and hit["confidence"] == 0.9 and hit["tokens"] == 12
    plain = calllog.entry(client="a", tool="list_documents", arguments={}, chunk_ids=[], latency_ms=1.0, ok=True)
    assert "route" not in plain and "hits" not in plain
