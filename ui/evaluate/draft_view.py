"""Evaluate's "Draft questions" tab: draft a question set from the loaded documents as a background job, review it
in an editable table (keep / edit / drop, the evidence in the Chunk Explorer), save it as a named set, export it
as JSONL or discard it (a finished draft neither saved nor discarded is offered again after a reload); the saved
sets as a question-set source; the bench's agreement figure beside a drafted set's results."""

from __future__ import annotations

import re

import pandas as pd
import streamlit as st

from rag_core.evaluation.agreement import load_agreement
from rag_core.evaluation.draft import KINDS, to_jsonl
from rag_core.evaluation.draft_text import normalize_ws
from rag_core.evaluation.question_sets import DRAFT_KIND, QuestionSetStore, submit_draft
from rag_core.evaluation.questions import INTENTS, Question
from rag_core.types import Chunk
from ui import explorer_link, jobs, state
from ui.safe_text import md_escape, md_inert
from ui.state import KEEP

# The draft job this session started (its draft is opened when it ends); the draft under review. Both live in the
# session only: a reload finds the drafts again in the store (``QuestionSetStore.drafts``), offered to resume.
JOB_KEY, DRAFT_KEY = "draft_job_id", "draft_key"
RESUME_KEY = "draft_resume"
# The review so far ({"key": draft key, "rows": {id: {keep, question, intent}}}). A data editor's edits are widget
# state, which Streamlit drops when a page without the editor runs (the Chunk Explorer link below): without this
# copy, looking at a question's evidence undid every keep, edit and drop made before.
REVIEW_KEY = "draft_review"
REVIEWED = ("keep", "question", "intent")
SAVED_KEY = "eval_saved_set"
EDITOR_COLUMNS = ("keep", "id", "type", "intent", "question", "evidence", "answer")


def store() -> QuestionSetStore:
    return QuestionSetStore(state.settings().data_dir)


def agreement_note(where=st) -> None:
    """How far a drafted set can be trusted, in plain words: how closely its ranking of configurations agreed
    with human-written questions where the bench measured it (no file paths, no statistics jargon)."""
    figure = load_agreement()
    if figure is None:
        where.caption("How far a drafted set ranks configurations like a human-written one has not been measured "
                      "here yet (`python -m bench drafted`).")
        return
    by_seed = figure.get("tau_by_seed") if isinstance(figure.get("tau_by_seed"), dict) else {}
    spread = f", averaged over {len(by_seed)} drafted sets" if len(by_seed) > 1 else ""
    where.info(md_inert(
        f"How far to trust a drafted set: on the {_without_paths(str(figure['corpus']))}, drafted sets of "
        f"{figure.get('drafted', '?')} questions put {len(figure.get('configs', []))} configurations (chunk size × "
        f"strategy × one-shot/agent) in much the same order as human-written questions did. Agreement "
        f"{figure['tau']:.2f}{spread}, on a scale where 1 is the same order and 0 no relation (measured "
        f"{figure.get('measured', '')}).{_by_size(figure)} On your documents it may differ."))


def _without_paths(text: str) -> str:
    """``text`` without file paths (``, ../shared/corpora/x``): a reader of the note has no use for them."""
    return re.sub(r",?\s*\.{0,2}/[^\s,)]*", "", text).replace("()", "").strip()


def _by_size(figure: dict) -> str:
    """`` Agreement by set size: …`` when the bench measured several sizes (a small set ranks noisily)."""
    sizes = [s for s in figure.get("by_size") or [] if isinstance(s, dict) and "drafted" in s and "tau" in s]
    if len(sizes) < 2:
        return ""
    listed = ", ".join(f"{s['drafted']} questions {float(s['tau']):.2f}" for s in sizes)
    return (f" Agreement by set size: {listed}; a smaller drafted set ranks less reliably, so draft about "
            f"{sizes[-1]['drafted']} questions where your documents allow.")


