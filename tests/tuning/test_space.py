"""The search space is read from RAGConfig's own fields: ranges equal their bounds, pins are validated by them."""

from __future__ import annotations

import pytest

from rag_core.config import RAGConfig
from rag_core.tuning import space
from rag_core.tuning.space import KNOBS, NARROW, apply, knob, knobs_for, parse_pins


def _schema_field(path: str) -> dict:
    """The field's JSON schema (pydantic's own rendering of the bounds: an independent reading)."""
    schema = RAGConfig.model_json_schema()
    section, leaf = path.split(".")
    ref = schema["properties"][section].get("$ref") or schema["properties"][section]["allOf"][0]["$ref"]
    return schema["$defs"][ref.rsplit("/", 1)[1]]["properties"][leaf]


@pytest.mark.parametrize("path", KNOBS["agent"])
def test_every_knob_range_is_its_fields_bounds(path):
    field = _schema_field(path)
    found = knob(path)
    if found.kind == "categorical":
        assert list(found.choices) == field["enum"]
        return
    low, high = NARROW.get(path, (field["minimum"], field["maximum"]))
    assert found.low == max(field["minimum"], low)
    assert found.high == min(field["maximum"], high)


def test_a_narrowing_wider_than_the_field_is_clamped_to_its_bounds(monkeypatch):
    monkeypatch.setitem(space.NARROW, "retrieval.rrf_k", (-5, 10**9))
    rrf = knob("retrieval.rrf_k")
    assert (rrf.low, rrf.high) == (1, 1000)  # Field(ge=1, le=1000)


def test_the_budget_is_never_a_knob_nor_pinnable():
    paths = {k.path for k in knobs_for("agent")}
    assert "retrieval.token_budget" not in paths and "agent.context_budget" not in paths
    with pytest.raises(ValueError, match="budget"):
        parse_pins(["retrieval.token_budget=500"], RAGConfig())
    assert "agent.max_steps" in paths and "agent.max_steps" not in {k.path for k in knobs_for("search")}


def test_pins_are_parsed_validated_and_taken_out_of_the_space():
    pins = parse_pins(["retrieval.rrf_k=60", "chunking.strategy=fixed", "min_confidence=0.5"], RAGConfig())
    assert pins == {"retrieval.rrf_k": 60, "chunking.strategy": "fixed", "retrieval.min_confidence": 0.5}
    assert not {"retrieval.rrf_k", "chunking.strategy"} & {k.path for k in knobs_for("search", pins)}
    with pytest.raises(ValueError, match="rrf_k"):
        parse_pins(["retrieval.rrf_k=5000"], RAGConfig())  # Field(le=1000)
    with pytest.raises(ValueError, match="unknown setting"):
        parse_pins(["retrieval.nope=1"], RAGConfig())
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_pins(["retrieval.rrf_k"], RAGConfig())
    with pytest.raises(ValueError, match="strategy"):
        parse_pins(["chunking.strategy=wavelet"], RAGConfig())


def test_apply_sets_the_budget_and_keeps_every_combination_valid():
    config = apply(RAGConfig(), {"chunking.max_tokens": 128, "chunking.overlap": 128, "retrieval.initial_k": 30,
                                 "retrieval.max_k": 5}, budget=1000)
    assert config.retrieval.token_budget == 1000 and config.agent.context_budget == 1000
    assert config.chunking.overlap == 32  # fitted to a quarter of the chunk size
    assert config.retrieval.max_k == 30  # raised to initial_k


def test_the_start_moves_one_knob_at_a_time_within_its_range():
    from rag_core.tuning.space import ACTIVE_WHEN, neighbours, read

    base = apply(RAGConfig(), {}, budget=1500)
    knobs = knobs_for("search")
    values = {k.path: read(base, k.path) for k in knobs if k.path not in ACTIVE_WHEN or
              read(base, ACTIVE_WHEN[k.path][0]) == ACTIVE_WHEN[k.path][1]}
    trials = neighbours(knobs, values, base)
    by_path = {k.path: k for k in knobs}
    moved = []
    for trial in trials:
        changed = [p for p in trial if p in values and trial[p] != values[p]]
        assert len(changed) == 1  # one knob at a time
        path, value = changed[0], trial[changed[0]]
        one = by_path[path]
        assert value in one.choices if one.kind == "categorical" else one.low <= value <= one.high
        apply(base, trial)  # every neighbour is a valid configuration
        moved.append((path, value))
    assert ("retrieval.initial_k", 2) in moved and ("retrieval.initial_k", 17) in moved  # halfway to each bound
    assert ("retrieval.rrf_k", 4) in moved and ("retrieval.rrf_k", 63) in moved  # geometric: a log-scale knob
    weighted = next(t for t in trials if t["retrieval.fusion"] == "weighted")
    assert weighted["retrieval.hybrid_weight"] == base.retrieval.hybrid_weight and "retrieval.rrf_k" not in weighted
    assert len(moved) == len(set(moved)) and {p for p, _ in moved} == {k.path for k in knobs if k.path in values}
    # Chunking last (each builds an index), chunk size first among them, on its step: halfway to 128 and to 1024.
    sections = [path.split(".")[0] for path, _ in moved]
    assert sections == sorted(sections, key=lambda section: section == "chunking")
    chunking = [(path, value) for path, value in moved if path.startswith("chunking.")]
    assert chunking[:2] == [("chunking.max_tokens", 384), ("chunking.max_tokens", 768)]
    assert ("chunking.strategy", "fixed") in chunking and ("chunking.overlap", 16) in chunking
