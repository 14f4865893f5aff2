"""The search space of the tuner, read from ``RAGConfig``'s own fields: which fields are knobs, their ranges, pins.

A knob's values come from its pydantic field: a ``Literal`` gives its choices, ``Field(ge=…, le=…)`` its bounds.
``NARROW`` may narrow an integer or float range to a sensible sub-range (a chunk of 8,192 tokens is allowed but
never worth a trial); the narrowed range is clamped to the field's bounds, so the bounds live in one place.
The context token budget is never a knob: every trial is scored at the user's budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from rag_core.config import ChunkingConfig, RAGConfig, field_bounds
from rag_core.config import setting_field as _field

TuneStrategy = Literal["search", "agent"]
TUNE_STRATEGIES: tuple[str, ...] = get_args(TuneStrategy)

# Which fields are knobs, by the strategy being tuned (dotted paths into RAGConfig).
SEARCH_KNOBS = (
    "chunking.strategy", "chunking.max_tokens", "chunking.overlap",
    "retrieval.strategy", "retrieval.fusion", "retrieval.rrf_k", "retrieval.hybrid_weight",
    "retrieval.section_weight", "retrieval.granularity", "retrieval.initial_k", "retrieval.max_k",
    "retrieval.max_iterations", "retrieval.min_confidence", "retrieval.dedup_threshold",
)
KNOBS: dict[str, tuple[str, ...]] = {
    "search": SEARCH_KNOBS,
    "agent": (*SEARCH_KNOBS, "agent.max_steps", "agent.max_retrievals"),
}
# Sub-ranges worth a trial (clamped to the field's bounds), and the step of integer knobs whose every value costs a
# new index (a chunk size of 300 and one of 301 are the same experiment, and each builds an index).
NARROW: dict[str, tuple[float, float]] = {
    "chunking.max_tokens": (128, 1024),
    "chunking.overlap": (0, 128),
    "retrieval.rrf_k": (1, 200),
    "retrieval.initial_k": (1, 30),
    "retrieval.max_k": (5, 60),
    "retrieval.max_iterations": (1, 5),
    "agent.max_steps": (2, 20),
    "agent.max_retrievals": (1, 12),
}
STEP: dict[str, int] = {"chunking.max_tokens": 128, "chunking.overlap": 16}
LOG_SCALE = frozenset({"retrieval.rrf_k"})
# Knobs that only matter when another knob has a value: asked only then (so a trial never varies a dead knob).
ACTIVE_WHEN: dict[str, tuple[str, str]] = {
    "retrieval.rrf_k": ("retrieval.fusion", "rrf"),
    "retrieval.hybrid_weight": ("retrieval.fusion", "weighted"),
}
# Never knobs: the budget is the user's, and a name is not a setting.
FIXED = ("retrieval.token_budget", "agent.context_budget", "name")


@dataclass(frozen=True, slots=True)
class Knob:
    """One tunable field: its dotted path and either its choices or its numeric range."""

    path: str
    kind: Literal["categorical", "int", "float"]
    choices: tuple[Any, ...] = ()
    low: float = 0.0
    high: float = 0.0
    step: int | None = None
    log: bool = False

    @property
    def section(self) -> str:
        return self.path.split(".", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        if self.kind == "categorical":
            return {"path": self.path, "kind": self.kind, "choices": list(self.choices)}
        return {"path": self.path, "kind": self.kind, "low": self.low, "high": self.high, "step": self.step,
                "log": self.log}


def knob(path: str) -> Knob:
    """The knob of ``path``: choices of its ``Literal``, or its bounds narrowed by ``NARROW`` and clamped to them."""
    info = _field(path)
    annotation = info.annotation
    if get_origin(annotation) is Literal:
        return Knob(path, "categorical", choices=get_args(annotation))
    if annotation not in (int, float):
        raise ValueError(f"setting '{path}' is neither a choice nor a number, so it cannot be tuned")
    low, high = field_bounds(path)
    if low is None or high is None:
        raise ValueError(f"setting '{path}' declares no bounds (Field(ge=..., le=...)), so it cannot be tuned")
    narrow_low, narrow_high = NARROW.get(path, (low, high))
    low, high = max(low, narrow_low), min(high, narrow_high)
    kind = "int" if annotation is int else "float"
    step = STEP.get(path) if kind == "int" else None
    return Knob(path, kind, low=int(low) if kind == "int" else float(low), high=int(high) if kind == "int" else
                float(high), step=step, log=path in LOG_SCALE)


def knobs_for(strategy: str, pins: Mapping[str, Any] = ()) -> list[Knob]:
    """The knobs of ``strategy`` (search or agent) that the user did not pin."""
    if strategy not in KNOBS:
        raise ValueError(f"unknown tuning strategy '{strategy}'; choose from {', '.join(TUNE_STRATEGIES)}")
    return [knob(path) for path in KNOBS[strategy] if path not in pins]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _resolve(name: str, strategy: str) -> str:
    """A pin's dotted path; a bare knob name (``rrf_k``) is accepted when it names one knob."""
    if "." in name:
        _field(name)
        return name
    matches = [path for path in KNOBS.get(strategy, SEARCH_KNOBS) if path.rsplit(".", 1)[1] == name]
    if len(matches) != 1:
        raise ValueError(f"pin '{name}': give the dotted path of a setting, e.g. retrieval.rrf_k=60 or "
                         f"chunking.max_tokens=256")
    return matches[0]


