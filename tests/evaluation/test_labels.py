"""Configuration labels: settings saved under one name are told apart by what differs."""

from __future__ import annotations

from rag_core.config import ChunkingConfig, RAGConfig, RetrievalConfig
from rag_core.evaluation.labels import distinct_labels, run_labels, same_settings, settings_key


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


def _rows(names, strategies=("hybrid", "agent")) -> list[dict]:
    return [{"config": name, "strategy": strategy} for name in names for strategy in strategies]


def test_same_settings_compares_what_each_row_ran_with_not_names():
    twins = [_config("chunks-256", max_tokens=512), _config("chunks-512", max_tokens=512), _config("small", 256)]
    assert same_settings(twins, _rows(["chunks-256", "chunks-512", "small"])) == {
        ("chunks-256", "hybrid"): ["chunks-512"], ("chunks-512", "hybrid"): ["chunks-256"],
        ("chunks-256", "agent"): ["chunks-512"], ("chunks-512", "agent"): ["chunks-256"]}


def test_same_settings_ignores_what_a_row_does_not_use():
    keyword_default = _config("a", search="keyword")  # the row's strategy replaces the configured one
    agentic = RAGConfig(name="b", agent={"max_steps": 2}).model_dump()  # only the agent reads agent settings
    assert same_settings([keyword_default, agentic], _rows(["a", "b"])) == {("a", "hybrid"): ["b"],
                                                                           ("b", "hybrid"): ["a"]}