def pick_saved_set():
    """The question-set source "Saved question sets": one of the sets saved from a reviewed draft."""
    names = state.guarded(lambda: store().list(), "Saved question sets") or []
    if not names:
        st.info("No saved question set yet: draft one on the **Draft questions** tab and save it.")
        return None
    name = st.selectbox("Saved question set", names, key=SAVED_KEY, persist_state=KEEP)
    question_set = state.guarded(lambda: store().load(name), f"Question set '{name}'")
    if question_set is not None:
        st.caption(md_inert(f"How it was made: {question_set.source}"))
    return question_set


def _current_job():
    job_id = st.session_state.get(JOB_KEY)
    job = jobs.runner().get(job_id) if job_id else None
    return job if job is not None else jobs.latest((DRAFT_KIND,), active_only=True)


def _start(n: int, seed: int, budget: float, kinds: list[str], use_llm: bool) -> None:
    docs = state.guarded(lambda: state.document_store().list(), "Listing documents")
    if docs is not None and not docs:
        st.warning("No documents are loaded yet: add some on the Documents page first.")
        return
    if docs is None:
        return
    llm = state.llm() if use_llm else None
    job = state.guarded(lambda: submit_draft(jobs.runner(), docs, data_dir=state.settings().data_dir, n=n, seed=seed,
                                             time_budget_s=budget, kinds=kinds, llm=llm), "Drafting questions")
    if job is not None:
        st.session_state[JOB_KEY] = job.id
        st.session_state.pop(DRAFT_KEY, None)


def _evidence(question: Question) -> str:
    if not question.evidence:
        return "(not in the documents)"
    return " ‖ ".join(f"{p['file']} › {' › '.join(p['heading_path'])}: {p['spans'][0]}" for p in question.evidence)


def editor_frame(questions: list[Question], reviewed: dict[str, dict] | None = None) -> pd.DataFrame:
    """The review table; ``reviewed`` (question id -> keep, question, intent) puts back a review made earlier."""
    reviewed = reviewed or {}
    return pd.DataFrame([{"keep": True, "id": q.id, "type": q.type or "single", "intent": q.intent or "",
                          "question": q.question, "evidence": _evidence(q), "answer": q.reference_answer,
                          **reviewed.get(q.id, {})}
                         for q in questions], columns=list(EDITOR_COLUMNS))


def kept_questions(questions: list[Question], edited: pd.DataFrame) -> list[Question]:
    """The questions whose row is kept, with the edited question text and intent (evidence is never edited: it must
    stay verbatim)."""
    by_id = {q.id: q for q in questions}
    kept = []
    for row in edited.to_dict("records"):
        original = by_id.get(row.get("id"))
        text = " ".join(str(row.get("question") or "").split())
        if original is None or not row.get("keep") or not text:
            continue
        intent = str(row.get("intent") or "") or None
        kept.append(Question(id=original.id, question=text, intent=intent if intent in INTENTS else None,
                             evidence=original.evidence, reference_answer=original.reference_answer,
                             type=original.type))
    return kept


