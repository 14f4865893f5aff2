"""One app instance driven from the command line, for the scale-out tests and ``bench load``.

Reads ``RAG_DATA_DIR`` and ``RAG_CHROMA_HOST``/``PORT`` like the app. Prints one JSON object::

    python instance.py COLLECTION state                 # chunks, vectors, BM25 rows, parent check, documents
    python instance.py COLLECTION find QUERY            # keyword, vector and zoom results for QUERY
    python instance.py COLLECTION remove NAME           # remove the document called NAME
    python instance.py COLLECTION watch QUERY present|absent TIMEOUT_S
        # one long-lived instance: search every 50 ms until QUERY's document is (or is no longer) found by
        # keyword search; prints when (time.time()) it saw the change
"""

from __future__ import annotations

import json
import sys
import time


def _open(collection: str):
    from rag_core.services import open_collection

    return open_collection(collection)


def _find(index, query: str) -> dict:
    keyword = [(c.id, index.doc_name(c.doc_id)) for c, _ in index.keyword_search(query, 5)]
    vector = [(c.id, index.doc_name(c.doc_id)) for c, _ in index.vector_search(query, 5)]
    zoomed: list[str] = []  # the zoom tools on the best keyword hit's document: its sections' children
    if keyword:
        doc_id = index.get(keyword[0][0]).doc_id
        zoomed = [c.text for section in index.list_sections(doc_id) for c in index.zoom_in(section.id)]
    return {"keyword": keyword, "vector": vector, "zoom": zoomed}


def _state(index) -> dict:
    snapshot = index._current()
    chunks = snapshot.chunks
    bm25_rows = sum(len(sub.ids) for sub in snapshot.keyword._subs.values())
    orphans = [c.id for c in chunks.values() if c.parent_id and c.parent_id not in chunks]
    from rag_core.loaders.document_store import DocumentStore

    library = sorted(doc.name for doc in DocumentStore(index.settings.data_dir).list())
    return {"generation": snapshot.generation, "documents": sorted(d["name"] for d in index.documents()),
            "library": library,
            "chunks": len(chunks), "vectors": index._store.count(), "bm25_rows": bm25_rows,
            "missing_parents": len(orphans)}


def main(argv: list[str]) -> int:
    collection, action, *rest = argv
    index = _open(collection)
    if action == "state":
        result = _state(index)
    elif action == "find":
        result = _find(index, rest[0])
    elif action == "remove":
        matches = [d["doc_id"] for d in index.documents() if d["name"] == rest[0]]
        result = {"removed": [index.remove_document(doc_id) for doc_id in matches]}
    elif action == "watch":
        query, wanted, timeout_s = rest[0], rest[1] == "present", float(rest[2])
        print(json.dumps({"ready": time.time()}), flush=True)
        deadline = time.monotonic() + timeout_s
        seen = None
        while time.monotonic() < deadline:
            if bool(index.keyword_search(query, 1)) == wanted:
                seen = time.time()
                break
            time.sleep(0.05)
        result = {"seen": seen, **({"find": _find(index, query)} if seen and wanted else {})}
    else:
        raise SystemExit(f"unknown action {action}")
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
