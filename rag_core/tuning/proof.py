"""Is the tuned configuration really better? Paired per-question scores on the validation part, the regression
banner's statistics (a one-sided paired sign-flip test, ``MIN_DROP`` as the least gain worth acting on) and a
seeded paired bootstrap interval of the mean gain."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from rag_core.evaluation.regression import ALPHA, MIN_DROP, sign_flip_p
from rag_core.tuning.models import Validation

KEEP = "keep the current configuration"
INTERVAL_DRAWS = 5_000
RULE = (f"the gain is significant when it is at least {MIN_DROP} and a one-sided paired sign-flip test over the "
        f"validation questions gives p < {ALPHA}")


def paired_interval(differences: Sequence[float], confidence: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """A percentile bootstrap interval of the mean of paired ``differences`` (seeded: the same on every run)."""
    values = np.asarray(differences, dtype=float)
    if values.size == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, values.size, size=(INTERVAL_DRAWS, values.size))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return round(float(low), 4), round(float(high), 4)


def compare_paired(metric: str, current: Mapping[str, float], best: Mapping[str, float],
                   current_summary: Mapping[str, float], best_summary: Mapping[str, float]) -> Validation:
    """The best configuration's per-question ``metric`` against the current one's on the same questions."""
    common = [q for q in best if q in current]
    differences = [best[q] - current[q] for q in common]
    gain = float(np.mean(differences)) if differences else 0.0
    p_value = sign_flip_p([-d for d in differences])  # one-sided: a total this high if signs were coin tosses
    significant = gain >= MIN_DROP - 1e-12 and p_value < ALPHA
    return Validation(metric=metric, questions=len(common), current=dict(current_summary), best=dict(best_summary),
                      gain=round(gain, 4), interval=paired_interval(differences), p_value=round(p_value, 4),
                      significant=significant, test="paired sign-flip")


def recommendation(validation: Validation, saved_as: str = "") -> str:
    """What to do: use the tuned configuration only when its gain is significant."""
    if not validation.significant:
        return KEEP
    where = f" (saved as '{saved_as}')" if saved_as else ""
    return f"use the tuned configuration{where}: +{validation.gain:.3f} {validation.metric} on validation"
