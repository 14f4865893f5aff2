"""The tuner's inputs and outputs as JSON-ready models: what to tune, how far it got, what it found."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from rag_core.tuning.space import TuneStrategy

Sampler = Literal["tpe", "random", "grid"]


class TuneSpec(BaseModel):
    """What to tune: the question set, the strategy, the budget everything is scored at, and when to stop."""

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(min_length=1)
    strategy: TuneStrategy = "search"
    budget: int = Field(1500, ge=100, le=128_000, description="Context tokens every trial is scored at.")
    minutes: float | None = Field(5.0, gt=0, le=24 * 60, description="Time budget of the search (None: trials).")
    trials: int | None = Field(None, ge=1, le=10_000, description="Most trials (None: until the time is up).")
    seed: int = 0
    pins: dict[str, Any] = Field(default_factory=dict, description="Dotted path → value, never tuned.")
    sampler: Sampler = "tpe"
    grid: dict[str, list[Any]] = Field(default_factory=dict, description="The grid sampler's knobs and values "
                                       "(dotted path → values; the other knobs stay at the current values).")
    multi_objective: bool = Field(False, description="Quality, tokens and latency as three objectives (TPE's "
                                  "multi-objective mode; no pruning) instead of quality with pruning.")
    study_name: str = Field("", max_length=120, description="Resume the stored study of this name ('' : derived).")
    validation_share: float = Field(0.3, gt=0, lt=1)
    prune_steps: int = Field(4, ge=1, le=20, description="Question batches a trial reports (pruning checkpoints).")
    max_chunkings: int = Field(6, ge=1, le=100, description="Most distinct chunkings (indexes) one study builds.")

    @model_validator(mode="after")
    def _bounded(self) -> TuneSpec:
        if self.minutes is None and self.trials is None:
            raise ValueError("give a time budget (minutes) or a number of trials: a study needs an end")
        return self


class TuneProgress(BaseModel):
    """Where a study stands, after each trial (and each question batch)."""

    trials_done: int = 0
    pruned: int = 0
    failed: int = 0
    best: float | None = None
    best_params: dict[str, Any] = Field(default_factory=dict)
    elapsed_s: float = 0.0
    eta_s: float | None = None
    message: str = ""


class TrialRecord(BaseModel):
    """One trial: its knob values, the configuration's metrics on the tuning questions, how it ended."""

    number: int
    state: str  # complete | pruned | failed | stopped
    params: dict[str, Any]
    metrics: dict[str, float] = Field(default_factory=dict)
    kind: str = ""  # retrieval-only | new chunking | repeat
    seconds: float = 0.0
    questions: int = 0
    note: str = ""


class Validation(BaseModel):
    """The current and the best configuration scored on the validation questions, and the paired comparison."""

    metric: str
    questions: int
    current: dict[str, float]
    best: dict[str, float]
    gain: float
    interval: tuple[float, float]
    p_value: float
    significant: bool
    test: str


class TuneResult(BaseModel):
    """A finished (or stopped) study: the best configuration, its proof on validation, every trial."""

    study: str
    status: str  # cancelled | time budget | trials | grid done
    metric: str
    strategy: str
    budget: int
    best: dict[str, Any]
    current_config: dict[str, Any]
    current: dict[str, float]
    best_metrics: dict[str, float]
    gain: float
    interval: tuple[float, float]
    p_value: float
    significant: bool
    recommendation: str
    trials: list[TrialRecord]
    pareto: list[int]
    counts: dict[str, int]
    seconds_by_kind: dict[str, float]
    split: dict[str, int]
    knobs: list[dict[str, Any]]
    pins: dict[str, Any]
    trust: dict[str, Any] | None = None
    seconds: float = 0.0
    saved_as: str = ""
    best_trial: int | None = Field(None, description="The trial put forward (its configuration is ``best``).")
    top_trial: int | None = Field(None, description="The trial with the top tuning score.")
    chosen_because: str = Field("", description="Why the trial put forward is that one (the one-standard-error "
                                "rule: the fewest knobs moved within noise of the top score).")
