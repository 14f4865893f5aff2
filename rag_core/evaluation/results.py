"""Evaluation results on disk: runs under ``<data_dir>/evaluations/runs/``, baselines, and the regression check.

With a Chroma server (``ResultsStore.for_settings``) runs and baselines are records on the server instead, so
every app instance lists the same runs (both are a ``rag_core.stores.records.RecordStore``).

A baseline is the summary row of one configuration × strategy on one question set that a person chose to keep,
with its per-question scores; a later run of the same configuration, strategy and question set that scores below it
on a quality metric by more than noise is a regression (the rule: ``rag_core.evaluation.regression``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rag_core.evaluation.regression import compare
from rag_core.evaluation.runner import QUALITY_METRICS, EvalRun
from rag_core.evaluation.schema import parse_run
from rag_core.stores.backends import server_mode
from rag_core.stores.records import FileRecords, RecordStore, open_records

_TOLERANCE = 1e-9


def _headline(data: Any, stem: str) -> dict[str, Any]:
    """The list row of a stored run, read defensively: a malformed file is listed (so it can be deleted), with
    status "unreadable", instead of breaking the pages that list runs."""
    def text(value: Any, default: str = "") -> str:
        return value[:300] if isinstance(value, str) else default

    data = data if isinstance(data, dict) else {}
    question_set = data.get("question_set") if isinstance(data.get("question_set"), dict) else {}
    configs = data.get("configs") if isinstance(data.get("configs"), list) else []
    strategies = data.get("strategies") if isinstance(data.get("strategies"), list) else []
    records = data.get("records") if isinstance(data.get("records"), list) else []
    return {"id": stem, "created": text(data.get("created")), "question_set": text(question_set.get("name")),
            "configs": [text(c.get("name"), "?") for c in configs if isinstance(c, dict)],
            "strategies": [text(s, "?") for s in strategies], "status": text(data.get("status"), "unreadable"),
            "records": len(records), "label": text(data.get("label")),
            "config_settings": [c for c in configs if isinstance(c, dict)]}  # to label alike-named configurations


def _summary(run_id: str, text: str) -> str:
    """The headline of a stored run as JSON: what the run list shows without reading every run."""
    return json.dumps(_headline(json.loads(text), run_id), ensure_ascii=False)


def baseline_key(question_set: str, config: str, strategy: str) -> str:
    return f"{question_set}|{config}|{strategy}"


class ResultsStore:
    """Saved evaluation runs (newest first) and baselines."""

    def __init__(self, data_dir: Path | str, runs: RecordStore | None = None, baselines: RecordStore | None = None,
                 baselines_key: str = "baselines") -> None:
        self.root = Path(data_dir) / "evaluations"
        self.runs_dir = self.root / "runs"
        self.baselines_path = self.root / "baselines.json"
        self._runs = runs if runs is not None else FileRecords(self.runs_dir, _summary)
        # Every baseline sits in one record: ``evaluations/baselines.json``, or ``baselines/all`` on a server.
        self._baselines = baselines if baselines is not None else FileRecords(self.root)
        self._baselines_key = baselines_key

    @classmethod
    def for_settings(cls, settings) -> ResultsStore:
        """The store the deployment uses: on the Chroma server when one is configured, else in the data folder."""
        runs = open_records(settings, "evaluations/runs", "run", _summary)
        baselines = open_records(settings, "evaluations", "baselines")
        # The server's record was named ``all`` before there was a file backend; kept so saved baselines stay found.
        return cls(settings.data_dir, runs, baselines, "all" if server_mode(settings) else "baselines")

    def version(self) -> tuple:
        """Changes whenever a run is saved or deleted (for caches of ``list`` and ``load``)."""
        return self._runs.version()

    def _check_id(self, run_id: str) -> str:
        if not run_id or any(c in run_id for c in "/\\") or run_id.startswith("."):
            raise ValueError(f"'{run_id}' is not a valid run id")
        return run_id

    def exists(self, run_id: str) -> bool:
        return self._runs.get(self._check_id(run_id)) is not None

    def save(self, run: EvalRun) -> Path:
        self._runs.put(self._check_id(run.id), json.dumps(run.to_dict(), ensure_ascii=False))
        return self.runs_dir / f"{run.id}.json"

    def load(self, run_id: str) -> EvalRun:
        try:
            text = self._runs.get(self._check_id(run_id))
            if text is None:
                raise ValueError(f"no stored evaluation run '{run_id}'")
            data = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise ValueError(f"stored evaluation run '{run_id}' is unreadable ({e}); delete it") from e
        try:
            return parse_run(data, f"stored evaluation run '{run_id}'")
        except ValueError as e:
            raise ValueError(f"{e}; delete it") from None

    def list(self) -> list[dict[str, Any]]:
        """Headlines of stored runs, newest first (unreadable runs are skipped)."""
        rows = []
        for run_id, summary in self._runs.summaries():
            try:
                row = json.loads(summary)
            except (ValueError, RecursionError):
                continue
            if isinstance(row, dict) and set(row) >= {"created", "question_set", "configs", "status"}:
                rows.append({**row, "id": run_id})
        return sorted(rows, key=lambda r: (r["created"], r["id"]), reverse=True)

    def latest(self, count: int = 5) -> list[EvalRun]:
        runs = []
        for row in self.list()[:count]:
            try:
                runs.append(self.load(row["id"]))
            except ValueError:
                continue
        return runs

    def delete(self, run_id: str) -> None:
        if not self._runs.delete(self._check_id(run_id)):
            raise ValueError(f"no stored evaluation run '{run_id}'")

    # ------------------------------------------------------------ baselines

    def baselines(self) -> dict[str, dict[str, Any]]:
        text = self._baselines.get(self._baselines_key)
        if text is None:
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return {}
        return data if isinstance(data, dict) else {}

    def set_baseline(self, run: EvalRun, config: str, strategy: str) -> dict[str, Any]:
        """Keep the summary row of ``config`` × ``strategy`` in ``run`` as the baseline to beat."""
        row = next((r for r in run.summary if r["config"] == config and r["strategy"] == strategy), None)
        if row is None:
            raise ValueError(f"run {run.id} has no results for configuration '{config}' with strategy '{strategy}'")
        if run.status != "complete":
            raise ValueError(f"run {run.id} is {run.status}; only a complete run can be a baseline")
        baseline = {"run_id": run.id, "created": run.created,
                    "metrics": {m: row[m] for m in QUALITY_METRICS if m in row},
                    "scores": {m: question_scores(run.records, config, strategy, m) for m in QUALITY_METRICS
                               if m in row}}
        baselines = self.baselines()
        baselines[baseline_key(run.question_set["name"], config, strategy)] = baseline
        self._save_baselines(baselines)
        return baseline

    def _save_baselines(self, baselines: dict[str, dict[str, Any]]) -> None:
        self._baselines.put(self._baselines_key, json.dumps(baselines, indent=2))

    def clear_baseline(self, question_set: str, config: str, strategy: str) -> None:
        baselines = self.baselines()
        if baselines.pop(baseline_key(question_set, config, strategy), None) is not None:
            self._save_baselines(baselines)

    def regressions(self, run: EvalRun) -> list[dict[str, Any]]:
        """Every metric of ``run`` below its saved baseline (same question set, configuration and strategy) by
        more than noise."""
        return find_regressions(run, self.baselines(), self.load)

    def below_baseline(self, run: EvalRun) -> list[dict[str, Any]]:
        """Every metric of ``run`` below its saved baseline, each with the verdict (``regression``) and its test."""
        return compare_with_baselines(run, self.baselines(), self.load)


def question_scores(records: list[dict[str, Any]], config: str, strategy: str, metric: str) -> dict[str, float]:
    """Question id → ``metric`` of ``config`` × ``strategy`` in a run's records (questions without it left out)."""
    return {r["question_id"]: r["metrics"][metric] for r in records
            if r.get("config") == config and r.get("strategy") == strategy and r.get("question_id") is not None
            and r.get("metrics", {}).get(metric) is not None}


