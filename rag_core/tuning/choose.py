"""Which trial a study puts forward: the simplest configuration whose tuning score is within noise of the top one.

The top tuning score of hundreds of trials is biased upwards (the winner's curse: the trial that scored highest is
partly the one the tuning questions happened to favour), and the more knobs a trial moved the more room it had to fit
those questions. So the study puts forward, among the complete trials whose score is within one standard error of the
top trial's, the one that moves the fewest knobs away from the current configuration (then the higher score, then
fewer context tokens). This is the one-standard-error rule of model selection (Breiman et al., *Classification and
Regression Trees*, 1984; Hastie, Tibshirani and Friedman, *The Elements of Statistical Learning*, §7.10), with the
standard error of the paired per-question difference to the top trial (the two are scored on the same questions).

Written here because Optuna picks ``best_trial`` by the top score alone and has no such rule.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Candidate:
    """A complete trial: its number, tuning score, per-question scores, knobs moved and context tokens."""

    number: int
    quality: float
    scores: Mapping[str, float]
    moved: int
    tokens: float = 0.0


@dataclass(frozen=True, slots=True)
class Choice:
    """The trial put forward, the top-scoring trial, and why (one sentence a person reads)."""

    chosen: int
    top: int
    why: str


def top_order(quality: float, tokens: float, number: int) -> tuple[float, float, int]:
    """The order of "top tuning score": higher score, then fewer context tokens, then the earlier trial (max wins)."""
    return quality, -tokens, -number


def paired_se(top: Mapping[str, float], other: Mapping[str, float]) -> float:
    """The standard error of the mean per-question difference between two trials on their common questions
    (infinite when fewer than two are common: nothing can be told apart)."""
    common = [q for q in top if q in other]
    if len(common) < 2:
        return math.inf
    return statistics.stdev(top[q] - other[q] for q in common) / math.sqrt(len(common))


def simplest_within_noise(candidates: Sequence[Candidate]) -> Choice | None:
    """The one-standard-error choice among ``candidates`` (None when there are none). A candidate without
    per-question scores (a study stored before they were kept) is compared by its score alone: it is within noise
    only when it ties the top score."""
    if not candidates:
        return None
    top = max(candidates, key=lambda c: top_order(c.quality, c.tokens, c.number))
    within = []
    for one in candidates:
        se = paired_se(top.scores, one.scores) if one.scores and top.scores else 0.0
        if top.quality - one.quality <= (se if math.isfinite(se) else 0.0) + 1e-12:
            within.append(one)
    chosen = min(within, key=lambda c: (c.moved, -c.quality, c.tokens, c.number))
    if chosen.number == top.number:
        why = (f"trial {top.number} has the top tuning score ({top.quality:.3f}) and no trial moving fewer knobs "
               "came within one standard error of it")
    else:
        knobs = "knob" if chosen.moved == 1 else "knobs"
        why = (f"trial {chosen.number} ({chosen.quality:.3f}, {chosen.moved} {knobs} moved) is within one standard "
               f"error of the top tuning score (trial {top.number}: {top.quality:.3f}, {top.moved} moved) and moves "
               "the fewest knobs: a top score among many trials is partly luck on the tuning questions")
    return Choice(chosen=chosen.number, top=top.number, why=why)


def moved_knobs(params: Mapping[str, Any], current: Mapping[str, Any]) -> int:
    """How many of a trial's knob values differ from the current configuration's (floats to 4 decimals)."""
    def same(a: Any, b: Any) -> bool:
        if isinstance(a, float) or isinstance(b, float):
            try:
                return round(float(a), 4) == round(float(b), 4)
            except (TypeError, ValueError):
                return False
        return a == b

    return sum(1 for path, value in params.items() if path not in current or not same(value, current[path]))
