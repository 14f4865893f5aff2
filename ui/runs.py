"""Stored evaluation runs, read once per change: listing a results folder parses every run file (their
per-question records), which made every rerun of Home and Evaluate take over a second at rest."""

from __future__ import annotations

import streamlit as st

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


@st.cache_resource(show_spinner=False, max_entries=64)
def _drawn(name: str, data_dir: str, run_id: str, stamp: tuple, args: tuple):
    from ui import charts

    return getattr(charts, name)(_loaded(data_dir, run_id, stamp), *args)


def chart(name: str, run, *args):
    """``ui.charts.<name>(run, *args)`` for a stored run, built once per run file change
    (a figure or table is read-only once drawn); a run not stored (yet) is drawn directly."""
    from ui import charts

    path = store().runs_dir / f"{run.id}.json"
    if not path.is_file():
        return getattr(charts, name)(run, *args)
    stamp = (path.stat().st_size, path.stat().st_mtime_ns)
    return _drawn(name, str(state.settings().data_dir), run.id, stamp, args)
