"""Documents: upload files or load the samples, index them into the active configuration, list and delete."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from rag_core.loaders import listed_kinds, sample_paths, supported_types
from ui import jobs, state
from ui.documents import documents_view
from ui.documents.documents_view import MESSAGES_KEY, PENDING_DELETE_KEY, SEEN_UPLOADS_KEY
from ui.router import halt
from ui.safe_text import md_inert

st.title(":material/description: Documents")
settings, config = state.settings(), state.active_config()
store = state.guarded(state.document_store, "Opening the document store")
if store is None:
    halt()
prefill = state.take_prefill("documents")
index = state.guarded(state.active_index, "Opening the index")

files_col, folder_col = st.columns(2)
uploads = files_col.file_uploader(
    f"Upload documents ({listed_kinds()} — up to {settings.max_upload_mb} MB each), "
    "or a ZIP of a folder",
    accept_multiple_files=True, key="documents_uploader",
    help="Supported extensions: " + ", ".join(supported_types()) + ". A ZIP keeps its folder paths.",
    max_upload_size=settings.max_upload_mb,  # the browser refuses bigger files with the same figure as the label
)
folder = folder_col.file_uploader(
    f"Or upload a whole folder of up to {settings.max_upload_files:,} files (its sub-folder paths are kept: "
    "guide/index.md and config/index.md stay apart)",
    accept_multiple_files="directory", key="documents_folder_uploader", max_upload_size=settings.max_upload_mb,
)
load_samples = st.button("Load sample documents", type="primary",
                         help="The shipped Wrenfall product docs: Markdown guides, CSV tables and Python code.")

seen = st.session_state.setdefault(SEEN_UPLOADS_KEY, set())
for picked, keep_folders in ((uploads, False), (folder, True)):
    new_uploads = [f for f in picked or [] if f.file_id not in seen]
    if new_uploads:
        seen.update(f.file_id for f in new_uploads)
        documents_view.load_and_index(index, [(f.name, f.getvalue()) for f in new_uploads],
                                      f"{len(new_uploads)} uploaded file(s)", keep_folders=keep_folders)
if load_samples or prefill.get("load_samples"):
    paths = sample_paths()
    if paths:
        documents_view.load_and_index(index, paths, "the sample documents", already="Samples already indexed")
    else:
        st.session_state[MESSAGES_KEY] = [("error", "The samples/ folder is missing from this installation.")]

documents_view.ask_about_conflicts(index)
documents_view.confirm_long_ingest(index, store)
for kind, message in st.session_state.get(MESSAGES_KEY, []):
    getattr(st, kind)(message)
documents_view.job_panels()  # every indexing job under way, not only the one this session started last

docs = store.list()
if store.unreadable:  # a stored file of the wrong shape (e.g. from an old or crafted bundle) is reported, not fatal
    st.warning(md_inert(f"{len(store.unreadable)} stored document file(s) could not be read and are left out: "
                        + "; ".join(f"{doc_id}: {why}" for doc_id, why in store.unreadable.items())))
    if st.button("Remove the unreadable files", key="documents_remove_unreadable"):
        # their chunks go from the active index too: nothing searchable may outlive a document's listing
        if state.guarded(lambda: store.remove_unreadable(index), "Removing the unreadable files") is not None:
            st.rerun()
indexed = {}
if index is not None:
    indexed = {row["doc_id"]: row for row in (state.guarded(index.documents, "Reading the index") or [])}
index_name = state.index_spec(config).collection  # the serving index (during a re-index, the complete old one)
st.subheader(f"{len(docs)} document(s) · collection `{index_name}`")
if not docs:
    st.info("No documents yet: upload files above or click **Load sample documents**.")
    halt()

in_job = {f.doc_id: jobs.STATE_LABELS.get(f.state, f.state)
          for job in jobs.runner().active() if job.collection == index_name for f in job.files}
rows = documents_view.document_rows(docs, indexed, in_job, index, config)
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
st.caption("Chunk counts per granularity come from the active index when a document is indexed, "
           "otherwise from the chunker with the active configuration's settings.")

unindexed = [doc for doc in docs if doc.id not in indexed]
unindexed = [doc for doc in unindexed if doc.id not in in_job]
if index is not None and unindexed and st.button(f"Index all ({len(unindexed)} not yet in this collection)"):
    st.session_state[MESSAGES_KEY] = []
    documents_view.index_documents(index, unindexed)
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

documents_view.confirm_deletion(labels, index, store)
