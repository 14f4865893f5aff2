"""Labels for evaluated configurations that tell apart different settings saved under one name.

"Use these settings" changes the active configuration in place, so two runs of different settings can both be
of a configuration called "default". A configuration's label is its name when every run of that name used the
same settings; otherwise the name followed by the settings on which the variants differ, each shown only where
the variant departs from the default configuration (``default · max_tokens 256 · search keyword``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rag_core.config import RAGConfig

# Leaf names that are not clear on their own.
_SHORT = {"chunking.strategy": "chunking", "retrieval.strategy": "search", "embedding.embedder": "embedder",
          "agent.policy": "agent"}


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: value}


_DEFAULTS = _flat({k: v for k, v in RAGConfig().model_dump(mode="json").items() if k != "name"})


def settings_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """A configuration's settings as dotted keys (``chunking.max_tokens``), without its name; a setting an older
    run did not record counts as its default."""
    return {**_DEFAULTS, **_flat({k: v for k, v in config.items() if k != "name"})}


def settings_key(config: Mapping[str, Any]) -> str:
    """Equal for two configurations exactly when their settings are equal (names aside)."""
    return json.dumps(settings_of(config), sort_keys=True, default=str)


def _shown(key: str, value: Any) -> str:
    name = _SHORT.get(key, key.rsplit(".", 1)[-1])
    if isinstance(value, list | tuple):
        value = ",".join(str(v) for v in value) or "none"
    return f"{name} {value}"


def distinct_labels(configs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    """``(name, settings_key)`` → label for every distinct configuration among ``configs`` (e.g. the configurations
    of every stored run): different settings under one name get different labels."""
    variants: dict[str, dict[str, dict[str, Any]]] = {}  # name → settings key → settings
    for config in configs:
        name = str(config.get("name") or "?")
        variants.setdefault(name, {}).setdefault(settings_key(config), settings_of(config))
    labels: dict[tuple[str, str], str] = {}
    for name, by_key in variants.items():
        if len(by_key) == 1:
            labels[name, next(iter(by_key))] = name
            continue
        varying = [k for k in sorted({k for s in by_key.values() for k in s})
                   if len({json.dumps(s.get(k), sort_keys=True, default=str) for s in by_key.values()}) > 1]
        group = {key: " · ".join([name] + [_shown(k, s.get(k)) for k in varying if s.get(k) != _DEFAULTS.get(k)])
                 for key, s in by_key.items()}
        if len(set(group.values())) < len(group):  # two values that print alike: say which is which
            group = {key: f"{label} · #{hashlib.sha256(key.encode()).hexdigest()[:6]}" for key, label in group.items()}
        labels.update({(name, key): label for key, label in group.items()})
    return labels


def run_labels(run_configs: Iterable[Mapping[str, Any]], labels: Mapping[tuple[str, str], str]) -> dict[str, str]:
    """Configuration name → label for one run (its configurations have distinct names)."""
    return {str(c.get("name")): labels.get((str(c.get("name")), settings_key(c)), str(c.get("name")))
            for c in run_configs if isinstance(c, Mapping)}



def run_settings_key(config: Mapping[str, Any], strategy: str) -> str:
    """What a leaderboard row ran with: the settings, the row's ``strategy`` in place of the configured one, and
    the agent settings only for the agent (the other strategies never read them)."""
    settings = {k: v for k, v in settings_of(config).items()
                if k != "retrieval.strategy" and (strategy == "agent" or not k.startswith("agent."))}
    return json.dumps(settings, sort_keys=True, default=str)


def same_settings(run_configs: Iterable[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> dict[
        tuple[str, str], list[str]]:
    """``(config, strategy)`` → the run's other configurations whose row of that strategy ran with the same
    settings (rows that measure the same thing twice, whatever their names); rows without a twin are left out."""
    groups: dict[str, list[str]] = {}  # strategy | run settings key → configuration names, in run order
    for config in run_configs:
        if not isinstance(config, Mapping):
            continue
        name = str(config.get("name"))
        for strategy in dict.fromkeys(str(r["strategy"]) for r in rows if str(r.get("config")) == name):
            groups.setdefault(f"{strategy}|{run_settings_key(config, strategy)}", []).append(name)
    return {(name, key.split("|", 1)[0]): [other for other in names if other != name]
            for key, names in groups.items() if len(names) > 1 for name in names}