def _review(key: str, draft: dict) -> None:
    summary = draft["summary"]
    questions: list[Question] = draft["questions"]
    counts = ", ".join(f"{k} {v}" for k, v in summary["kinds"].items()) or "none"
    st.markdown(f"**Drafted {len(questions)} questions** ({md_escape(counts)}) from {summary['documents']} documents "
                f"in {summary['elapsed_s']:.1f} s" + (f" · stopped: {md_escape(summary['stopped'])}"
                                                       if summary["stopped"] else ""))
    st.caption(md_inert(summary["label"]))
    for note in summary.get("notes", []):
        st.warning(md_inert(note))
    with st.expander(f"Checks applied · {summary['rejected']} candidates rejected"):
        st.markdown("\n".join(f"- {md_inert(check)}" for check in summary["checks"]))
        if draft.get("rejected"):
            st.dataframe(pd.DataFrame(draft["rejected"]), hide_index=True, width="stretch")
        if draft.get("prompt"):
            st.caption("The prompt the model was given (the section followed it, fenced as data):")
            st.text(draft["prompt"])
    if not questions:
        st.info("Nothing was drafted: the documents may be too short, or the time budget too small.")
        _discard_button(key)
        return
    st.caption("Untick **keep** to drop a question; edit a question's wording or intent in place. The evidence is "
               "not editable: it is the documents' own text, checked verbatim.")
    review = st.session_state.get(REVIEW_KEY) or {}
    # Keyed with a fixed row count, the editor keeps its identity (and its edits) when only values change.
    edited = st.data_editor(
        editor_frame(questions, review.get("rows") if review.get("key") == key else None),
        key=f"draft_editor_{key}", hide_index=True, width="stretch", disabled=(
            "id", "type", "evidence", "answer"),
        column_config={"keep": st.column_config.CheckboxColumn("keep", width="small"),
                       "intent": st.column_config.SelectboxColumn("intent", options=["", *INTENTS]),
                       "question": st.column_config.TextColumn("question", width="large"),
                       "evidence": st.column_config.TextColumn("evidence (file › headings: span)", width="large")})
    st.session_state[REVIEW_KEY] = {"key": key, "rows": {
        row["id"]: {column: row[column] for column in REVIEWED} for row in edited.to_dict("records")}}
    kept = kept_questions(questions, edited)
    _explorer_link(kept)
    left, right = st.columns([3, 1])
    name = left.text_input("Question set name", value=f"drafted-{key[1:15]}", key=f"draft_name_{key}",
                           persist_state=KEEP)
    right.download_button("Export JSONL", data=to_jsonl(kept), file_name=f"{name.strip() or 'drafted'}.jsonl",
                          mime="application/jsonl", disabled=not kept)
    save, discard = st.columns([3, 1])
    saved = None
    if save.button(f"Save {len(kept)} questions as a question set", type="primary", disabled=not kept):
        saved = state.guarded(lambda: _save(key, name, kept, summary), "Saving the question set")
        if saved is not None:
            st.success(md_inert(f"Saved '{saved.name}' ({len(saved.questions)} questions): choose **Saved question "
                                "sets** as the question set at the top of the page to run it."))
    _discard_button(key, discard)
    if draft.get("saved_as") and saved is None:  # read before this run's save
        st.caption(md_inert(f"This draft was saved as the question set '{draft['saved_as']}': it is no longer "
                            "offered among the unsaved drafts."))


def _save(key: str, name: str, kept: list[Question], summary: dict):
    saved = store().save(name, kept, label=summary["label"], method=summary["method"])
    store().mark_draft_saved(key, saved.name)
    return saved


def _discard(key: str) -> None:
    def discard() -> bool:
        store().discard_draft(key)
        return True

    if state.guarded(discard, "Discarding the draft"):
        for name in (DRAFT_KEY, JOB_KEY, REVIEW_KEY):
            st.session_state.pop(name, None)


def _discard_button(key: str, where=st) -> None:
    where.button("Discard draft", key=f"draft_discard_{key}", on_click=_discard, args=(key,),
                 help="Delete this draft: it is no longer offered for review (a question set saved from it stays).")


def _open_draft() -> None:
    """Review the draft picked among the unsaved ones (this session's finished job no longer decides which)."""
    st.session_state[DRAFT_KEY] = st.session_state.get(RESUME_KEY)
    st.session_state.pop(JOB_KEY, None)


def _offer(current: str | None) -> None:
    """The finished drafts not saved nor discarded (any session's, the newest first), to resume their review: a
    reload or another session keeps nothing of the review but the stored draft."""
    waiting = [d for d in state.guarded(lambda: store().drafts(), "Unsaved drafts") or [] if d["key"] != current]
    if not waiting:
        return
    labels = {d["key"]: f"{d['created'][:19].replace('T', ' ')} UTC · {d['method']} · {d['questions']} questions · "
                        f"{d['state']}" for d in waiting}
    c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
    c1.selectbox(f"Unsaved drafts ({len(waiting)}): finished, not saved as a set yet", list(labels),
                 format_func=labels.get, key=RESUME_KEY)
    c2.button("Review this draft", on_click=_open_draft)


