"""``python -m rag_core.bootstrap``: load the sample documents and index them for the default configuration.

``make run`` calls this before starting the app, so a newcomer lands on a ready corpus and a ready guided demo
(its step-3 question is chosen here, once per index contents). It is idempotent: documents already stored and
indexed are skipped, a demo question already chosen is kept, and cached embeddings make a re-run fast.
"""

from __future__ import annotations

import time

from rag_core.config import RAGConfig, Settings, get_settings
from rag_core.evaluation.questions import load_golden
from rag_core.loaders import load_path, sample_paths
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.activestate import active_config, pointer
from rag_core.serving.configstore import default_config
from rag_core.serving.home_demo import choose_showcase

__all__ = ["default_config", "load_samples", "prepare_demo"]


def load_samples(settings: Settings | None = None, config: RAGConfig | None = None, log=print) -> dict:
    """Store the sample documents and index those the configuration's index lacks (by default the index serving
    the app's active configuration, ``rag_core.serving.activestate``). Returns a summary."""
    settings = settings or get_settings()
    demo_config = config  # the guided demo's choice is kept per configuration: the one Home shows
    if config is None:
        demo_config = active_config(settings)
        spec = pointer(settings, demo_config).serving
        config = spec.config()
    store = DocumentStore(settings.data_dir)
    docs = []
    for path in sample_paths():
        doc, _ = store.add(load_path(path))
        docs.append(doc)
    index = open_index(config, settings)
    indexed = {entry["doc_id"] for entry in index.documents()}
    missing = [doc for doc in docs if doc.id not in indexed]
    started = time.perf_counter()
    if missing:
        log(f"indexing {len(missing)} sample document(s) into {config.collection_name()} …")

        def progress(done: int, total: int, label: str = "") -> None:
            if total and (done == total or done % 50 == 0):
                log(f"  {done}/{total}")

        index.ingest(missing, progress=progress)
    summary = {
        "documents": len(docs),
        "indexed_now": len(missing),
        "collection": config.collection_name(),
        "chunks": index.count(),
        "seconds": round(time.perf_counter() - started, 1),
    }
    log(f"sample documents ready: {summary}")
    summary["demo"] = prepare_demo(index, demo_config, settings, log)
    return summary


def prepare_demo(index, config: RAGConfig, settings: Settings, log=print) -> str:
    """Choose the guided demo's question for what ``index`` holds (once per contents and configuration), so Home
    opens on a ready demo; returns the chosen question's id ("" when none)."""
    started = time.perf_counter()
    made, chosen = choose_showcase(load_golden(), index, config, settings)
    if made:
        log(f"guided demo prepared in {time.perf_counter() - started:.1f} s: "
            f"{chosen.question_id if chosen else 'no golden question shows the agent finding more'}")
    return chosen.question_id if chosen else ""


if __name__ == "__main__":
    load_samples()
