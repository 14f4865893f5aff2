"""Evaluate: question sets × saved configurations × strategies; leaderboard, charts, regressions, sweep, bundles."""

from __future__ import annotations

import streamlit as st

from ui import state
from ui.evaluate import draft_view, eval_jobs, evaluate_view, tune_view
from ui.evaluate.eval_panels import bundle_panel, config_panel
from ui.evaluate.evaluate_view import LEADERBOARD_KEY, RESULTS_TAB, RUN_KEY, SOURCE_KEY, SOURCES, SWEEP_KEY
from ui.safe_text import md_escape

st.title(":material/leaderboard: Evaluate")
st.caption("Score configurations × strategies on a question set; keep baselines; sweep parameters; share a bundle.")
prefill = state.take_prefill("evaluate")
if prefill.get("question_set"):
    st.session_state[SOURCE_KEY] = SOURCES[{"upload": 1, "beir": 2}.get(prefill["question_set"], 0)]
following = evaluate_view.form_from_running_job()
if following is not None:
    st.info(f"An evaluation is running ({md_escape(following.title)}): the form below shows its question set and "
            "settings. Its progress is on the Run tab and in the sidebar.")
question_set = evaluate_view.pick_question_set()
if question_set:
    types = question_set.types()
    type_counts = md_escape(", ".join(f"{name} {count}" for name, count in types.items()))
    unanswerable = " (null: not answered by the documents)" if "null" in types else ""
    st.caption(f"**{md_escape(question_set.name)}**: {len(question_set.questions)} questions · intents: "
               f"{md_escape(', '.join(question_set.intents())) or '—'}"
               + (f" · types: {type_counts}{unanswerable}" if types else ""))
# The guided demo's step 4 opens on the leaderboard: the newest run, or one started for it right away.
leaderboard_now = bool(prefill.get("leaderboard"))
if leaderboard_now:
    st.session_state[LEADERBOARD_KEY] = True
for kind, key in (("evaluation", RUN_KEY), ("sweep", SWEEP_KEY)):  # a job that ended opens its run once
    ended = eval_jobs.finished_run(kind)
    if ended:
        st.session_state[key] = ended
run_tab, results_tab, sweep_tab, config_tab, bundle_tab, draft_tab, tune_tab = st.tabs(
    [":material/play_arrow: Run", RESULTS_TAB, ":material/grid_on: Sweep", ":material/settings: Configurations",
     ":material/inventory_2: Demo bundle", ":material/edit_note: Draft questions", ":material/tune: Tune"],
    default=RESULTS_TAB if st.session_state.get(LEADERBOARD_KEY) else None)

with run_tab:
    evaluate_view.run_tab(question_set)

with results_tab:
    evaluate_view.results_tab(question_set, leaderboard_now)
    draft_view.results_note(st.session_state.get(RUN_KEY))

with sweep_tab:
    evaluate_view.sweep_tab(question_set)

with config_tab:
    config_panel()

with bundle_tab:
    bundle_panel(state.results_store())

with draft_tab:
    draft_view.draft_tab()

with tune_tab:
    tune_view.tune_tab(question_set)
