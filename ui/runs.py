"""Stored evaluation runs, read once per change: listing a results folder parses every run file (their
per-question records), which made every rerun of Home and Evaluate take over a second at rest."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from rag_core.evaluation.results import ResultsStore
from ui import state


def _stamp(folder: Path) -> tuple:
    """Names, sizes and change times of the run files: any save or delete gives a new stamp."""
    if not folder.is_dir():
        return ()
    return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.glob("*.json")))


def store() -> ResultsStore:
    return state.results_store()


@st.cache_data(show_spinner=False, max_entries=8)
def _listed(data_dir: str, stamp: tuple) -> list[dict]:
    return ResultsStore(data_dir).list()


def list_runs() -> list[dict]:
    """``ResultsStore.list()``, re-read only when a run file changed."""
    results = store()
    return _listed(str(state.settings().data_dir), _stamp(results.runs_dir))


@st.cache_resource(show_spinner=False, max_entries=16)
def _loaded(data_dir: str, run_id: str, stamp: tuple):
    return ResultsStore(data_dir).load(run_id)


def load_run(run_id: str):
    """``ResultsStore.load(run_id)``, kept until that run's file changes (treat the run as read-only)."""
    results = store()
    path = results.runs_dir / f"{run_id}.json"
    stamp = (path.stat().st_size, path.stat().st_mtime_ns) if path.is_file() else ()
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
