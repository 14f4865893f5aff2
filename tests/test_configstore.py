import json

import pytest

from rag_core.config import RAGConfig
from rag_core.serving.configstore import ConfigStore, parse_config, snapshot_status


def test_save_list_load_duplicate_delete(tmp_path):
    store = ConfigStore(tmp_path)
    assert store.list() == []
    config = RAGConfig(name="small chunks")
    config.chunking.max_tokens = 256
    store.save(config)
    assert store.list() == ["small chunks"]
    assert store.load("small chunks").chunking.max_tokens == 256
    copy = store.duplicate("small chunks", "small-2")
    assert copy.name == "small-2" and copy.chunking.max_tokens == 256
    assert store.list() == ["small chunks", "small-2"]
    with pytest.raises(ValueError, match="'small-2' already exists"):
        store.duplicate("small chunks", "small-2")
    store.delete("small chunks")
    assert store.list() == ["small-2"]
    with pytest.raises(ValueError, match="no saved configuration named 'small chunks'; saved: small-2"):
        store.load("small chunks")


def test_export_import_round_trip(tmp_path):
    store = ConfigStore(tmp_path)
    config = RAGConfig(name="exp")
    config.retrieval.initial_k = 5
    store.save(config)
    text = store.export_json("exp")
    assert json.loads(text)["retrieval"]["initial_k"] == 5
    other = ConfigStore(tmp_path / "other")
    imported = other.import_json(text, name="imported")
    assert imported.retrieval.initial_k == 5 and other.list() == ["imported"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"retrieval": {"initial_k": 0}}, "retrieval.initial_k: must be ≥ 1"),
        ({"retrieval": {"strategy": "magic"}}, "retrieval.strategy: must be one of 'auto', 'vector'"),
        ({"chunking": {"max_tokens": 100, "overlap": 200}}, "chunking: overlap (200) must be smaller than max_tokens"),
        ({"agent": {"colour": "red"}}, "agent.colour: unknown field"),
        ({"name": "../etc"}, "name: may hold only letters"),
    ],
)
def test_invalid_configs_name_the_bad_field(payload, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        parse_config(json.dumps(payload), source="x.json")


def test_invalid_json_text(tmp_path):
    with pytest.raises(ValueError, match=r"x.json: not valid JSON \(line 1"):
        parse_config("{nope", source="x.json")
    with pytest.raises(ValueError, match="expected a JSON object"):
        parse_config("[1]", source="x.json")


def test_unsafe_names_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a valid configuration name"):
        ConfigStore(tmp_path).load("..")


def test_default_is_the_builtin_defaults_until_saved(tmp_path):
    store = ConfigStore(tmp_path)
    assert store.load("default") == RAGConfig(name="default")
    assert store.list() == []
    saved = RAGConfig(name="default")
    saved.retrieval.initial_k = 5
    store.save(saved)
    assert store.load("default").retrieval.initial_k == 5
    assert json.loads(store.export_json("default"))["retrieval"]["initial_k"] == 5


def test_snapshot_status_says_when_the_active_configuration_diverged_from_its_saved_name(tmp_path):
    store = ConfigStore(tmp_path)
    saved = RAGConfig(name="chunks-256", chunking={"max_tokens": 256, "overlap": 32})
    store.save(saved)
    assert snapshot_status(saved, store) == ""
    applied = saved.model_copy(update={"chunking": saved.chunking.model_copy(update={"max_tokens": 512})})
    assert snapshot_status(applied, store) == "modified from chunks-256 (unsaved)"
    assert snapshot_status(RAGConfig(name="never-saved"), store) == "unsaved"
    assert snapshot_status(RAGConfig(), store) == ""  # the built-in default, not saved yet: the same settings

