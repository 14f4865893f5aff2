"""Panels of the Evaluate page: configuration management and demo bundles (kept out of the page to keep it thin)."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st
from pydantic import ValidationError

from rag_core.config import RAGConfig
from ui import state
from ui.safe_text import md_inert

BUNDLE_KEY = "eval_bundle_summary"
REPLAY_KEY, REPLAY_LABEL = "eval_bundle_replay", "replay of bundle"  # (job id, the bundle's run id)
FLASH_KEY = "cfg_flash"  # a message kept across the rerun that redraws the list after a change
NAME_RULE = "1–80 letters, digits, spaces, '_', '.' or '-'"


def renamed(config: RAGConfig, name: str) -> RAGConfig:
    """``config`` under a new name; a bad name raises a ValueError that says what a name may hold."""
    try:
        return config.renamed(name)
    except ValidationError as e:
        if any(error["loc"] == ("name",) for error in e.errors()):
            raise ValueError(f"'{name}' is not a valid configuration name: use {NAME_RULE}") from None
        raise


def _config_row(config: RAGConfig) -> dict:
    r = config.retrieval
    return {"name": config.name, "chunking": f"{config.chunking.strategy} {config.chunking.max_tokens} tok",
            "embedder": config.embedding.embedder, "strategy": r.strategy, "k": f"{r.initial_k}→{r.max_k}",
            "min confidence": r.min_confidence, "budget": r.token_budget, "agent": config.agent.policy}


def _make_active(config) -> None:
    """Make ``config`` the active configuration and open its index now, under the caller's spinner (a failure
    to open it is shown, and the configuration stays active)."""
    state.set_active_config(config)
    state.guarded(lambda: state.index_for(config), "Opening the index")


def config_panel() -> None:
    """Save the active configuration; list, load, duplicate, delete, export and import saved ones."""
    store = state.config_store()
    active = state.active_config()
    flash = st.session_state.pop(FLASH_KEY, None)
    if flash:
        st.success(flash)
    c1, c2 = st.columns([3, 1])
    new_name = c1.text_input("Save the active configuration as", value=active.name, key="cfg_save_name",
                             help=f"A name of {NAME_RULE}.")
    if c2.button("Save", key="cfg_save"):
        saved = state.guarded(lambda: renamed(active, new_name.strip()), "Configuration name")
        if saved:
            with st.spinner(f"Saving the configuration '{saved.name}' and opening its index…"):
                ok = state.guarded(lambda: store.save(saved), "Saving the configuration")
                if ok:
                    _make_active(saved)
            if ok:
                st.success(f"Saved '{saved.name}'.")
    names = state.guarded(store.list, "Saved configurations") or []
    if not names:
        st.info("No saved configuration yet.")
    else:
        configs = [c for c in (state.guarded(lambda n=n: store.load(n), f"Configuration '{n}'") for n in names) if c]
        st.dataframe(pd.DataFrame([_config_row(c) for c in configs]), hide_index=True, width="stretch")
        name = st.selectbox("Saved configuration", names, key="cfg_pick", persist_state=state.KEEP)
        b1, b2, b3 = st.columns(3)
        if b1.button("Load as active", key="cfg_load"):
            with st.spinner(f"Loading the configuration '{name}' and opening its index (a new embedder loads its "
                            "model)…"):
                config = state.guarded(lambda: store.load(name), "Loading")
                if config:
                    _make_active(config)
            if config:
                st.success(f"'{name}' is now the active configuration.")
        if b3.button("Delete", key="cfg_delete"):
            if state.guarded(lambda: store.delete(name) or True, "Deleting"):
                st.session_state[FLASH_KEY] = f"Deleted '{name}'."
                st.rerun()
        exported = state.guarded(lambda: store.export_json(name), "Export")
        if exported:
            b2.download_button("Export JSON", exported, file_name=f"{name}.json", mime="application/json",
                               key="cfg_export")
        d1, d2 = st.columns([3, 1])
        copy_name = d1.text_input("Duplicate as", value=f"{name} copy", key="cfg_dup_name")
        if d2.button("Duplicate", key="cfg_dup"):
            if state.guarded(lambda: store.duplicate(name, copy_name.strip()), "Duplicating"):
                st.session_state[FLASH_KEY] = f"Saved a copy as '{copy_name.strip()}'."
                st.rerun()
    upload = st.file_uploader("Import a configuration (JSON)", type=["json"], key="cfg_import")
    if upload is not None and st.button("Import", key="cfg_import_go"):
        with st.spinner("Checking and saving the imported configuration…"):
            config = state.guarded(lambda: store.import_json(upload.getvalue(), source=upload.name), "Import")
        if config:
            st.session_state[FLASH_KEY] = f"Imported '{config.name}'."
            st.rerun()


def import_message(summary: dict) -> str:
    """What a bundle import restored, in words."""
    configs = ", ".join(f"'{name}'" for name in summary["configs"]) or "none"
    skipped = summary.get("documents_skipped") or []
    kept = (f" Not imported ({len(skipped)}): " + "; ".join(str(s) for s in skipped[:5])
            + (" …" if len(skipped) > 5 else "") + ".") if skipped else ""
    return md_inert(f"Imported run {summary['run_id']} ({summary['questions']} questions, {summary['agent_traces']} "
                    f"agent traces); configurations: {configs}; documents: {summary['documents_added']} new of "
                    f"{summary['documents']}.{kept} It is listed in the Results tab.")


def replay_panel(bundle, results) -> None:
    """The replay job of this bundle: live while it runs, then the bundle's leaderboard beside this machine's."""
    from ui import jobs
    from ui.charts import leaderboard

    job_id, run_id = st.session_state.get(REPLAY_KEY, (None, None))
    job = jobs.runner().get(job_id) if job_id and run_id == bundle.run.id else None
    if job is None:
        return
    if job.active:
        jobs.job_details(job.id, "replay")
        return
    replayed = state.guarded(lambda: results.load(job.result), "Replayed run") if job.result else None
    if replayed is None:
        st.warning(jobs.summary(job))
        return
    if replayed.status != "complete":
        st.warning(f"The replay is **{md_inert(replayed.status)}**: {md_inert(replayed.note)}")
    st.markdown("Bundle results (left) and this machine's replay (right):")
    left, right = st.columns(2)
    left.dataframe(leaderboard(bundle.run), hide_index=True, placeholder="–")
    right.dataframe(leaderboard(replayed), hide_index=True, placeholder="–")


def bundle_panel(results) -> None:
    """Export a stored run as a demo bundle; import one and replay it here."""
    from rag_core.evaluation.background import submit_evaluation
    from rag_core.evaluation.bundle import export_bundle, import_bundle, read_bundle, resolve_documents
    from ui import jobs, runs
    from ui.evaluate import eval_jobs

    st.markdown("**Export**: configuration(s), question set, results, selected agent traces and the documents.")
    stored = runs.list_runs()  # cached until a run is saved or deleted, like the run itself below
    if stored:
        labels = {f"{r['created'][:19]} · {r['question_set']} · {', '.join(runs.row_labels(r))} · {r['id']}":
                  r["id"] for r in stored}
        picked = st.selectbox("Run to share", list(labels), key="bundle_run", persist_state=state.KEEP)
        run = state.guarded(lambda: runs.load_run(labels[picked]), "Stored run")
        include = st.checkbox("Include the documents (otherwise only their names)", value=True, key="bundle_docs",
                              persist_state=state.KEEP)
        agent_ids = sorted({r["question_id"] for r in run.records if r["strategy"] == "agent"}) if run else []
        traces = st.multiselect("Agent traces to include", agent_ids, default=agent_ids[:3], key="bundle_traces")
        if run:
            def bundle_text() -> str:
                # Built when the button is clicked, not on every rerun of the page (a bundle with the sample
                # documents is 1.5 MB and took 1.5-3 s to build each time anything on the page changed); the
                # documents are read then too.
                try:
                    docs = state.document_store().list() if run.question_set.get("kind") != "beir" else []
                    return export_bundle(run, docs, include_documents=include, trace_question_ids=traces)
                except Exception as e:  # the download then holds the reason instead of a broken page
                    return json.dumps({"error": f"the bundle could not be built: {type(e).__name__}: {e}"})

            st.download_button("Download bundle", bundle_text, file_name=f"rag-studio-bundle-{run.id}.json",
                               mime="application/json", key="bundle_download")
    else:
        st.info("Run an evaluation first; its results can then be exported.")
    st.markdown("**Import** a bundle made on another machine, then replay it against this machine's index.")
    upload = st.file_uploader("Bundle file", type=["json"], key="bundle_upload")
    if upload is None:
        return
    bundle = state.guarded(lambda: read_bundle(upload.getvalue(), source=upload.name), "Bundle")
    if bundle is None:
        return
    st.caption(f"{len(bundle.configs)} configuration(s) · {len(bundle.question_set.questions)} questions · "
               f"{len(bundle.documents)} documents included, {len(bundle.document_names)} named · "
               f"{len(bundle.agent_traces)} agent traces · strategies {md_inert(', '.join(bundle.run.strategies))}")
    c1, c2 = st.columns(2)
    if c1.button("Import bundle", key="bundle_import"):
        with st.spinner("Importing the bundle: checking and storing its configurations, run and documents…"):
            summary = state.guarded(lambda: import_bundle(bundle, settings=state.settings()), "Bundle import")
        if summary:
            st.session_state[BUNDLE_KEY] = summary
            st.success(import_message(summary))
    if c2.button("Replay the comparison here", key="bundle_replay",
                 help="Re-indexes the bundle's documents and re-runs its comparison as a background job."):
        with st.spinner("Starting the replay: finding the bundle's documents and queuing the job…"):
            job = state.guarded(lambda: submit_evaluation(
                jobs.runner(), bundle.question_set, bundle.configs, bundle.run.strategies, settings=state.settings(),
                documents=resolve_documents(bundle, state.document_store()),
                index_factory=eval_jobs.index_factory(bundle.configs), label=REPLAY_LABEL, llm=state.llm()),
                "Replay")
        if job is not None:
            st.session_state[REPLAY_KEY] = (job.id, bundle.run.id)
    replay_panel(bundle, results)
    for trace in bundle.agent_traces:
        with st.expander(md_inert(f"Agent trace · {trace['question_id']} · {trace['question'][:80]}")):
            st.text(trace.get("answer", ""))
            st.json(trace.get("trace", {}), expanded=False)
