"""Home: what the studio shows, and a four-step guided demo that opens each page pre-filled."""

from __future__ import annotations

import streamlit as st

from ui import runs, state
from ui.home import demo_view
from ui.safe_text import md_inert

DEMO_DOC = "configuration.md"


@st.cache_resource(show_spinner=False)
def _sample_doc_id(name: str) -> str | None:
    """The id the sample document gets once loaded (ids are derived from name and content)."""
    from rag_core.loaders import load_path, samples_dir

    path = samples_dir() / name
    return load_path(path).id if path.is_file() else None


def _latest_run():
    for row in runs.list_runs():
        if {"agent", "hybrid"} <= set(row["strategies"]) and row["status"] == "complete":
            return state.guarded(lambda r=row: runs.load_run(r["id"]), "Stored evaluation")
    return None


def step(number: int, title: str, text: str, button: str, key: str, page: str, disabled: bool = False,
         **prefill) -> None:
    with st.container(border=True):
        left, right = st.columns([4, 1], vertical_alignment="center")
        left.markdown(f"**{number}. {title}**  \n{text}")
        if right.button(button, key=key, disabled=disabled, width="stretch"):
            state.goto(page, **prefill)


st.title(":material/explore: Agentic RAG Studio")
st.markdown(
    "See **why** a retrieval-augmented answer is good or bad. The studio splits documents along their structure "
    "(headings, code, tables, lists) instead of fixed windows, indexes them at several granularities, retrieves "
    "with vector, keyword or hybrid search chosen per question, and lets an **agent** decide what to fetch, when "
    "to zoom in or out and when to stop — with every step on screen. The **Evaluate** page measures whether a "
    "change helped, keeps the settings that won, and warns when a change made things worse."
)

docs = state.guarded(lambda: state.document_store().list(), "Document store") or []
run = _latest_run()
doc_id = next((d.id for d in docs if d.name == DEMO_DOC), None) or _sample_doc_id(DEMO_DOC)
c1, c2, c3 = st.columns(3)
c1.metric("Documents loaded", len(docs))
c2.metric("Saved configurations", len(state.guarded(state.config_store().list, "Configurations") or []))
c3.metric("Evaluation runs", len(runs.list_runs()))

st.subheader("Guided demo")
st.caption("Four steps for a stakeholder walk-through; each opens its page with the right inputs filled in.")
step(1, "Load the sample documents",
     "A fictional product's documentation: Markdown with code in several languages, tables, "
     "numbered procedures and FAQs, plus CSV data and Python sources.",
     "Load samples", "demo_docs", "documents", load_samples=True)
demo_view.samples_control(docs, state.active_config())  # a team's own documents beside them: keep them apart
if docs and not any(d.name == DEMO_DOC for d in docs):  # deleted: never open another document under its name
    step(2, "Naive versus structure-aware split",
         f":material/info: The sample `{DEMO_DOC}` this step splits is no longer loaded (it was deleted). "
         "**Restore the samples** loads the sample documents again; your own documents stay as they are.",
         "Restore the samples", "demo_split_restore", "documents", load_samples=True)
else:
    step(2, "Naive versus structure-aware split",
         f"`{DEMO_DOC}` split both ways side by side: fixed 512-token windows cut code fences, tables and lists; "
         "the structure-aware chunker keeps each heading with its content and every table row with its header.",
         "Compare splits", "demo_split", "explorer", disabled=doc_id is None, doc_id=doc_id, strategy_b="fixed")
phase, chosen = demo_view.showcase(state.active_config()) if docs else ("empty", None)
demo_view.render_step_three(phase, chosen)
step(4, "The evaluation leaderboard",
     "Every strategy on the built-in golden question set: hit@k, recall, MRR, nDCG@10, context tokens, steps "
     "and latency, per intent, with a regression banner against the saved baseline. Opens on the latest "
     "leaderboard (or runs one first when there is none).",
     "Open leaderboard", "demo_eval", "evaluate", question_set="golden", leaderboard=True)

if run is not None:
    st.subheader("Latest leaderboard")
    st.caption(md_inert(f"Run {run.id} on '{run.question_set['name']}' ({run.created})."))
    # Alike-named settings told apart; an agent-only metric is a dash for the other strategies.
    st.dataframe(runs.chart("leaderboard", run), hide_index=True, width="stretch", placeholder="–")
elif not docs:
    st.info("Start with step 1: nothing is loaded yet.")
