"""Documents: upload files or load the samples, index them into the active configuration, list and delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag_core.documents import add_files, resolve_conflicts
from rag_core.loaders import sample_paths, supported_types
from rag_core.types import GRANULARITIES
from ui import jobs, state
from ui.router import halt, through_app
from ui.text import md_escape, md_inert

through_app()

MESSAGES_KEY = "documents_messages"
SEEN_UPLOADS_KEY = "documents_seen_uploads"
PENDING_DELETE_KEY = "documents_pending_delete"  # ids picked for deletion, waiting for the confirmation
CONFLICTS_KEY = "documents_conflicts"  # same-name uploads waiting for replace / keep both / skip
JOB_KEY = "documents_job"  # the last indexing job this session started here
CONFLICT_CHOICES = {"replace": "Replace the stored one", "keep_both": "Keep both (rename the new one)",
                    "skip": "Skip the new one"}


def human_size(n_bytes: int) -> str:
    if n_bytes < 1024:
        return f"{n_bytes} B"
    return f"{n_bytes / 1024:.1f} KB" if n_bytes < 1024 * 1024 else f"{n_bytes / 1024 / 1024:.1f} MB"


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


def index_documents(index, docs) -> None:
    """Index ``docs`` into ``index`` as a background job (followed in the sidebar and below the uploader)."""
    messages = st.session_state.setdefault(MESSAGES_KEY, [])
    if not docs:
        return
    if index is None:
        messages.append(("warning", "The documents are stored but not indexed: the index is unavailable (see above)."))
        return
    job = jobs.runner().submit_ingest(index, docs, title=f"Indexing {len(docs)} document(s)")
    st.session_state[JOB_KEY] = job.id


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


def load_and_index(index, items, what: str, keep_folders: bool = False) -> None:
    """Load files (paths or (name, bytes) pairs) into the store, report per-file errors, index what loaded;
    a file named like a stored document with other content waits for a decision (nothing replaced silently)."""
    bar = st.progress(0.0, text=f"Loading {what}…")
    max_bytes = state.settings().max_upload_mb * 1024 * 1024
    report = add_files(state.document_store(), items, max_bytes=max_bytes, on_conflict="ask",
                       keep_folders=keep_folders,
                       progress=lambda done, total, name: bar.progress(done / total, text=f"Loaded {done}/{total}"))
    bar.empty()
    messages: list = []
    report_added(report, messages)
    st.session_state[MESSAGES_KEY] = messages
    if report.conflicts:
        st.session_state[CONFLICTS_KEY] = [*st.session_state.get(CONFLICTS_KEY, []), *report.conflicts]
    index_documents(index, report.documents)


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


st.title("📄 Documents")
settings, config = state.settings(), state.active_config()
store = state.guarded(state.document_store, "Opening the document store")
if store is None:
    halt()
prefill = state.take_prefill("documents")
index = state.guarded(state.active_index, "Opening the index")

files_col, folder_col = st.columns(2)
uploads = files_col.file_uploader(
    f"Upload documents (Markdown, text, code, HTML, PDF, CSV, DOCX — up to {settings.max_upload_mb} MB each), "
    "or a ZIP of a folder",
    accept_multiple_files=True, key="documents_uploader",
    help="Supported extensions: " + ", ".join(supported_types()) + ". A ZIP keeps its folder paths.",
    max_upload_size=settings.max_upload_mb,  # the browser refuses bigger files with the same figure as the label
)
folder = folder_col.file_uploader(
    "Or upload a whole folder (its sub-folder paths are kept: guide/index.md and config/index.md stay apart)",
    accept_multiple_files="directory", key="documents_folder_uploader", max_upload_size=settings.max_upload_mb,
)
load_samples = st.button("Load sample documents", type="primary",
                         help="The shipped Wrenfall product docs: Markdown guides, CSV tables and Python code.")

seen = st.session_state.setdefault(SEEN_UPLOADS_KEY, set())
for picked, keep_folders in ((uploads, False), (folder, True)):
    new_uploads = [f for f in picked or [] if f.file_id not in seen]
    if new_uploads:
        seen.update(f.file_id for f in new_uploads)
        load_and_index(index, [(f.name, f.getvalue()) for f in new_uploads], f"{len(new_uploads)} uploaded file(s)",
                       keep_folders=keep_folders)
if load_samples or prefill.get("load_samples"):
    paths = sample_paths()
    if paths:
        load_and_index(index, paths, "the sample documents")
    else:
        st.session_state[MESSAGES_KEY] = [("error", "The samples/ folder is missing from this installation.")]

ask_about_conflicts(index)
for kind, message in st.session_state.get(MESSAGES_KEY, []):
    getattr(st, kind)(message)
if st.session_state.get(JOB_KEY):
    jobs.job_details(st.session_state[JOB_KEY])

docs = store.list()
if store.unreadable:  # a stored file of the wrong shape (e.g. from an old or crafted bundle) is reported, not fatal
    st.warning(md_inert(f"{len(store.unreadable)} stored document file(s) could not be read and are left out: "
                        + "; ".join(f"{doc_id}: {why}" for doc_id, why in store.unreadable.items())))
    if st.button("Remove the unreadable files", key="documents_remove_unreadable"):
        store.remove_unreadable()
        st.rerun()
indexed = {}
if index is not None:
    indexed = {row["doc_id"]: row for row in (state.guarded(index.documents, "Reading the index") or [])}
st.subheader(f"{len(docs)} document(s) · collection `{config.collection_name()}`")
if not docs:
    st.info("No documents yet: upload files above or click **Load sample documents**.")
    halt()

index_name = config.collection_name()
in_job = {f.doc_id: f.state for job in jobs.runner().active() if job.collection == index_name for f in job.files}
rows = []
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
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption("Chunk counts per granularity come from the active index when a document is indexed, "
           "otherwise from the chunker with the active configuration's settings.")

unindexed = [doc for doc in docs if doc.id not in indexed]
unindexed = [doc for doc in unindexed if doc.id not in in_job]
if index is not None and unindexed and st.button(f"Index all ({len(unindexed)} not yet in this collection)"):
    st.session_state[MESSAGES_KEY] = []
    index_documents(index, unindexed)
    st.rerun()

labels = {doc.id: f"{doc.name} · {doc.id}" for doc in docs}
explore_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
explore = explore_col.selectbox("See how a document is split", options=list(labels), format_func=labels.get)
if button_col.button("Open in Chunk Explorer", width="stretch"):
    state.goto("explorer", doc_id=explore)

with st.form("delete_documents"):
    chosen = st.multiselect("Delete documents", options=list(labels), format_func=labels.get,
                            placeholder="Pick documents to remove from the store and the active index")
    if st.form_submit_button("Delete selected…"):
        st.session_state[PENDING_DELETE_KEY] = chosen
        if not chosen:
            st.warning("Pick the documents to delete first.")

pending = [doc_id for doc_id in st.session_state.get(PENDING_DELETE_KEY, []) if doc_id in labels]
if pending:  # second step: say exactly what goes, and delete only on an explicit confirmation
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
