"""Documents: upload files or load the samples, index them into the active configuration, list and delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag_core.documents import add_files
from rag_core.loaders import sample_paths, supported_types
from rag_core.types import GRANULARITIES
from ui import state
from ui.text import md_escape, md_inert

MESSAGES_KEY = "documents_messages"
SEEN_UPLOADS_KEY = "documents_seen_uploads"
PENDING_DELETE_KEY = "documents_pending_delete"  # ids picked for deletion, waiting for the confirmation


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
    """Index ``docs`` into ``index`` with a progress bar; messages go to the session's message list."""
    messages = st.session_state.setdefault(MESSAGES_KEY, [])
    if not docs:
        return
    if index is None:
        messages.append(("warning", "The documents are stored but not indexed: the index is unavailable (see above)."))
        return
    bar = st.progress(0.0, text=f"Indexing {len(docs)} document(s)…")

    def progress(done: int, total: int) -> None:
        bar.progress(min(done / total, 1.0) if total else 1.0, text=f"Embedding chunks: {done}/{total}")

    report = state.guarded(lambda: index.ingest(docs, progress=progress), "Indexing")
    bar.empty()
    if report is None:
        messages.append(("warning", "The documents are stored but not indexed; retry with “Index all”."))
        return
    for name, error in report.errors.items():
        messages.append(("error", f"{md_escape(name)}: not indexed — {md_escape(error)}"))
    new = len(report.added) + len(report.replaced)
    if new:
        total = sum(report.chunks.values())
        messages.append(("success", f"Indexed {new} document(s): {total} chunks in {report.seconds:.1f} s."))


def load_and_index(index, items, what: str) -> None:
    """Load files (paths or (name, bytes) pairs) into the store, report per-file errors, index what loaded."""
    bar = st.progress(0.0, text=f"Loading {what}…")
    max_bytes = state.settings().max_upload_mb * 1024 * 1024
    report = add_files(state.document_store(), items, max_bytes=max_bytes,
                       progress=lambda done, total, name: bar.progress(done / total, text=f"Loaded {done}/{total}"))
    bar.empty()
    messages = [("error", md_escape(message)) for _, message in report.errors]
    if report.added:
        messages.append(("success", f"Added {len(report.added)} document(s)."))
    if report.replaced:
        names = ", ".join(md_escape(d.name) for d in report.replaced)
        messages.append(("info", f"New version replaces the stored one: {names}."))
    if report.existing:
        names = ", ".join(md_escape(d.name) for d in report.existing)
        messages.append(("info", f"Already stored (recognised, not duplicated): {names}."))
    st.session_state[MESSAGES_KEY] = messages
    index_documents(index, report.documents)


st.title("📄 Documents")
settings, config = state.settings(), state.active_config()
store = state.guarded(state.document_store, "Opening the document store")
if store is None:
    st.stop()
prefill = state.take_prefill("documents")
index = state.guarded(state.active_index, "Opening the index")

uploads = st.file_uploader(
    f"Upload documents (Markdown, text, code, HTML, PDF, CSV, DOCX — up to {settings.max_upload_mb} MB each)",
    accept_multiple_files=True, key="documents_uploader", help="Supported extensions: " + ", ".join(supported_types()),
    max_upload_size=settings.max_upload_mb,  # the browser refuses bigger files with the same figure as the label
)
load_samples = st.button("Load sample documents", type="primary",
                         help="The shipped Wrenfall product docs: Markdown guides, CSV tables and Python code.")

seen = st.session_state.setdefault(SEEN_UPLOADS_KEY, set())
new_uploads = [f for f in uploads or [] if f.file_id not in seen]
if new_uploads:
    seen.update(f.file_id for f in new_uploads)
    load_and_index(index, [(f.name, f.getvalue()) for f in new_uploads], f"{len(new_uploads)} uploaded file(s)")
if load_samples or prefill.get("load_samples"):
    paths = sample_paths()
    if paths:
        load_and_index(index, paths, "the sample documents")
    else:
        st.session_state[MESSAGES_KEY] = [("error", "The samples/ folder is missing from this installation.")]

for kind, message in st.session_state.get(MESSAGES_KEY, []):
    getattr(st, kind)(message)

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
    st.stop()

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
        "index": "indexed" if entry else ("index unavailable" if index is None else "not indexed"),
        **{g: counts.get(g, 0) for g in GRANULARITIES},
        "notes": "; ".join(notes), "added": doc.created, "id": doc.id,
    })
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption("Chunk counts per granularity come from the active index when a document is indexed, "
           "otherwise from the chunker with the active configuration's settings.")

unindexed = [doc for doc in docs if doc.id not in indexed]
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
