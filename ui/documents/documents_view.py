"""Documents page renderers: loading and indexing files, same-name conflicts, the document table and deletion."""

from __future__ import annotations

import streamlit as st

from rag_core.loaders.document_store import add_files, resolve_conflicts
from rag_core.serving.home_demo import prepare_after_ingest
from rag_core.serving.jobs import JobStatus
from rag_core.types import GRANULARITIES
from ui import costly, jobs, state
from ui.safe_text import md_escape
from ui.units import human_size

MESSAGES_KEY = "documents_messages"
SEEN_UPLOADS_KEY = "documents_seen_uploads"
PENDING_DELETE_KEY = "documents_pending_delete"  # ids picked for deletion, waiting for the confirmation
CONFLICTS_KEY = "documents_conflicts"  # same-name uploads waiting for replace / keep both / skip
LONG_INGEST_KEY = "documents_long_ingest"  # an ingest estimated long, waiting for index anyway / don't index
JOB_KEY = "documents_job"  # the last indexing job this session started here
SESSION_JOBS_KEY = "documents_jobs"  # every indexing job this session started here (how each ended stays shown)
CONFLICT_CHOICES = {"replace": "Replace the stored one", "keep_both": "Keep both (rename the new one)",
                    "skip": "Skip the new one"}


@st.cache_data(show_spinner=False, max_entries=5000)
def chunk_counts(doc_id: str, chunking_json: str) -> dict[str, int]:
    """Chunks per granularity of a stored document that the active index does not hold (yet)."""
    from rag_core.chunking import chunk_document
    from rag_core.config import ChunkingConfig

    doc = state.document_store().get(doc_id)
    if doc is None:
        return {}
    counts = dict.fromkeys(GRANULARITIES, 0)
    for chunk in chunk_document(doc, ChunkingConfig.model_validate_json(chunking_json), "all"):
        counts[chunk.granularity] += 1
    return counts


def _held(index) -> tuple[set[str], set[str]]:
    """Ids of the documents ``index`` holds, and of those a job under way is indexing into it."""
    try:
        indexed = {row["doc_id"] for row in index.documents()}
    except Exception:  # noqa: BLE001 - unknown: the job indexes them all (it recognises unchanged documents)
        indexed = set()
    busy = {f.doc_id for job in jobs.runner().active() if job.collection == index.name for f in job.files
            if f.state not in ("failed", "cancelled")}
    return indexed, busy - indexed


def index_documents(index, docs, already: str = "Already indexed", *, confirmed: bool = False) -> JobStatus | None:
    """Index ``docs`` into ``index`` as a background job (followed in the sidebar and below the uploader); the
    documents it holds already (same id: same name and content) or a job is indexing now are left out, and when
    that is all of them no job is queued and ``already`` says so. An ingest estimated long on this machine waits
    for the user's choice (``confirm_long_ingest``) unless ``confirmed``. The job's end prepares the guided demo."""
    messages = st.session_state.setdefault(MESSAGES_KEY, [])
    if not docs:
        return None
    if index is None:
        messages.append(("warning", "The documents are stored but not indexed: the index is unavailable (see above)."))
        return None
    indexed, busy = _held(index)
    fresh = [doc for doc in docs if doc.id not in indexed and doc.id not in busy]
    if not fresh:
        in_index = sum(doc.id in indexed for doc in docs)
        text = f"{already}: {in_index} document(s) with this content are in collection `{index.name}`"
        messages.append(("info", text + (f", {len(docs) - in_index} being indexed by a job under way" if
                                         len(docs) > in_index else "") + "; no job queued."))
        return None
    if not confirmed and _ask_first(index, fresh):
        return None
    runner = jobs.runner()
    job = runner.submit_ingest(index, fresh, title=f"Indexing {len(fresh)} document(s)",
                               finish=prepare_after_ingest(runner, index, state.active_config(), state.settings()))
    st.session_state[JOB_KEY] = job.id
    st.session_state.setdefault(SESSION_JOBS_KEY, []).append(job.id)
    return job


def _ask_first(index, docs) -> bool:
    """Whether indexing ``docs`` is estimated long on this machine; if so it waits for a confirmation."""
    found = costly.long_estimate(index, docs)
    if found is None:
        return False
    st.session_state[LONG_INGEST_KEY] = {"ids": [doc.id for doc in docs], **costly.estimate_fields(found)}
    return True


