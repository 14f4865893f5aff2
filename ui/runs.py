"""Stored evaluation runs, read once per change: listing a results folder parses every run file (their
per-question records), which made every rerun of Home and Evaluate take over a second at rest."""

from __future__ import annotations

import streamlit as st

from rag_core.evaluation import labels
from rag_core.evaluation.results import ResultsStore
from ui import state


def store() -> ResultsStore:
    return state.results_store()


@st.cache_data(show_spinner=False, max_entries=8)
def _listed(data_dir: str, stamp: tuple) -> list[dict]:
    return store().list()


def list_runs() -> list[dict]:
    """``ResultsStore.list()``, re-read only when a run was saved or deleted (here or, with a Chroma server,
    through another instance)."""
    results = store()
    return _listed(str(state.settings().data_dir), results.version())


@st.cache_resource(show_spinner=False, max_entries=16)
def _loaded(data_dir: str, run_id: str, stamp: tuple):
    return store().load(run_id)


def load_run(run_id: str):
    """``ResultsStore.load(run_id)``, kept until that run's file changes (treat the run as read-only)."""
    results = store()
    path = results.runs_dir / f"{run_id}.json"
    stamp = (path.stat().st_size, path.stat().st_mtime_ns) if path.is_file() else results.version()
    return _loaded(str(state.settings().data_dir), run_id, stamp)


def _stored_configs() -> list[dict]:
    return [c for row in list_runs() for c in row.get("config_settings") or [] if isinstance(c, dict)]


@st.cache_data(show_spinner=False, max_entries=8)
def _labelled(data_dir: str, stamp: tuple) -> dict[tuple[str, str], str]:
    return labels.distinct_labels(_stored_configs())


def _stored_labels() -> dict[tuple[str, str], str]:
    """Labels of every configuration of the stored runs, worked out once per saved or deleted run."""
    return _labelled(str(state.settings().data_dir), store().version())


def run_labels(run) -> dict[str, str]:
    """Configuration name → label of ``run``'s configurations: the name, plus the settings that differ when other
    stored runs used other settings under the same name (``rag_core.evaluation.labels``)."""
    configs = [c for c in run.configs if isinstance(c, dict)]
    known = _stored_labels()
    if any((str(c.get("name")), labels.settings_key(c)) not in known for c in configs):  # a run not stored
        known = labels.distinct_labels([*_stored_configs(), *configs])
    return labels.run_labels(configs, known)


def row_labels(row: dict) -> list[str]:
    """The configuration labels of a ``list_runs()`` row, for run pickers."""
    configs = row.get("config_settings") or []
    if not configs:  # listed by an older version (a Chroma server's stored headline): names only
        return list(row.get("configs") or [])
    return list(labels.run_labels(configs, _stored_labels()).values())


@st.cache_resource(show_spinner=False, max_entries=64)
def _drawn(name: str, data_dir: str, run_id: str, stamp: tuple, args: tuple, shown: tuple):
    from ui import charts

    return getattr(charts, name)(_loaded(data_dir, run_id, stamp), *args, labels=dict(shown))


def chart(name: str, run, *args):
    """``ui.charts.<name>(run, *args)`` with the run's configuration labels, for a stored run built once per run
    file change and set of labels (a figure or table is read-only once drawn); a run not stored (yet) is drawn
    directly."""
    from ui import charts

    shown = tuple(sorted(run_labels(run).items()))
    path = store().runs_dir / f"{run.id}.json"
    if not path.is_file():
        return getattr(charts, name)(run, *args, labels=dict(shown))
    stamp = (path.stat().st_size, path.stat().st_mtime_ns)
    return _drawn(name, str(state.settings().data_dir), run.id, stamp, args, shown)