def _explorer_link(kept: list[Question]) -> None:
    with_evidence = [q for q in kept if q.evidence]
    if not with_evidence:
        return
    docs = state.guarded(lambda: state.document_store().list(), "Listing documents") or []
    ids = {d.name: d.id for d in docs}
    labels = {f"{q.id} · {q.question[:70]}": q for q in with_evidence}
    c1, c2 = st.columns([3, 1])
    picked = c1.selectbox("See a question's evidence in the Chunk Explorer", list(labels), key="draft_explore")
    place = labels[picked].evidence[0] if picked else None
    doc_id = ids.get(place["file"]) if place else None
    if c2.button("Open in Chunk Explorer", disabled=doc_id is None):
        chunks = state.guarded(lambda: state.active_index().chunks(doc_id), "Reading the document's chunks") or []
        chunk = evidence_chunk(chunks, place["spans"][0])
        if chunk is None:  # the document is not in the index (or has changed since): open it at the top
            state.goto("explorer", doc_id=doc_id)
        else:  # on Source, the chunk selected and scrolled to, like a citation
            explorer_link.open_chunk(doc_id, chunk.id)


def evidence_chunk(chunks: list[Chunk], span: str) -> Chunk | None:
    """The smallest of ``chunks`` whose text holds ``span`` (whitespace collapsed), else the smallest holding the
    span's start (a long code span can straddle two chunks)."""
    texts = [(normalize_ws(c.text), c) for c in chunks]
    needle = normalize_ws(span)
    for part in (needle, needle[:60]):
        holding = [c for text, c in texts if part and part in text]
        if holding:
            return min(holding, key=lambda c: len(c.text))
    return None


def draft_tab() -> None:
    """Draft from the loaded documents as a background job, follow it, review the result."""
    st.caption("Draft a question set from **your** documents: questions with verbatim evidence spans, of three "
               "kinds — single-place, multi-part (two places, in different documents where possible) and "
               "unanswerable (a plausible name no document contains). Review it, save it, then run it like any set.")
    agreement_note()
    c1, c2, c3 = st.columns(3)
    # 150 by default: the size whose ranking the bench found to agree with a human-written set (τ ≥ 0.6), where 50
    # questions ranked noisily (bench/results/drafted.md).
    n = c1.number_input("Questions", 1, 500, 150, key="draft_n", persist_state=KEEP)
    seed = c2.number_input("Seed", 0, 10_000, 0, key="draft_seed", persist_state=KEEP,
                           help="The same seed drafts the same set from the same documents.")
    budget = c3.number_input("Time budget (s)", 1, 600, 60, key="draft_budget", persist_state=KEEP)
    kinds = st.multiselect("Kinds", list(KINDS), default=list(KINDS), key="draft_kinds", persist_state=KEEP)
    has_llm = state.llm() is not None
    use_llm = st.checkbox("Let the LLM write the single-place questions", value=False, disabled=not has_llm,
                          key="draft_llm", help="Offline questions are filled into templates from headings and "
                          "identifiers (keyword-leaning). With an LLM (RAG_LLM_*) the model writes them from a sampled "
                          "section; every span it cites is checked verbatim." if has_llm else
                          "No LLM is configured (RAG_LLM_BASE_URL, RAG_LLM_MODEL).")
    if st.button("Draft questions from your documents", disabled=not kinds,
                 help="Runs as a background job with progress and Cancel; what was drafted is kept on Cancel."):
        _start(int(n), int(seed), float(budget), kinds, use_llm and has_llm)
    job = _current_job()
    if job is not None:
        if job.active:
            jobs.job_details(job.id, "draft", shown_running=True)
        else:
            if job.result:  # a cancelled draft keeps what it drafted
                st.session_state[DRAFT_KEY] = job.result
            if job.state != "done":
                st.warning(jobs.summary(job))
    key = st.session_state.get(DRAFT_KEY)
    draft = store().load_draft(key) if key else None
    _offer(key if draft is not None else None)
    if draft is not None:
        _review(key, draft)


def results_note(run_id: str | None) -> None:
    """Beside a drafted set's results: the agreement figure (how far such a set ranks configurations rightly)."""
    if not run_id:
        return
    from ui import runs

    try:
        run = runs.load_run(run_id)
    except Exception:  # noqa: BLE001 - the Results tab itself says why a stored run cannot be read
        return
    if run is not None and run.question_set.get("kind") == "drafted":
        agreement_note()