def confirm_long_ingest(index, store) -> None:
    """A long ingest's estimate and the choice: index it now (later jobs wait behind it) or keep the files stored
    without indexing them; nothing is queued before a click."""
    pending = st.session_state.get(LONG_INGEST_KEY)
    if not pending:
        return
    docs = [doc for doc in (store.get(doc_id) for doc_id in pending["ids"]) if doc is not None]
    if not docs:  # deleted meanwhile: nothing left to ask about
        del st.session_state[LONG_INGEST_KEY]
        return
    names = costly.names_of(docs)
    picked = costly.choice(f"Indexing {names}", docs, LONG_INGEST_KEY, go="Index anyway", stop="Don't index now",
                           key="long_ingest", either_way="The files are stored either way; nothing is indexed until "
                                                         "you choose.")
    if picked == "stop":
        st.session_state[MESSAGES_KEY] = [("info", f"Stored, not indexed: {names}. Index later with **Index all**, "
                                                   "or split the file into smaller ones.")]
        st.rerun()
    if picked == "go":
        st.session_state[MESSAGES_KEY] = []
        index_documents(index, docs, confirmed=True)
        st.rerun()


def job_panels(keep_finished: int = 3) -> None:
    """Every indexing job under way, any session's (a job started later hides none started before it), then how
    this session's last ``keep_finished`` jobs ended."""
    active = sorted((job for job in jobs.runner().active() if job.files), key=lambda job: job.created)
    for job in active:
        jobs.job_details(job.id)
    running = {job.id for job in active}
    own = [*st.session_state.get(SESSION_JOBS_KEY, []), st.session_state.get(JOB_KEY)]
    for job_id in [i for i in dict.fromkeys(own) if i and i not in running][-keep_finished:]:
        jobs.job_details(job_id)


def report_added(report, messages: list) -> None:
    """What a store batch did, as page messages (names escaped: they come from uploads)."""
    messages.extend(("error", md_escape(message)) for _, message in report.errors)
    for what, kind, docs in (("Added {n} document(s).", "success", report.added),
                             ("Kept both: stored under a new name: {names}.", "info", report.renamed),
                             ("Replaced (you chose so): {names}.", "info", report.replaced),
                             ("Skipped (you chose so): {names}.", "info", report.skipped),
                             ("Already stored (recognised, not duplicated): {names}.", "info", report.existing)):
        if docs:
            names = ", ".join(md_escape(d.name) for d in docs)
            messages.append((kind, what.format(n=len(docs), names=names)))
    if report.skipped_files:
        listed = "; ".join(f"{md_escape(path)} ({md_escape(reason)})" for path, reason in report.skipped_files)
        messages.append(("info", f"{len(report.skipped_files)} file(s) of the archive skipped: {listed}."))
    if report.folder_skipped:
        listed = "; ".join(f"{md_escape(path)} ({md_escape(reason)})" for path, reason in report.folder_skipped)
        messages.append(("info", f"{len(report.folder_skipped)} file(s) of the folder skipped: {listed}."))


def load_and_index(index, items, what: str, keep_folders: bool = False, already: str = "Already indexed") -> None:
    """Load files (paths or (name, bytes) pairs) into the store, report per-file errors, index what loaded and is
    not indexed yet (``already`` names the case where that is nothing); a file named like a stored document with
    other content waits for a decision (nothing replaced silently)."""
    bar = st.progress(0.0, text=f"Loading {what}…")
    settings = state.settings()
    report = add_files(state.document_store(), items, max_bytes=settings.max_upload_mb * 1024 * 1024,
                       on_conflict="ask", keep_folders=keep_folders, max_files=settings.max_upload_files,
                       progress=lambda done, total, name: bar.progress(done / total, text=f"Loaded {done}/{total}"))
    bar.empty()
    messages: list = []
    report_added(report, messages)
    st.session_state[MESSAGES_KEY] = messages
    if report.conflicts:
        st.session_state[CONFLICTS_KEY] = [*st.session_state.get(CONFLICTS_KEY, []), *report.conflicts]
    index_documents(index, report.documents, already)


