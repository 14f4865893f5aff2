"""Home: what the studio shows, and a four-step guided demo that opens each page pre-filled."""

from __future__ import annotations

import streamlit as st

from rag_core.config import RAGConfig
from rag_core.evaluation.showcase import last_showcase
from ui import jobs, runs, state
from ui.router import through_app
from ui.safe_text import md_inert

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
    """Step 3's question: ("ready", Showcase or None), ("indexing", the job writing the index), ("choosing", the job
    choosing it), ("stopped", the job that was cancelled or failed), ("unprepared", None) when none was chosen for
    these documents (indexed by the command line, or before the demo was prepared after indexing), or ("empty",
    None) while the active index holds no document the golden questions ask about. Opening Home starts nothing:
    an ingest job's end prepares the demo (``prepare_after_ingest``), or a click here."""
    from rag_core.evaluation.questions import load_golden
    from rag_core.evaluation.showcase import asks_about, load_showcase, prepare_showcase, showcase_key

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
    busy = next((job for job in active if job.collection == index.name), None)
    if busy is not None:
        return "indexing", busy  # the demo is prepared once they are in
    if st.session_state.pop(CHOOSE_AGAIN_KEY, False):
        state.guarded(lambda: prepare_showcase(jobs.runner(), golden, index, config, state.settings()),
                      "Preparing the demo")
        active = jobs.runner().active()
    choosing = next((job for job in active if job.kind == "demo" and job.settings.get("key") == key), None)
    if choosing is not None:
        return "choosing", choosing
    last = next((job for job in jobs.runner().jobs() if job.kind == "demo" and job.settings.get("key") == key), None)
    if last is not None and last.state in ("cancelled", "failed", "interrupted"):
        return "stopped", last  # not started again behind the back of whoever stopped it
    return "unprepared", None


def demo_step(text: str, disabled: bool = False, again: str = "", **prefill) -> None:
    """Step 3: **Ask both** opens the Agent Playground side by side (on the demo question once chosen); ``again``
    labels a second button that starts choosing the question."""
    with st.container(border=True):
        left, right = st.columns([4, 1], vertical_alignment="center")
        left.markdown(f"**3. One-shot RAG versus the agent**  \n{text}")
        if right.button("Ask both", key="demo_agent", disabled=disabled, width="stretch"):
            state.goto("agent", compare=True, **prefill)
        if again:
            right.button(again, key="demo_choose", width="stretch",
                         on_click=lambda: st.session_state.update({CHOOSE_AGAIN_KEY: True}))


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
phase, chosen = showcase(state.active_config()) if docs else ("empty", None)
OWN_QUESTION = "Meanwhile **Ask both** opens the side-by-side view for a question of your own."
last = last_showcase(state.settings().data_dir) if phase in ("indexing", "stopped") else None
LAST_WORDS = ("**Ask both** asks the last prepared demo question on the serving index (the last "
              "complete index): *“{q}”* — {why}.")
if phase == "indexing" and last is not None:  # the serving index still answers: the last example stays usable
    demo_step(f"Preparing the demo again once the documents being indexed are in ({jobs.progress_text(chosen)}). "
              + "Until then " + LAST_WORDS.format(q=md_inert(last.question), why=md_inert(last.why)),
              question=last.question)
elif phase == "indexing":
    demo_step(f"Preparing the demo once the documents being indexed are in ({jobs.progress_text(chosen)}): the "
              f"golden question where the agent's extra steps matter most is then chosen. {OWN_QUESTION}")
elif phase == "stopped" and last is not None:  # a cancelled choice keeps the last one; no re-prepare needed
    demo_step(f"Choosing the question again stopped ({jobs.summary(chosen)}); **Choose the question** starts it "
              "again. " + LAST_WORDS.format(q=md_inert(last.question), why=md_inert(last.why)),
              again="Choose the question", question=last.question)
elif phase == "choosing":
    demo_step("**Preparing the demo…** one-shot search and the agent answer each golden question, and the one where "
              f"the agent's extra steps matter most is kept. {OWN_QUESTION}")
    jobs.job_details(chosen.id, "home")
elif phase == "stopped":
    demo_step(f"Choosing the question stopped ({jobs.summary(chosen)}). Press **Choose the question** to ask "
              f"one-shot search and the agent each golden question again. {OWN_QUESTION.replace('Meanwhile ', '')}",
              again="Choose the question")
elif phase == "unprepared":
    demo_step("The demo question is not chosen for these documents yet (it is chosen after documents are indexed "
              "on the Documents page). **Prepare the demo** asks one-shot search and the agent each golden question "
              f"in the background. {OWN_QUESTION}", again="Prepare the demo")
elif chosen is None:
    why_not = ("Load the sample documents first (step 1), and let them be indexed" if phase == "empty" else
               "On the documents loaded, no golden question shows the agent finding more than one-shot search")
    demo_step(f"{why_not}: this step picks, from the golden questions, one where the agent's extra steps find what "
              "one-shot search misses.", disabled=phase == "empty")
else:
    demo_step(f":material/check_circle: **Demo ready:** *“{md_inert(chosen.question)}”* — chosen among "
              f"{chosen.questions_compared} golden questions by asking both: {md_inert(chosen.why)}. Side by side, "
              "each step of the agent is shown in words.", question=chosen.question)
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
