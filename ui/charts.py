"""Tables and plotly figures of evaluation runs, drawn by the Evaluate and Home pages (``ui/runs.py`` caches them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go

from rag_core.evaluation.labels import same_settings
from rag_core.evaluation.runner import KS, EvalRun
from ui.safe_text import plot_text

LEADERBOARD_COLUMNS = ["config", "strategy", "questions", "hit@1", "hit@5", "recall@5", "recall@10", "mrr",
                       "ndcg@10", "complete", "said_not_found", "false_not_found", "cited", "grounded",
                       "context_tokens", "steps", "latency_ms_p50", "errors"]
_LAYOUT = {"height": 340, "margin": {"l": 10, "r": 10, "t": 40, "b": 10}}


Labels = Mapping[str, str] | None  # configuration name → label (``rag_core.evaluation.labels``)


def leaderboard(run: EvalRun, sort_by: str = "ndcg@10", labels: Labels = None) -> pd.DataFrame:
    """One row per configuration × strategy, best ``sort_by`` first; configurations shown by their ``labels``."""
    frame = pd.DataFrame(run.summary)
    if frame.empty:
        return frame
    twins = same_settings(run.configs, run.summary)
    shown = labels or {}
    if twins:  # two rows measuring the same settings under other names say so
        frame["note"] = ["same settings as " + ", ".join(shown.get(n, n) for n in twins[row.config, row.strategy])
                         if (row.config, row.strategy) in twins else "" for row in frame.itertuples()]
    frame["config"] = [shown.get(name, name) for name in frame["config"]]
    columns = [c for c in [*LEADERBOARD_COLUMNS, "note"] if c in frame.columns]  # a run has the metrics it measured
    if sort_by in frame.columns:
        frame = frame.sort_values(sort_by, ascending=False, kind="stable")
    return frame[columns].reset_index(drop=True)


def _series(row: dict[str, Any], labels: Labels = None) -> str:
    return f"{(labels or {}).get(row['config'], row['config'])} · {row['strategy']}"


def metric_vs_k(run: EvalRun, metric: str = "hit", labels: Labels = None) -> go.Figure:
    """``hit@k`` or ``recall@k`` for k in 1, 3, 5, 10, one line per configuration × strategy."""
    if metric not in ("hit", "recall"):
        raise ValueError(f"metric must be 'hit' or 'recall', not '{metric}'")
    rows = [{"series": plot_text(_series(row, labels)), "k": k, metric: row.get(f"{metric}@{k}")} for row in run.summary
            for k in KS]
    figure = px.line(pd.DataFrame(rows), x="k", y=metric, color="series", markers=True,
                     title=f"{metric}@k by configuration × strategy")
    figure.update_layout(**_LAYOUT, yaxis_range=[0, 1.05], xaxis={"tickvals": list(KS)})
    return figure


def per_intent_bars(run: EvalRun, metric: str = "hit@5", by: str = "intent", labels: Labels = None) -> go.Figure:
    """``metric`` per intent (or per question ``type``); a group without the metric has no bar."""
    groups = run.by_type if by == "type" else run.by_intent
    rows = [{"series": plot_text(_series(row, labels)), by: row[by], metric: row[metric]} for row in groups
            if metric in row]
    figure = px.bar(pd.DataFrame(rows, columns=["series", by, metric]), x=by, y=metric, color="series",
                    barmode="group", title=f"{metric} per {by}")
    figure.update_layout(**_LAYOUT, yaxis_range=[0, 1.05])
    return figure


def tokens_vs_recall(run: EvalRun, metric: str = "recall@5", labels: Labels = None) -> go.Figure:
    """Mean context tokens against ``metric``: up and to the left is better."""
    frame = pd.DataFrame([{"series": plot_text(_series(r, labels)), "strategy": r["strategy"],
                           "context tokens": r["context_tokens"], metric: r.get(metric)} for r in run.summary])
    figure = px.scatter(frame, x="context tokens", y=metric, color="series", symbol="strategy",
                        title=f"context tokens vs {metric} (up-left is better)")
    figure.update_traces(marker={"size": 13})
    figure.update_layout(**_LAYOUT, yaxis_range=[0, 1.1])
    integer_axis(figure, frame["context tokens"])
    return figure


def integer_axis(figure: go.Figure, values, axis: str = "x") -> None:
    """Integer ticks in one format (``2,215``) on an axis of a counted quantity: Plotly put ``2,214.5`` beside
    ``2215`` when the values were close together."""
    numbers = [float(v) for v in values if v is not None]
    span = (max(numbers) - min(numbers)) if numbers else 0.0
    update: dict[str, Any] = {"tickformat": ",d", "hoverformat": ",.0f"}
    if span < 8:  # Plotly would step by halves or tenths here; whole tokens, one tick each
        update.update(tickmode="linear", dtick=1)
    if axis == "x":
        figure.update_xaxes(**update)
    else:
        figure.update_yaxes(**update)


def questions_table(run: EvalRun, metric: str = "hit@5", labels: Labels = None) -> pd.DataFrame:
    """One row per question, one column per configuration × strategy holding ``metric``."""
    rows: dict[str, dict[str, Any]] = {}
    for record in run.records:
        row = rows.setdefault(record["question_id"], {"id": record["question_id"], "intent": record["intent"] or "—",
                                                       "question": record["question"]})
        if record.get("type"):
            row["type"] = record["type"]
        row[_series(record, labels)] = record["metrics"].get(metric)  # None: not measured
    return pd.DataFrame(list(rows.values()))


def sweep_heatmap(grid: Sequence[dict[str, Any]], metric: str, strategy: str) -> go.Figure:
    """Heatmap of ``metric`` over max tokens (rows) × k (columns) for one strategy."""
    frame = pd.DataFrame([g for g in grid if g["strategy"] == strategy])
    if frame.empty:
        raise ValueError(f"the sweep has no results for strategy '{strategy}'")
    table = frame.pivot_table(index="max_tokens", columns="k", values=metric)
    figure = px.imshow(table, text_auto=".3f", aspect="auto", color_continuous_scale="Viridis", zmin=0, zmax=1,
                       labels={"x": "k (initial)", "y": "max tokens", "color": metric},
                       title=f"{metric} · {strategy}: max tokens × k")
    figure.update_xaxes(type="category")
    figure.update_yaxes(type="category")
    figure.update_layout(**_LAYOUT)
    return figure
