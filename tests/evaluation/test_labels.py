"""Configuration labels: settings saved under one name are told apart by what differs."""

from __future__ import annotations

from rag_core.config import ChunkingConfig, RAGConfig, RetrievalConfig
from rag_core.evaluation.labels import distinct_labels, run_labels, settings_key


def _config(name: str = "default", max_tokens: int = 512, search: str = "hybrid", initial_k: int = 3) -> dict:
    return RAGConfig(name=name, chunking=ChunkingConfig(max_tokens=max_tokens),
                     retrieval=RetrievalConfig(strategy=search, initial_k=initial_k)).model_dump()


def test_one_set_of_settings_per_name_keeps_the_name():
    configs = [_config(), _config(), _config("mine", max_tokens=256)]
    assert sorted(distinct_labels(configs).values()) == ["default", "mine"]


def test_different_settings_under_one_name_get_what_differs_from_the_default():
    plain, smaller, keyword = _config(), _config(max_tokens=256), _config(max_tokens=256, search="keyword")
    labels = distinct_labels([plain, smaller, keyword, plain])
    assert labels["default", settings_key(plain)] == "default"
    assert labels["default", settings_key(smaller)] == "default · max_tokens 256"
    # both chunking and retrieval have a "strategy": the label says which; only settings that vary are named
    assert labels["default", settings_key(keyword)] == "default · max_tokens 256 · search keyword"


def test_labels_are_distinct_even_when_no_variant_has_the_defaults():
    a, b = _config(max_tokens=256, initial_k=5), _config(max_tokens=384, initial_k=5)
    labels = distinct_labels([a, b])
    assert sorted(labels.values()) == ["default · max_tokens 256", "default · max_tokens 384"]  # k alike: not named


def test_an_older_run_without_a_setting_counts_it_as_the_default():
    old = _config()
    del old["retrieval"]["dedup_threshold"]
    assert settings_key(old) == settings_key(_config())
    assert list(distinct_labels([old, _config()]).values()) == ["default"]


def test_run_labels_map_a_runs_names():
    plain, smaller = _config(), _config(max_tokens=256)
    known = distinct_labels([plain, smaller, _config("other")])
    assert run_labels([smaller, _config("other")], known) == {"default": "default · max_tokens 256",
                                                               "other": "other"}
    assert run_labels([_config("unknown")], known) == {"unknown": "unknown"}  # not among the known: its name