def _baseline_scores(baseline: dict[str, Any], config: str, strategy: str,
                     load_run: Callable[[str], EvalRun] | None) -> dict[str, dict[str, float]]:
    """Per-question scores of a baseline: kept with it, else read from its run while that run is stored."""
    if isinstance(baseline.get("scores"), dict):  # read defensively: the baselines file may have been edited
        return {m: {str(q): float(v) for q, v in s.items() if isinstance(v, int | float) and not isinstance(v, bool)}
                for m, s in baseline["scores"].items() if isinstance(s, dict)}
    if load_run is None or not baseline.get("run_id"):
        return {}
    try:
        records = load_run(baseline["run_id"]).records
    except ValueError:  # the baseline's run was deleted or is unreadable
        return {}
    return {m: question_scores(records, config, strategy, m) for m in baseline.get("metrics", {})}


def compare_with_baselines(run: EvalRun, baselines: dict[str, dict[str, Any]],
                           load_run: Callable[[str], EvalRun] | None = None) -> list[dict[str, Any]]:
    """Rows (config, strategy, metric, baseline, current, delta, questions, p_value, test, regression,
    baseline_run) for every metric where ``run`` scores below a baseline."""
    found = []
    for row in run.summary:
        baseline = baselines.get(baseline_key(run.question_set["name"], row["config"], row["strategy"]))
        if not baseline or baseline.get("run_id") == run.id:
            continue
        scores = None
        for metric, before in baseline.get("metrics", {}).items():
            now = row.get(metric)
            if now is None or now >= before - _TOLERANCE:
                continue
            if scores is None:
                scores = _baseline_scores(baseline, row["config"], row["strategy"], load_run)
            verdict = compare(metric, before, now, scores.get(metric),
                              question_scores(run.records, row["config"], row["strategy"], metric))
            found.append({"config": row["config"], "strategy": row["strategy"], **verdict.to_dict(),
                          "baseline_run": baseline.get("run_id")})
    return found


def find_regressions(run: EvalRun, baselines: dict[str, dict[str, Any]],
                     load_run: Callable[[str], EvalRun] | None = None) -> list[dict[str, Any]]:
    """The rows of ``compare_with_baselines`` that are regressions, not noise."""
    return [row for row in compare_with_baselines(run, baselines, load_run) if row["regression"]]
