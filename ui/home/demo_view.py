"""Home's guided demo, step 3 (one-shot RAG versus the agent): which question it offers and the words around it."""

from __future__ import annotations

import streamlit as st

from rag_core.config import RAGConfig
from rag_core.serving.home_demo import Showcase, last_showcase
from ui import jobs, state
from ui.safe_text import md_inert

CHOOSE_AGAIN_KEY = "demo_choose_again"
OWN_QUESTION = "Meanwhile **Ask both** opens the side-by-side view for a question of your own."
LAST_WORDS = ("**Ask both** asks the last prepared demo question on the serving index (the last "
              "complete index): *“{q}”* — {why}.")


def showcase(config: RAGConfig):
    """Step 3's question: ("ready", Showcase or None), ("indexing", the job writing the index), ("choosing", the job
    choosing it), ("stopped", the job that was cancelled or failed), ("unprepared", None) when none was chosen for
    these documents (indexed by the command line, an indexing job cancelled, or before the demo was prepared after
    indexing), or ("empty", None) while the active index holds no document the golden questions ask about. Opening
    Home starts nothing: an ingest job's end prepares the demo (``prepare_after_ingest``), or a click here."""
    from rag_core.evaluation.questions import load_golden
    from rag_core.serving.home_demo import asks_about, load_showcase, prepare_showcase, showcase_key

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


def ready_words(chosen: Showcase) -> str:
    """A chosen question in words: a win of the agent's answer, or, honestly, the best tie when there is none."""
    question, why = md_inert(chosen.question), md_inert(chosen.why)
    if chosen.agent_wins:
        return (f":material/check_circle: **Demo ready:** *“{question}”* — chosen among {chosen.questions_compared} "
                f"golden questions by what the two answers quote: {why}. Side by side, each step of the agent is "
                "shown in words.")
    return (f":material/info: **No clear win on these documents:** on none of the {chosen.questions_compared} "
            "golden questions does the agent's answer quote more of the answer than one search's answer. "
            f"**Ask both** shows the closest, *“{question}”*: {why}.")


def render_step_three(phase: str, chosen) -> None:
    """Step 3 for ``showcase``'s (phase, value); the last prepared question stays usable whenever none is chosen
    for the documents indexed now (indexing, a stopped choice, a cancelled indexing job)."""
    last = last_showcase(state.settings().data_dir) if phase in ("indexing", "stopped", "unprepared") else None
    last_words = LAST_WORDS.format(q=md_inert(last.question), why=md_inert(last.why)) if last else ""
    if phase == "indexing" and last is not None:  # the serving index still answers: the last example stays usable
        demo_step(f"Preparing the demo again once the documents being indexed are in ({jobs.progress_text(chosen)})."
                  " Until then " + last_words, question=last.question)
    elif phase == "indexing":
        demo_step(f"Preparing the demo once the documents being indexed are in ({jobs.progress_text(chosen)}): "
                  f"the golden question where the agent's answer quotes most is then chosen. {OWN_QUESTION}")
    elif phase == "stopped" and last is not None:  # a cancelled choice keeps the last one; no re-prepare needed
        demo_step(f"Choosing the question again stopped ({jobs.summary(chosen)}); **Choose the question** starts "
                  "it again. " + last_words, again="Choose the question", question=last.question)
    elif phase == "unprepared" and last is not None:  # e.g. after a cancelled indexing job: the last one stays
        demo_step("The documents changed since the demo question was chosen (an indexing job stopped, or documents "
                  "were indexed from the command line); **Prepare the demo** chooses again for them. "
                  + last_words, again="Prepare the demo", question=last.question)
    elif phase == "choosing":
        demo_step("**Preparing the demo…** one-shot search and the agent answer each golden question, and the one "
                  f"where the agent's answer quotes most is kept. {OWN_QUESTION}")
        jobs.job_details(chosen.id, "home")
    elif phase == "stopped":
        demo_step(f"Choosing the question stopped ({jobs.summary(chosen)}). Press **Choose the question** to ask "
                  "one-shot search and the agent each golden question again. "
                  f"{OWN_QUESTION.replace('Meanwhile ', '')}", again="Choose the question")
    elif phase == "unprepared":
        demo_step("The demo question is not chosen for these documents yet (it is chosen after documents are "
                  "indexed on the Documents page). **Prepare the demo** asks one-shot search and the agent each "
                  f"golden question in the background. {OWN_QUESTION}", again="Prepare the demo")
    elif chosen is None:
        why_not = ("Load the sample documents first (step 1), and let them be indexed" if phase == "empty" else
                   "On the documents loaded, neither answer quotes the answer to any golden question")
        demo_step(f"{why_not}: this step picks, from the golden questions, one where the agent's answer quotes "
                  "what one search's answer misses.", disabled=phase == "empty")
    else:
        demo_step(ready_words(chosen), question=chosen.question)


SAMPLES_REMOVED_KEY = "demo_samples_removed"  # the outcome of the last removal, shown once after its rerun


@st.cache_resource(show_spinner=False)
def _sample_ids() -> dict[str, str]:
    from rag_core.loaders import sample_ids

    return sample_ids()


def _remove_samples(config: RAGConfig) -> None:
    from rag_core.loaders import remove_samples

    index = state.guarded(lambda: state.index_for(config), "Opening the index")
    removed = state.guarded(lambda: remove_samples(state.document_store(), index), "Removing the samples")
    if removed is not None:
        st.session_state[SAMPLES_REMOVED_KEY] = len(removed)


def samples_control(docs, config: RAGConfig) -> None:
    """"Remove the sample documents from my index": once a team's own documents sit beside the samples, one click
    takes the shipped samples (and only those, matched by content) out of the store and the active index, so the
    team's searches and answers never quote them; step 1 loads them again for a demo."""
    removed = st.session_state.pop(SAMPLES_REMOVED_KEY, None)
    if removed is not None:
        st.success(f"Removed {removed} sample document(s) from the store and the active index; your own documents "
                   "stay as they are. **Load samples** (step 1) brings them back for a demo.")
    samples = _sample_ids()
    held = [d for d in docs if d.id in samples]
    own = len(docs) - len(held)
    if not held or not own:
        return
    writing = state.guarded(lambda: state.index_for(config).name, "Opening the index")
    busy = any(job.collection == writing for job in jobs.runner().active())
    st.caption(f":material/info: Your index holds {own} document(s) of your own and {len(held)} of the shipped "
               "samples, and the samples can turn up in your searches and answers.")
    st.button("Remove the sample documents from my index", key="demo_remove_samples", disabled=busy,
              on_click=_remove_samples, args=(config,),
              help="Waits until the indexing job under way ends." if busy else
              "Deletes only the shipped sample files (matched by content) from the document store and the active "
              "index; a file of your own with a sample's name stays.")
