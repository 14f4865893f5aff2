"""A stored tuning study's result on Evaluate › Tune: the recommendation first ("keep the current configuration"
when the gain is not significant), the validation proof, the charts a stakeholder reads, the trial counts, and
**Use this configuration** (save it by name, make it active, re-index as a job through ``reindex_view``)."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from rag_core.config import RAGConfig
from rag_core.errors import field_problems
from rag_core.serving.tuning_jobs import StoredTune, load_result, param_importances
from rag_core.tuning import KEEP
from ui import jobs, reindex_view, state
from ui.evaluate import tune_charts as charts
from ui.safe_text import md_escape, md_inert

SAVE_NAME_KEY, APPLIED_KEY, FRONT_KEY = "tune_save_name", "tune_applied", "tune_front_point"
SLICES = 3  # slices drawn: the most important knobs


def headline(stored: StoredTune) -> None:
    """The recommendation, verbatim, and the proof behind it (measured on the validation questions)."""
    result = stored.result
    if result.status == "cancelled":
        st.warning("This study was cancelled: what follows is measured on the trials it ran before.")
    if not result.significant:
        st.warning(f"### Keep the current configuration\nRecommendation: **{md_escape(result.recommendation)}**. "
                   f"The gain of the configuration put forward on the validation questions ({result.gain:+.3f}) is not "
                   "significant.")
    else:
        st.success(f"### Recommendation: {md_escape(result.recommendation)}")
    gain, interval, p_value, questions = st.columns([1, 1.5, 0.8, 1])  # the interval is the widest value
    gain.metric("Gain on validation", f"{result.gain:+.3f}", help=f"{charts.metric_label(result)}, the trial "
                "put forward minus the current configuration, on questions the search never saw")
    interval.metric("95 % interval", f"{result.interval[0]:+.3f} to {result.interval[1]:+.3f}",
                    help="Seeded paired bootstrap interval of the mean gain")
    p_value.metric("p-value", f"{result.p_value:.3f}", help="One-sided paired sign-flip test (the regression "
                   "banner's); significant when the gain is at least 0.01 and p < 0.05")
    questions.metric("Validation / tuning questions", f"{result.split.get('validation', 0)} / "
                     f"{result.split.get('tuning', 0)}")
    if result.chosen_because:
        st.caption(md_inert(f"The configuration put forward: {result.chosen_because}."))
    st.caption(md_inert(f"Question set: {stored.question_set} · strategy {result.strategy} · every trial scored at "
                        f"{result.budget} context tokens · study {result.study} · ended: {result.status} after "
                        f"{result.seconds:.0f} s"))
    if result.trust and result.trust.get("tau") is not None:
        st.info(md_inert(f"How far a drafted set can be trusted: Kendall's tau {result.trust['tau']:.2f} between "
                         "how drafted and human questions ranked configurations (measured by bench drafted on "
                         f"{result.trust.get('corpus') or 'its corpus'})."))
    elif result.trust:
        st.info(md_inert(result.trust.get("note", "")))


def _clicked_trial(event, numbers: set[int]) -> int | None:
    """The trial number of the point clicked on the front chart (its ``custom_data``), None when none is."""
    points = (getattr(event, "selection", None) or {}).get("points") or []
    for point in points:
        custom = point.get("customdata") or []
        if custom and isinstance(custom[0], int | float) and int(custom[0]) in numbers:
            return int(custom[0])
    return None


def pareto(stored: StoredTune) -> None:
    """The front chart and the picked trial's knob values beside the current configuration's (the front first)."""
    result = stored.result
    trials = charts.complete_trials(result)
    if not trials:
        st.info("No trial completed, so there is no Pareto front.")
        return
    event = st.plotly_chart(charts.pareto_figure(result), key=f"tune_pareto_{stored.job}", on_select="rerun",
                            selection_mode="points")
    front = set(result.pareto)
    # The trial put forward first (the box opens on it), then the front.
    ordered = sorted(trials, key=lambda t: (t.number != result.best_trial, t.number not in front, t.number))

    def tags(number: int) -> str:
        marks = [name for name, on in (("put forward", number == result.best_trial),
                                       ("top tuning score", number == result.top_trial),
                                       ("Pareto front", number in front)) if on]
        return f" ({', '.join(marks)})" if marks else ""

    labels = {t.number: f"trial {t.number}{tags(t.number)}: "
                        f"{t.metrics.get('quality', 0):.3f} quality, {t.metrics.get('context_tokens', 0):.0f} tokens, "
                        f"{t.metrics.get('latency_ms', 0):.0f} ms" for t in ordered}
    key = f"{FRONT_KEY}_{stored.job}"
    clicked = _clicked_trial(event, set(labels))
    if clicked is not None and st.session_state.get(f"{key}_clicked") != clicked:
        # A new click picks its trial below; the same selection on later reruns leaves the box as the person set it.
        st.session_state[key] = st.session_state[f"{key}_clicked"] = clicked
    number = st.selectbox("Configuration of a trial (click a point, or pick it here)", list(labels), key=key,
                          format_func=labels.get)
    trial = next(t for t in trials if t.number == number)
    st.dataframe(charts.config_frame(trial.params, result.current_config), hide_index=True, width="stretch")
    if trial.note:
        st.caption(md_escape(trial.note))


@st.cache_data(show_spinner="Computing parameter importance…", max_entries=16)
def _importances(key: str, finished: str) -> dict[str, float] | str:
    """Importances of stored result ``key`` (``finished`` tells a result rewritten under one key apart)."""
    return param_importances(state.settings(), load_result(state.settings(), key).result)


def importance(stored: StoredTune) -> None:
    result = stored.result
    importances = _importances(stored.job, stored.finished)
    if isinstance(importances, str):
        st.info(md_inert(importances))
        return
    st.plotly_chart(charts.importance_figure(importances), key="tune_importance")
    for rank, path in enumerate(list(importances)[:SLICES]):
        figure = charts.slice_figure(result, path)
        if figure is not None:
            st.plotly_chart(figure, key=f"tune_slice_{rank}")


def counts(stored: StoredTune) -> None:
    left, right = st.columns(2)
    left.dataframe(charts.counts_frame(stored.result), hide_index=True, width="stretch")
    times = charts.seconds_frame(stored.result)
    if times.empty:
        right.caption("No complete trial to time.")
    else:
        right.dataframe(times, hide_index=True, width="stretch")


def use_configuration(stored: StoredTune) -> None:
    """Save the configuration put forward by name, make it active and start its re-index (Chunk Explorer's path)."""
    result = stored.result
    st.subheader("Use this configuration")
    if not result.significant:
        st.caption(f"The validation says **{KEEP}**; you can still use the configuration put forward.")
    name = st.text_input("Save it as", key=SAVE_NAME_KEY, placeholder="e.g. tuned-docs",
                         help="A new saved configuration (a snapshot); it also becomes the active one.")
    if not st.button("Use this configuration", key="tune_use", type="primary"):
        _applied_notice()
        return
    name = name.strip()
    if not name:
        st.error("Give the configuration a name to save it under.")
        return
    if state.guarded(lambda: state.config_store().exists(name), "Saved configurations"):
        st.error(md_inert(f"A configuration named '{name}' is already saved: choose another name."))
        return
    try:
        config = RAGConfig.model_validate({**result.best, "name": name})
    except ValidationError as e:
        st.error("The tuned configuration: " + md_inert(field_problems(e, unnamed=None)))
        return
    if state.guarded(lambda: state.config_store().save(config), "Saving the configuration") is None:
        return
    with st.spinner("Making it the active configuration and queuing the re-index of every document…"):
        job = state.guarded(lambda: reindex_view.start(config), "Starting the re-index")
    if job is reindex_view.WAITING:  # a long re-index: its estimate and the choice first
        st.session_state[APPLIED_KEY] = (name, reindex_view.WAITING)
        st.rerun()
    st.session_state[APPLIED_KEY] = (name, job.id if job is not None else None)
    _applied_notice()


def _applied_notice() -> None:
    applied = st.session_state.get(APPLIED_KEY)
    if not applied:
        return
    name, job_id = applied
    if job_id == reindex_view.WAITING:
        if reindex_view.LONG_REINDEX_KEY in st.session_state:
            st.info(md_inert(f"Saved as '{name}'. It becomes active with its re-index, which waits for your "
                             "choice:"))
            reindex_view.confirm_long()
            return
        st.session_state.pop(APPLIED_KEY, None)  # chosen: the re-index (sidebar) or nothing changed
        reindex_view.status()
        return
    if job_id is None:
        st.success(md_inert(f"Saved as '{name}' and made active; the index searches use is already built with "
                            "its chunking and embedder."))
        return
    st.success(md_inert(f"Saved as '{name}' and made active; the re-index runs in the background (also in the "
                        "sidebar). Searches use the complete old index until the new one is done."))
    jobs.job_details(job_id, "tune")


def show(stored: StoredTune) -> None:
    headline(stored)
    result = stored.result
    st.plotly_chart(charts.validation_figure(result), key="tune_validation")
    st.dataframe(charts.validation_frame(result), hide_index=True, width="stretch")
    history, front, knobs, trials = st.tabs(["Optimisation history", "Pareto front", "Knobs", "Trials"])
    with history:
        if charts.history_frame(result).empty:
            st.info("No trial completed.")
        else:
            st.plotly_chart(charts.history_figure(result), key="tune_history")
    with front:
        pareto(stored)
    with knobs:
        importance(stored)
    with trials:
        counts(stored)
    use_configuration(stored)