def ask_about_conflicts(index) -> None:
    """Same-name files with other content: replace, keep both or skip, one decision each; nothing before a click."""
    conflicts = st.session_state.get(CONFLICTS_KEY) or []
    if not conflicts:
        return
    with st.container(border=True):
        st.warning(f"**{len(conflicts)} file(s) have the name of a stored document but other content.** "
                   "Nothing was replaced. Choose for each, then apply:")
        decisions = []
        for i, conflict in enumerate(conflicts):
            new, old = conflict.new, conflict.stored
            choice = st.radio(
                f"**{md_escape(new.name)}** — new {human_size(new.size)}, stored {human_size(old.size)} "
                f"(added {old.created[:10]})", options=list(CONFLICT_CHOICES), format_func=CONFLICT_CHOICES.get,
                index=None, horizontal=True, key=f"conflict_{i}_{new.id}")
            decisions.append((conflict, choice))
        apply_col, skip_col, _ = st.columns([2, 2, 3])
        apply = apply_col.button("Apply choices", type="primary", key="conflicts_apply", width="stretch")
        skip_all = skip_col.button("Skip all (keep the stored ones)", key="conflicts_skip_all", width="stretch")
    if skip_all:
        decisions = [(conflict, "skip") for conflict, _ in decisions]
    elif not apply:
        return
    elif any(choice is None for _, choice in decisions):
        st.error("Choose replace, keep both or skip for every file first.")
        return
    del st.session_state[CONFLICTS_KEY]
    report = resolve_conflicts(state.document_store(), decisions)
    messages: list = []
    report_added(report, messages)
    if index is not None:
        for old in report.replaced:
            state.guarded(lambda old=old: index.remove_document(old.id), f"Removing the old {old.name} from the index")
    st.session_state[MESSAGES_KEY] = messages
    index_documents(index, report.added)
    st.rerun()


def document_rows(docs, indexed: dict, in_job: dict, index, config) -> list[dict]:
    """One table row per stored document: type, size, where it is in the index, chunks per granularity, notes."""
    rows: list[dict] = []
    for doc in docs:
        entry, notes = indexed.get(doc.id), list(doc.metadata.get("warnings", []))
        try:
            counts = entry.get("chunks", {}) if entry else chunk_counts(doc.id, config.chunking.model_dump_json())
        except Exception as e:  # one document the chunker rejects must not hide the list
            counts = {}
            notes.append(f"chunking failed: {e}")
        rows.append({
            "name": doc.name, "type": doc.doc_type + (f" ({doc.language})" if doc.language else ""),
            "size": human_size(doc.size),
            "index": "indexed" if entry else in_job.get(doc.id) or (
                "index unavailable" if index is None else "not indexed"),
            **{g: counts.get(g, 0) for g in GRANULARITIES},
            "notes": "; ".join(notes), "added": doc.created, "id": doc.id,
        })
    return rows


def confirm_deletion(labels: dict[str, str], index, store) -> None:
    """The second step of a deletion: say exactly what goes, and delete only on an explicit confirmation."""
    pending = [doc_id for doc_id in st.session_state.get(PENDING_DELETE_KEY, []) if doc_id in labels]
    if not pending:
        return
    with st.container(border=True):
        names = "\n".join(f"- {md_escape(labels[doc_id])}" for doc_id in pending)
        st.warning(f"Delete **{len(pending)} document(s)**? They are removed from the store and from the active "
                   f"index; this cannot be undone.\n\n{names}")
        confirm_col, cancel_col, _ = st.columns([2, 1, 3])
        confirmed = confirm_col.button(f"Delete {len(pending)} document(s)", type="primary", key="delete_confirm",
                                       width="stretch")
        cancelled = cancel_col.button("Cancel", key="delete_cancel", width="stretch")
    if cancelled:
        del st.session_state[PENDING_DELETE_KEY]
        st.session_state[MESSAGES_KEY] = [("info", "Nothing was deleted.")]
        st.rerun()
    if confirmed:
        del st.session_state[PENDING_DELETE_KEY]
        failures = []
        with st.spinner(f"Deleting {len(pending)} document(s) from the store and the active index…"):
            for doc_id in pending:
                try:
                    if index is not None:
                        index.remove_document(doc_id)
                    store.delete(doc_id)
                except Exception as e:  # shown after the rerun instead of a traceback
                    failures.append(("error", f"{md_escape(labels[doc_id])}: not deleted ({md_escape(str(e))})."))
        deleted = len(pending) - len(failures)
        st.session_state[MESSAGES_KEY] = [("success", f"Deleted {deleted} document(s)."), *failures]
        st.rerun()
