"""Plotly figures and tables of a tuning study (``ui/evaluate/tune_view.py`` draws them): optimisation history,
the Pareto front, parameter importance, a slice per knob, the validation comparison. Every value is a measured one
from the stored ``TuneResult``; nothing is estimated here."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from rag_core.tuning.models import TrialRecord, TuneResult

METRIC_LABELS = {"place_recall": "place recall at the budget", "ndcg@10": "nDCG@10"}


def metric_label(result: TuneResult) -> str:
    return METRIC_LABELS.get(result.metric, result.metric)


def short(path: str) -> str:
    """``retrieval.rrf_k`` → ``rrf_k (retrieval)``: the knob first, its section after."""
    section, _, leaf = path.partition(".")
    return f"{leaf} ({section})" if leaf else path


def complete_trials(result: TuneResult) -> list[TrialRecord]:
    return [t for t in result.trials if t.state == "complete" and "quality" in t.metrics]


def history_frame(result: TuneResult) -> pd.DataFrame:
    """One row per complete trial in order: its quality and the best so far."""
    rows, best = [], None
    for trial in sorted(complete_trials(result), key=lambda t: t.number):
        quality = trial.metrics["quality"]
        best = quality if best is None else max(best, quality)
        rows.append({"trial": trial.number, "quality": quality, "best so far": best, "kind": trial.kind or "—"})
    return pd.DataFrame(rows, columns=["trial", "quality", "best so far", "kind"])


def history_figure(result: TuneResult) -> go.Figure:
    frame = history_frame(result)
    label = metric_label(result)
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=frame["trial"], y=frame["quality"], mode="markers", name="trial",
                                text=frame["kind"], hovertemplate="trial %{x}: %{y:.3f} (%{text})<extra></extra>"))
    figure.add_trace(go.Scatter(x=frame["trial"], y=frame["best so far"], mode="lines", name="best so far",
                                line={"shape": "hv"}, hovertemplate="best after trial %{x}: %{y:.3f}<extra></extra>"))
    figure.update_layout(title="Optimisation history (tuning questions)", xaxis_title="trial",
                         yaxis_title=label, height=360, margin={"t": 50, "b": 40})
    return figure


def pareto_frame(result: TuneResult) -> pd.DataFrame:
    """Every complete trial with quality, context tokens, latency and whether it is on the Pareto front."""
    front = set(result.pareto)
    rows = [{"trial": t.number, "quality": t.metrics["quality"],
             "context tokens": t.metrics.get("context_tokens", float("nan")),
             "latency ms": t.metrics.get("latency_ms", float("nan")),
             "front": "on the Pareto front" if t.number in front else "dominated"}
            for t in complete_trials(result)]
    return pd.DataFrame(rows, columns=["trial", "quality", "context tokens", "latency ms", "front"])


def pareto_figure(result: TuneResult) -> go.Figure:
    frame = pareto_frame(result)
    figure = px.scatter(frame, x="context tokens", y="quality", color="front", size="latency ms",
                        size_max=18, hover_data=["trial", "latency ms"], custom_data=["trial"],
                        category_orders={"front": ["on the Pareto front", "dominated"]},
                        labels={"quality": metric_label(result)},
                        title="Quality vs context tokens (marker size: median latency)")
    figure.update_layout(height=380, margin={"t": 50, "b": 40})
    return figure


def importance_figure(importances: dict[str, float]) -> go.Figure:
    names = list(importances)[::-1]  # the most important on top
    figure = go.Figure(go.Bar(x=[importances[n] for n in names], y=[short(n) for n in names], orientation="h",
                              hovertemplate="%{y}: %{x:.2f}<extra></extra>"))
    figure.update_layout(title="Parameter importance (Optuna PED-ANOVA: how much a knob sets the best trials apart)",
                         xaxis_title="importance", height=max(220, 40 + 28 * len(names)), margin={"t": 50, "b": 40})
    return figure


def slice_figure(result: TuneResult, path: str) -> go.Figure | None:
    """Quality of every complete trial against one knob's value (None when no trial set it)."""
    rows = [{"value": t.params[path], "quality": t.metrics["quality"], "trial": t.number}
            for t in complete_trials(result) if path in t.params]
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    if frame["value"].map(lambda v: isinstance(v, str | bool)).any():
        frame["value"] = frame["value"].astype(str)
    figure = px.scatter(frame, x="value", y="quality", hover_data=["trial"],
                        labels={"value": short(path), "quality": metric_label(result)}, title=f"Slice: {short(path)}")
    figure.update_layout(height=300, margin={"t": 50, "b": 40})
    return figure


PUT_FORWARD = "configuration put forward"  # the study's choice: rag_core/tuning/choose.py


def validation_frame(result: TuneResult) -> pd.DataFrame:
    """The current configuration's and the one put forward's metrics on the validation questions, side by side."""
    names = [n for n in result.current if n in result.best_metrics]
    rows = [{"metric": "quality (" + metric_label(result) + ")" if n == "quality" else n,
             "current configuration": result.current[n], PUT_FORWARD: result.best_metrics[n],
             "difference": result.best_metrics[n] - result.current[n]} for n in names]
    return pd.DataFrame(rows, columns=["metric", "current configuration", PUT_FORWARD, "difference"])


def validation_figure(result: TuneResult) -> go.Figure:
    current, best = result.current.get("quality", 0.0), result.best_metrics.get("quality", 0.0)
    low, high = result.interval
    figure = go.Figure(go.Bar(x=["current configuration", PUT_FORWARD], y=[current, best],
                              text=[f"{current:.3f}", f"{best:.3f}"], textposition="auto",
                              error_y={"type": "data", "symmetric": False, "array": [0, max(0.0, high - result.gain)],
                                       "arrayminus": [0, max(0.0, result.gain - low)]}))
    figure.update_layout(title="On the validation questions (the search never saw them); bar: 95 % interval of "
                               "the gain", yaxis_title=metric_label(result), height=340, margin={"t": 60, "b": 40})
    return figure


def counts_frame(result: TuneResult) -> pd.DataFrame:
    counts = result.counts
    rows = [{"trials": label, "count": counts.get(key, 0)} for key, label in (
        ("trials", "ran"), ("complete", "complete"), ("pruned", "pruned"), ("skipped", "skipped (no time to build)"),
        ("failed", "failed"), ("stopped", "stopped"), ("repeats", "repeats (reused scores)"),
        ("retrieval_only", "retrieval-only"), ("new_chunking", "new chunking"))]
    return pd.DataFrame(rows)


def seconds_frame(result: TuneResult) -> pd.DataFrame:
    return pd.DataFrame([{"trial kind": kind, "mean seconds per complete trial": seconds}
                         for kind, seconds in result.seconds_by_kind.items()],
                        columns=["trial kind", "mean seconds per complete trial"])


def config_frame(params: dict[str, Any], current: dict[str, Any]) -> pd.DataFrame:
    """A trial's knob values beside the current configuration's (as text: a column may mix numbers and words)."""
    rows = []
    for path, value in params.items():
        section, _, leaf = path.partition(".")
        now = current.get(section, {}).get(leaf) if leaf else current.get(path)
        rows.append({"knob": short(path), "this trial": str(value), "current": str(now),
                     "changed": "yes" if value != now else ""})
    return pd.DataFrame(rows, columns=["knob", "this trial", "current", "changed"])
