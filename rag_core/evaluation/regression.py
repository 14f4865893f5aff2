"""When a run's score below its baseline is a regression rather than noise.

A metric's mean moves when a few questions change (0.811 → 0.810 on 60 questions is one reciprocal rank nudged),
so a drop is a regression only when it is both

* at least ``MIN_DROP`` (a difference worth acting on), and
* unlikely by chance: a one-sided paired sign-flip (permutation) test over the questions both runs scored gives
  ``p < ALPHA``. Under "no change" each question's difference is as likely to have either sign; ``p`` is the share
  of sign assignments whose total is as low as the one observed (exact up to ``EXACT_UP_TO`` changed questions,
  otherwise ``DRAWS`` random assignments with a fixed seed, so a page shows the same verdict on every rerun).

Without per-question scores of the baseline (a baseline kept before they were stored, whose run is deleted) the
test falls back to an unpaired one: the drop must exceed ``Z`` standard errors of a difference of two means,
estimated from the current run's per-question spread.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import numpy as np

MIN_DROP = 0.01
ALPHA = 0.05
Z = 1.96
EXACT_UP_TO = 12
DRAWS = 10_000
_EPS = 1e-12

RULE = (f"a drop counts as a regression when it is at least {MIN_DROP} and a one-sided paired sign-flip test over "
        f"the questions both runs scored gives p < {ALPHA}")


@dataclass(frozen=True, slots=True)
class Comparison:
    """One metric of a run against its baseline."""

    metric: str
    baseline: float
    current: float
    delta: float
    questions: int  # questions the test compared
    p_value: float | None  # None: unpaired fallback (no per-question baseline scores)
    test: str  # "paired sign-flip" or "unpaired z"
    regression: bool

    def to_dict(self) -> dict:
        return asdict(self)


def sign_flip_p(differences: list[float], draws: int = DRAWS, seed: int = 0) -> float:
    """One-sided p-value of a total of paired ``differences`` this low if each difference's sign were a coin toss."""
    nonzero = np.asarray([d for d in differences if abs(d) > _EPS], dtype=float)
    if nonzero.size == 0:
        return 1.0
    observed, changed = nonzero.sum(), np.abs(nonzero)
    if changed.size <= EXACT_UP_TO:
        bits = (np.arange(2 ** changed.size)[:, None] >> np.arange(changed.size)) & 1
        totals = (bits * 2 - 1) @ changed
        return float(np.mean(totals <= observed + _EPS))
    rng, weights = np.random.default_rng(seed), changed.astype(np.float32)
    low, batch = 0, 2_000
    for start in range(0, draws, batch):  # sign s = 2·bit − 1, so a total is 2·(bits · |d|) − Σ|d|
        rows = min(batch, draws - start)
        bits = np.unpackbits(rng.integers(0, 256, size=(rows, (changed.size + 7) // 8), dtype=np.uint8), axis=1,
                             count=changed.size)
        low += int(np.sum(2 * (bits.astype(np.float32) @ weights) - changed.sum() <= observed + 1e-6))
    return (low + 1) / (draws + 1)


def compare(metric: str, baseline: float, current: float, baseline_scores: Mapping[str, float] | None,
            current_scores: Mapping[str, float]) -> Comparison:
    """``metric``'s mean ``current`` against ``baseline``; per-question scores (question id → score) decide whether
    a drop is more than noise."""
    delta = current - baseline
    drop = -delta
    if baseline_scores:
        common = [q for q in current_scores if q in baseline_scores]
        p_value = sign_flip_p([current_scores[q] - baseline_scores[q] for q in common])
        regression = drop >= MIN_DROP - _EPS and p_value < ALPHA
        return Comparison(metric, baseline, current, round(delta, 4), len(common), round(p_value, 4),
                          "paired sign-flip", regression)
    values = list(current_scores.values())
    spread = statistics.stdev(values) if len(values) > 1 else 0.0
    standard_error = math.sqrt(2) * spread / math.sqrt(len(values)) if values else 0.0
    regression = drop >= MIN_DROP - _EPS and drop > Z * standard_error
    return Comparison(metric, baseline, current, round(delta, 4), len(values), None, "unpaired z", regression)
