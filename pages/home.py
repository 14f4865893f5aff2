"""Home: what the studio shows, and a four-step guided demo that opens each page pre-filled."""

from __future__ import annotations

import streamlit as st

from rag_core.config import RAGConfig
from ui import jobs, runs, state
from ui.router import through_app
from ui.text import md_inert

through_app()

DEMO_DOC = "configuration.md"
CHOOSE_AGAIN_KEY = "demo_choose_again"


@st.cache_resource(show_spinner=False)
def _sample_doc_id(name: str) -> str | None:
    """The id the sample document gets once loaded (ids are derived from name and content)."""
    from rag_core.loaders import load_path, samples_dir

    path = samples_dir() / name
    return load_path(path).id if path.is_file() else None


def showcase(config: RAGConfig):
    """Step 3's question: ("ready", Showcase or None), ("choosing", the job choosing it), ("stopped", the job that
    was cancelled or failed), or ("empty", None) while the active index holds no document or is being filled (the
    choice depends on what it holds)."""
    from rag_core.evaluation.questions import load_golden
    from rag_core.evaluation.showcase import asks_about, load_showcase, showcase_key, submit_showcase

    index = state.guarded(lambda: state.index_for(config), "Opening the index")
    contents = state.guarded(index.documents, "Reading the index") if index is not None else None
    golden = load_golden()
    if not contents or not asks_about(golden, contents):  # the golden questions ask about the sample documents
        return "empty", None
    key = showcase_key(golden, contents, config)
    chosen, found = load_showcase(state.settings().data_dir, key)
    if chosen:
        return "ready", found
    active = jobs.runner().active()
    busy = [job for job in active if job.collection == config.collection_name()]  # jobs writing this index
    choosing = next((job for job in active if job.kind == "demo" and job.settings.get("key") == key), None)
    if choosing is None and busy:
        return "empty", None  # documents are being indexed: choose once they are in
    last = next((job for job in jobs.runner().jobs() if job.kind == "demo" and job.settings.get("key") == key), None)
    if choosing is None and last is not None and last.state in ("cancelled", "failed", "interrupted") \
            and not st.session_state.pop(CHOOSE_AGAIN_KEY, False):
        return "stopped", last  # not started again behind the back of whoever stopped it
    if choosing is None:
        choosing = state.guarded(lambda: submit_showcase(jobs.runner(), golden, index, config, state.settings(),
                                                         key), "Choosing the demo question")
    return ("choosing", choosing) if choosing is not None else ("empty", None)


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


st.title("🧭 Agentic RAG Studio")
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
step(2, "Naive versus structure-aware split",
     f"`{DEMO_DOC}` split both ways side by side: fixed 512-token windows cut code fences, tables and lists; the "
     "structure-aware chunker keeps each heading with its content and every table row with its header.",
     "Compare splits", "demo_split", "explorer", disabled=doc_id is None, doc_id=doc_id, strategy_b="fixed")
phase, chosen = showcase(state.active_config()) if docs else ("empty", None)
if phase == "choosing":
    step(3, "One-shot RAG versus the agent",
         "Choosing the question in the background: one-shot search and the agent answer each golden question, and "
         "the one where the agent's extra steps matter most is kept (the sidebar shows the progress).",
         "Ask both", "demo_agent", "agent", disabled=True)
    jobs.job_details(chosen.id, "home")
elif phase == "stopped":
    with st.container(border=True):
        left, right = st.columns([4, 1], vertical_alignment="center")
        left.markdown(f"**3. One-shot RAG versus the agent**  \nChoosing the question stopped "
                      f"({jobs.summary(chosen)}). Press **Choose the question** to ask one-shot search and the agent "
                      "each golden question again.")
        right.button("Choose the question", key="demo_choose", width="stretch",
                     on_click=lambda: st.session_state.update({CHOOSE_AGAIN_KEY: True}))
elif chosen is None:
    why_not = ("Load the sample documents first (step 1), and let them be indexed" if phase == "empty" else
               "On the documents loaded, no golden question shows the agent finding more than one-shot search")
    step(3, "One-shot RAG versus the agent",
         f"{why_not}: this step picks, from the golden questions, one where the agent's extra steps find what "
         "one-shot search misses.", "Ask both", "demo_agent", "agent", disabled=True)
else:
    step(3, "One-shot RAG versus the agent",
         f"*“{md_inert(chosen.question)}”* — chosen among {chosen.questions_compared} golden questions by asking "
         f"both: {md_inert(chosen.why)}. Side by side, each step of the agent is shown in words.",
         "Ask both", "demo_agent", "agent", question=chosen.question, compare=True)
step(4, "The evaluation leaderboard",
     "Every strategy on the built-in golden question set: hit@k, recall, MRR, nDCG@10, context tokens, steps "
     "and latency, per intent, with a regression banner against the saved baseline. Opens on the latest "
     "leaderboard (or runs one first when there is none).",
     "Open leaderboard", "demo_eval", "evaluate", question_set="golden", leaderboard=True)

if run is not None:
    from ui.charts import leaderboard

    st.subheader("Latest leaderboard")
    st.caption(md_inert(f"Run {run.id} on '{run.question_set['name']}' ({run.created})."))
    st.dataframe(leaderboard(run), hide_index=True, width="stretch")
elif not docs:
    st.info("Start with step 1: nothing is loaded yet.")