def parse_pins(items: Sequence[str], base: RAGConfig, strategy: str = "search") -> dict[str, Any]:
    """``KEY=VALUE`` pins as {dotted path: value}, each checked by building ``base`` with it (RAGConfig's rules)."""
    pins: dict[str, Any] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"pin '{item}' is not KEY=VALUE (e.g. retrieval.rrf_k=60)")
        path = _resolve(name.strip(), strategy)
        if path in FIXED:
            raise ValueError(f"'{path}' cannot be pinned: the context budget is set once for every trial (--budget)"
                             if path != "name" else "'name' is not a setting; use --save NAME to name the result")
        pins[path] = _value(raw.strip())
    apply(base, pins)  # raises the RAGConfig validation error when a pin is out of its bounds
    return pins


def apply(base: RAGConfig, values: Mapping[str, Any], *, budget: int | None = None, name: str | None = None
          ) -> RAGConfig:
    """``base`` with dotted-path ``values`` set (and the context ``budget`` on search and agent), validated.

    An overlap is fitted below a quarter of the chunk size and ``max_k`` raised to ``initial_k`` (the sweep's
    rules), so every combination of knob values is a valid configuration."""
    data = base.model_dump()
    for path, value in values.items():
        section, _, leaf = path.partition(".")
        if leaf:
            data[section][leaf] = value
        else:
            data[section] = value
    chunking, retrieval = data["chunking"], data["retrieval"]
    chunking["overlap"] = ChunkingConfig.fitted_overlap(chunking["max_tokens"], chunking["overlap"])
    retrieval["max_k"] = max(retrieval["max_k"], retrieval["initial_k"])
    if budget is not None:
        retrieval["token_budget"] = budget
        data["agent"]["context_budget"] = budget
    if name is not None:
        data["name"] = name
    return RAGConfig.model_validate(data)


def read(config: RAGConfig, path: str) -> Any:
    """The value of a dotted path in ``config``."""
    value: Any = config
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _between(one: Knob, value: float, bound: float) -> float:
    """The midpoint of ``value`` and ``bound`` (geometric on a log scale), on the knob's step and type."""
    if one.log and value > 0 and bound > 0:
        middle = (value * bound) ** 0.5
    else:
        middle = (value + bound) / 2
    if one.kind == "float":
        return round(middle, 4)
    step = one.step or 1
    return int(one.low + round((middle - one.low) / step) * step)


# The chunking neighbours' order: each builds an index, so the one a short study is likeliest to afford comes first.
# Chunk size first: it sets what a hit holds and how many fit the budget (the Evaluate page's sweep varies it too).
CHUNKING_FIRST = ("chunking.max_tokens", "chunking.strategy", "chunking.overlap")


def neighbours(knobs: Sequence[Knob], values: Mapping[str, Any], base: RAGConfig) -> list[dict[str, Any]]:
    """The current configuration's one-at-a-time neighbours: ``values`` (trial 0's knob values) with one knob moved,
    to each other choice of a categorical knob and halfway to each bound of a numeric one (geometrically on a log
    scale). Retrieval (and agent) knobs come first, a few seconds each on the index there is; chunking knobs last,
    in ``CHUNKING_FIRST`` order, since each of those builds an index (the study builds one only when it has the
    time: ``affordable``).

    Why: the current configuration is usually a sound one, and a sampler's first trials drawn at random over a
    dozen knobs rarely beat it, so the model of the search starts from knobs it cannot tell apart. Its one-at-a-time
    neighbours, a few seconds each once the index is built, say which knob moves the score and which way, before
    the sampler combines them. A knob that only matters with another's value (RRF's k, the weighted fusion's
    weight) follows: it joins at the base value when its condition turns true and leaves when it turns false."""
    trials: list[dict[str, Any]] = []
    order = sorted(knobs, key=lambda k: (k.section == "chunking", CHUNKING_FIRST.index(k.path)
                                         if k.path in CHUNKING_FIRST else len(CHUNKING_FIRST)))
    for one in order:
        if one.path not in values:
            continue
        value = values[one.path]
        if one.kind == "categorical":
            moves = [choice for choice in one.choices if choice != value]
        else:
            moves = list(dict.fromkeys(_between(one, value, bound) for bound in (one.low, one.high)))
            moves = [move for move in moves if move != value]
        for move in moves:
            trial = {**values, one.path: move}
            for path, (condition, wanted) in ACTIVE_WHEN.items():
                if condition != one.path or not any(k.path == path for k in knobs):
                    continue
                if move == wanted:
                    trial[path] = read(base, path)
                else:
                    trial.pop(path, None)
            trials.append(trial)
    return trials
