"""A tuning study's result made from literals, with its Optuna study stored beside it (for the Tune tab's tests)."""

from __future__ import annotations

import threading

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution

from rag_core.config import RAGConfig, Settings
from rag_core.tuning import KEEP, TrialRecord, TuneProgress, TuneResult, storage_url

# (number, state, max_tokens, initial_k, quality, tokens, latency)
TRIALS = [(0, "complete", 512, 5, 0.50, 900.0, 12.0), (1, "complete", 256, 10, 0.62, 1100.0, 15.0),
          (2, "pruned", 512, 1, 0.20, 300.0, 8.0), (3, "complete", 256, 3, 0.58, 700.0, 9.0),
          (4, "complete", 512, 20, 0.55, 1400.0, 20.0), (5, "complete", 256, 5, 0.61, 1000.0, 11.0)]
DISTRIBUTIONS = {"chunking.max_tokens": CategoricalDistribution([256, 512]),
                 "retrieval.initial_k": IntDistribution(1, 30)}


def fake_result(settings: Settings, *, significant: bool, study: str = "fake-study",
                chosen: tuple[int, int] | None = None) -> TuneResult:
    """A result of six trials whose study (same trials, same values) is in the data folder's storage; ``chosen``:
    (the trial put forward, the top-scoring trial), as a study's one-standard-error choice names them."""
    storage = optuna.create_study(study_name=study, storage=storage_url(settings), direction="maximize",
                                  load_if_exists=True)
    records = []
    for number, state, max_tokens, k, quality, tokens, latency in TRIALS:
        params = {"chunking.max_tokens": max_tokens, "retrieval.initial_k": k}
        metrics = {"quality": quality, "context_tokens": tokens, "latency_ms": latency, "complete": quality / 2}
        records.append(TrialRecord(number=number, state=state, params=params, metrics=metrics,
                                   kind="new chunking" if max_tokens == 256 and number == 1 else "retrieval-only",
                                   seconds=2.0 if number == 1 else 0.5, questions=20))
        if state == "complete":
            storage.add_trial(optuna.trial.create_trial(params=params, distributions=DISTRIBUTIONS, value=quality))
    current = RAGConfig(name="current").model_dump(mode="json")
    best = RAGConfig(name="trial 1").model_dump(mode="json")
    best["chunking"]["max_tokens"], best["retrieval"]["initial_k"] = 256, 10
    gain = 0.071 if significant else 0.004
    return TuneResult(
        study=study, status="time budget", metric="place_recall", strategy="search", budget=1500, best=best,
        current_config=current, current={"quality": 0.5, "complete": 0.25, "context_tokens": 900.0, "latency_ms": 12.0},
        best_metrics={"quality": 0.5 + gain, "complete": 0.3, "context_tokens": 1100.0, "latency_ms": 15.0},
        gain=gain, interval=(0.021, 0.118) if significant else (-0.03, 0.041),
        p_value=0.012 if significant else 0.41, significant=significant,
        recommendation=(f"use the tuned configuration: +{gain:.3f} place_recall on validation" if significant
                        else KEEP),
        trials=records, pareto=[1, 3, 5], counts={"trials": 6, "complete": 5, "pruned": 1, "failed": 0,
                                                   "stopped": 0, "skipped": 0, "repeats": 0, "retrieval_only": 5,
                                                   "new_chunking": 1},
        seconds_by_kind={"retrieval-only": 0.5, "new chunking": 2.0}, split={"tuning": 20, "validation": 9},
        knobs=[], pins={}, seconds=61.0, best_trial=chosen[0] if chosen else None,
        top_trial=chosen[1] if chosen else None,
        chosen_because=(f"trial {chosen[0]} is within one standard error of the top tuning score (trial {chosen[1]})"
                        " and moves the fewest knobs" if chosen else ""))


class FakeTune:
    """Stands in for ``services.tune_collection``: reports progress, then waits for a cancel or ``release``."""

    def __init__(self, settings: Settings, significant: bool = True):
        self.settings, self.significant = settings, significant
        self.release, self.reported = threading.Event(), threading.Event()
        self.calls: list[dict] = []

    def __call__(self, spec, questions, *, draft=0, settings=None, progress=None, should_stop=None):
        self.calls.append({"spec": spec, "questions": questions, "draft": draft})
        progress(TuneProgress(trials_done=3, pruned=1, best=0.62, elapsed_s=30.0, eta_s=240.0,
                              message="trial 3 done"))
        self.reported.set()
        while not self.release.wait(0.05):
            if should_stop():
                return fake_result(self.settings, significant=False).model_copy(update={"status": "cancelled"})
        return fake_result(self.settings, significant=self.significant)
