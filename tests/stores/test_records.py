"""The record store under configurations, runs and the active state: one behaviour in a folder and on a server."""

from __future__ import annotations

import json

import pytest

from rag_core.config import Settings
from rag_core.stores.records import FileRecords, ServerRecords, open_records


def _title(key: str, text: str) -> str:
    return json.loads(text)["title"]


@pytest.fixture(params=["folder", pytest.param("server", marks=pytest.mark.chroma_server)])
def make_records(request, data_dir, collection_name):
    """``make_records(summarize=None)``: a fresh namespace on the backend under test."""
    if request.param == "folder":
        return lambda summarize=None: FileRecords(data_dir / "things", summarize)
    server = request.getfixturevalue("chroma_server")
    settings = Settings(data_dir=data_dir, chroma_host=server.host, chroma_port=server.port)
    return lambda summarize=None: open_records(settings, "things", collection_name, summarize)


def test_records_round_trip(make_records):
    records = make_records()
    assert records.keys() == [] and records.get("a") is None and records.version() == ()
    records.put("b", '{"n": 2}')
    records.put("a", '{"n": 1}')
    records.put("a", '{"n": 1.5}')  # replaces
    assert records.keys() == ["a", "b"]
    assert json.loads(records.get("a")) == {"n": 1.5}
    assert records.delete("a") is True and records.delete("a") is False
    assert records.keys() == ["b"] and records.get("a") is None


def test_many_records_read_and_deleted_at_once(make_records):
    """The call log reads its latest calls and trims its oldest in one request each on a server."""
    records = make_records()
    for key in ("a", "b", "c"):
        records.put(key, json.dumps({"key": key}))
    assert records.get_many(["c", "missing", "a"]) == {"c": '{"key": "c"}', "a": '{"key": "a"}'}
    assert records.get_many([]) == {}
    records.delete_many(["a", "missing", "c"])
    assert records.keys() == ["b"]
    records.delete_many([])
    with pytest.raises(ValueError, match="not a valid record name"):
        records.get_many(["a/b"])


def test_version_moves_on_every_write_and_delete(make_records):
    records = make_records()
    seen = [records.version()]
    records.put("a", "{}")
    seen.append(records.version())
    records.put("a", '{"changed": true}')
    seen.append(records.version())
    records.delete("a")
    assert len(set(seen)) == 3 and records.version() == seen[0]


def test_summaries_list_records_without_their_texts(make_records):
    records = make_records(_title)
    records.put("r2", json.dumps({"title": "second", "body": "x" * 1000}))
    records.put("r1", json.dumps({"title": "first"}))
    assert records.summaries() == [("r1", "first"), ("r2", "second")]


def test_a_damaged_file_is_left_out_of_summaries_not_fatal(data_dir):
    records = FileRecords(data_dir / "things", _title)
    records.put("good", json.dumps({"title": "ok"}))
    (data_dir / "things" / "broken.json").write_text("{", encoding="utf-8")
    (data_dir / "things" / "binary.json").write_bytes(b"\xff\xfe\x00")
    assert records.summaries() == [("good", "ok")]
    assert records.keys() == ["binary", "broken", "good"]  # still listed by name, so they can be deleted


def test_files_are_plain_json_written_atomically(data_dir):
    records = FileRecords(data_dir / "things")
    records.put("my config", '{"a": 1}')
    assert (data_dir / "things" / "my config.json").read_text(encoding="utf-8") == '{"a": 1}'
    assert [p.name for p in (data_dir / "things").iterdir()] == ["my config.json"]  # no temporary file left
    for bad in ("", ".", "..", "a/b", "a\\b"):
        with pytest.raises(ValueError, match="not a valid record name"):
            records.put(bad, "{}")


def test_open_records_is_a_folder_without_a_server(data_dir):
    records = open_records(Settings(data_dir=data_dir), "configs", "config")
    assert isinstance(records, FileRecords) and records.root == data_dir / "configs"


@pytest.mark.chroma_server
def test_server_records_keep_their_ids_so_saved_state_stays_found(chroma_server, tmp_path):
    """Records saved before the record store (``config/<name>``, ``baselines/all``) are read by it."""
    from rag_core.evaluation.results import ResultsStore
    from rag_core.serving.configstore import ConfigStore

    settings = Settings(data_dir=tmp_path, chroma_host=chroma_server.host, chroma_port=chroma_server.port)
    configs = ConfigStore.for_settings(settings)
    assert isinstance(configs._records, ServerRecords)
    meta = configs._records.records
    meta.put("config/older-one", '{"name": "older-one"}', {"kind": "config", "key": "older-one", "summary": "",
                                                           "saved": 1.0})
    meta.put("baselines/all", json.dumps({"qs|c|vector": {"run_id": "r", "metrics": {"mrr": 0.5}}}),
             {"kind": "baselines", "key": "all", "summary": "", "saved": 1.0})
    try:
        assert "older-one" in configs.list() and configs.load("older-one").name == "older-one"
        assert ResultsStore.for_settings(settings).baselines()["qs|c|vector"]["run_id"] == "r"
    finally:
        meta.delete(["config/older-one", "baselines/all"])
