"""Evaluation results on disk: runs under ``<data_dir>/evaluations/runs/``, baselines, and the regression check.

With a Chroma server (``ResultsStore.for_settings``) runs and baselines are records on the server instead, so
every app instance lists the same runs (see ``rag_core.stores.shared``).

A baseline is the summary row of one configuration × strategy on one question set that a person chose to keep;
a later run of the same configuration, strategy and question set that scores below it on any quality metric
is a regression.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rag_core.evaluation.runner import QUALITY_METRICS, EvalRun
from rag_core.evaluation.schema import parse_run

_TOLERANCE = 1e-9


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
            "records": len(records), "label": text(data.get("label"))}


def baseline_key(question_set: str, config: str, strategy: str) -> str:
    return f"{question_set}|{config}|{strategy}"


class ResultsStore:
    """Saved evaluation runs (newest first) and baselines."""

    def __init__(self, data_dir: Path | str, records=None) -> None:
        self.root = Path(data_dir) / "evaluations"
        self.runs_dir = self.root / "runs"
        self.baselines_path = self.root / "baselines.json"
        self._runs = self._baselines = None  # SharedRecords on a Chroma server
        if records is not None:
            from rag_core.stores.shared import SharedRecords

            self._runs, self._baselines = SharedRecords(records, "run"), SharedRecords(records, "baselines")

    @classmethod
    def for_settings(cls, settings) -> ResultsStore:
        """The store the deployment uses: on the Chroma server when one is configured, else in the data folder."""
        if not settings.chroma_host:
            return cls(settings.data_dir)
        from rag_core.stores.shared import meta_records

        return cls(settings.data_dir, meta_records(settings))

    def version(self) -> tuple:
        """Changes whenever a run is saved or deleted (for caches of ``list`` and ``load``)."""
        if self._runs is not None:
            return tuple(self._runs.summaries())
        if not self.runs_dir.is_dir():
            return ()
        return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in self.runs_dir.glob("*.json")))

    def _run_path(self, run_id: str) -> Path:
        if not run_id or any(c in run_id for c in "/\\") or run_id.startswith("."):
            raise ValueError(f"'{run_id}' is not a valid run id")
        return self.runs_dir / f"{run_id}.json"

    def exists(self, run_id: str) -> bool:
        path = self._run_path(run_id)
        if self._runs is not None:
            return self._runs.get(run_id) is not None
        return path.is_file()

    def save(self, run: EvalRun) -> Path:
        path = self._run_path(run.id)
        data = run.to_dict()
        if self._runs is not None:
            self._runs.put(run.id, json.dumps(data, ensure_ascii=False),
                           json.dumps(_headline(data, run.id), ensure_ascii=False))
            return path
        _write_atomic(path, json.dumps(data, ensure_ascii=False))
        return path

    def _text(self, run_id: str) -> str | None:
        path = self._run_path(run_id)
        if self._runs is not None:
            return self._runs.get(run_id)
        return path.read_text(encoding="utf-8") if path.is_file() else None

    def load(self, run_id: str) -> EvalRun:
        try:
            text = self._text(run_id)
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
        """Headlines of stored runs, newest first (unreadable files are skipped)."""
        if self._runs is not None:
            rows = []
            for run_id, summary, _ in self._runs.summaries():
                try:
                    row = json.loads(summary)  # the headline saved beside the run (see ``save``)
                except ValueError:
                    continue
                if isinstance(row, dict) and set(row) >= {"created", "question_set", "configs", "status"}:
                    rows.append({**row, "id": run_id})
            return sorted(rows, key=lambda r: (r["created"], r["id"]), reverse=True)
        if not self.runs_dir.is_dir():
            return []
        rows = []
        for path in self.runs_dir.glob("*.json"):
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                continue
            rows.append(_headline(data, path.stem))
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
        path = self._run_path(run_id)
        if self._runs is not None:
            if not self._runs.delete(run_id):
                raise ValueError(f"no stored evaluation run '{run_id}'")
            return
        if not path.is_file():
            raise ValueError(f"no stored evaluation run '{run_id}'")
        path.unlink()

    # ------------------------------------------------------------ baselines

    def baselines(self) -> dict[str, dict[str, Any]]:
        if self._baselines is not None:
            text = self._baselines.get("all")
        else:
            text = self.baselines_path.read_text(encoding="utf-8") if self.baselines_path.is_file() else None
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
                    "metrics": {m: row[m] for m in QUALITY_METRICS if m in row}}
        baselines = self.baselines()
        baselines[baseline_key(run.question_set["name"], config, strategy)] = baseline
        self._save_baselines(baselines)
        return baseline

    def _save_baselines(self, baselines: dict[str, dict[str, Any]]) -> None:
        if self._baselines is not None:
            self._baselines.put("all", json.dumps(baselines, indent=2))
        else:
            _write_atomic(self.baselines_path, json.dumps(baselines, indent=2))

    def clear_baseline(self, question_set: str, config: str, strategy: str) -> None:
        baselines = self.baselines()
        if baselines.pop(baseline_key(question_set, config, strategy), None) is not None:
            self._save_baselines(baselines)

    def regressions(self, run: EvalRun) -> list[dict[str, Any]]:
        """Every metric of ``run`` below its saved baseline (same question set, configuration and strategy)."""
        return find_regressions(run, self.baselines())


def find_regressions(run: EvalRun, baselines: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows (config, strategy, metric, baseline, current, delta) where ``run`` scores below a baseline."""
    found = []
    for row in run.summary:
        baseline = baselines.get(baseline_key(run.question_set["name"], row["config"], row["strategy"]))
        if not baseline or baseline.get("run_id") == run.id:
            continue
        for metric, before in baseline.get("metrics", {}).items():
            now = row.get(metric)
            if now is not None and now < before - _TOLERANCE:
                found.append({"config": row["config"], "strategy": row["strategy"], "metric": metric,
                              "baseline": before, "current": now, "delta": round(now - before, 4),
                              "baseline_run": baseline.get("run_id")})
    return found
