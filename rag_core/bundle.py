"""Demo bundles: one JSON file with configurations, a question set, results, selected agent traces and documents.

Exported on one machine and imported on another, a bundle restores the configurations, the documents (included
in full, or named and found in the local document store) and the stored results; ``replay`` then re-indexes the
documents for each configuration and re-runs the same comparison, so both sets of numbers can be put side by side.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rag_core.config import RAGConfig, Settings, get_settings
from rag_core.configstore import ConfigStore, parse_config
from rag_core.evaluation.questions import QuestionSet
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun, run_evaluation
from rag_core.types import Document

FORMAT = "agentic-rag-studio/bundle"
VERSION = 1
MAX_BUNDLE_BYTES = 200 * 1024 * 1024
_DOC_ID = re.compile(r"[0-9a-f]{16}")


@dataclass(slots=True)
class Bundle:
    """What a bundle holds once read and validated."""

    configs: list[RAGConfig]
    question_set: QuestionSet
    run: EvalRun
    agent_traces: list[dict[str, Any]] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list)
    document_names: list[str] = field(default_factory=list)
    created: str = ""


def export_bundle(run: EvalRun, documents: Sequence[Document], *, include_documents: bool = True,
                  trace_question_ids: Sequence[str] = ()) -> str:
    """The bundle of ``run`` as JSON text.

    Per-question traces are dropped from the results except the agent traces of ``trace_question_ids``, which
    are kept in ``agent_traces``. ``documents`` are embedded in full, or only named when not ``include_documents``.
    """
    wanted = set(trace_question_ids)
    traces, records = [], []
    for record in run.records:
        if record["strategy"] == "agent" and record["question_id"] in wanted:
            traces.append({"question_id": record["question_id"], "question": record["question"],
                           "config": record["config"], "answer": record.get("answer", ""), "trace": record["trace"]})
        records.append({k: v for k, v in record.items() if k != "trace"})
    results = run.to_dict() | {"records": records}
    results.pop("summary", None)
    payload: dict[str, Any] = {
        "format": FORMAT, "version": VERSION, "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "configs": run.configs, "question_set": run.question_set, "results": results, "agent_traces": traces,
    }
    if include_documents:
        payload["documents"] = [doc.to_dict() for doc in documents]
    else:
        payload["document_names"] = sorted(doc.name for doc in documents)
    return json.dumps(payload, ensure_ascii=False)


def read_bundle(data: str | bytes, source: str = "bundle") -> Bundle:
    """Parse and validate a bundle; every problem is a ``ValueError`` naming the bad part."""
    if isinstance(data, bytes):
        if len(data) > MAX_BUNDLE_BYTES:
            limit = MAX_BUNDLE_BYTES // 10**6
            raise ValueError(f"{source}: {len(data) / 1e6:.0f} MB is larger than the {limit} MB limit")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{source}: not a bundle (not UTF-8 JSON)") from e
    try:
        payload = json.loads(data)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: not a bundle (invalid JSON at line {e.lineno}: {e.msg})") from e
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{source}: not an Agentic RAG Studio bundle (missing format '{FORMAT}')")
    if payload.get("version") != VERSION:
        raise ValueError(f"{source}: bundle version {payload.get('version')} is not supported (expected {VERSION})")
    for key in ("configs", "question_set", "results"):
        if key not in payload:
            raise ValueError(f"{source}: the bundle lacks '{key}'")
    configs = [parse_config(c, source=f"{source} configs[{i}]") for i, c in enumerate(payload["configs"])]
    try:
        question_set = QuestionSet.from_dict(payload["question_set"])
        run = EvalRun.from_dict(payload["results"])
    except (KeyError, TypeError) as e:
        raise ValueError(f"{source}: question set or results are malformed ({e})") from e
    try:
        documents = [Document.from_dict(d) for d in payload.get("documents", [])]
    except TypeError as e:
        raise ValueError(f"{source}: a document entry is malformed ({e})") from e
    bad = [doc.name for doc in documents if not _DOC_ID.fullmatch(doc.id)]
    if bad:
        raise ValueError(f"{source}: documents with malformed ids (16 hex digits expected): {', '.join(bad)}")
    names = [str(n) for n in payload.get("document_names", [])]
    return Bundle(configs=configs, question_set=question_set, run=run, agent_traces=payload.get("agent_traces", []),
                  documents=documents, document_names=names, created=str(payload.get("created", "")))


def import_bundle(bundle: Bundle, data_dir: Path | str | None = None) -> dict[str, Any]:
    """Save the bundle's configurations, documents and results locally; returns what was restored.

    Named (not included) documents must already be in the local document store; a missing one is an error
    naming it, before anything is written.
    """
    from rag_core.documents import DocumentStore

    data_dir = Path(data_dir or get_settings().data_dir)
    doc_store = DocumentStore(data_dir)
    resolve_documents(bundle, doc_store)
    configs = ConfigStore(data_dir)
    saved = [_save_config(configs, config) for config in bundle.configs]
    added = sum(1 for doc in bundle.documents if doc_store.add(doc)[1])
    run = EvalRun.from_dict(bundle.run.to_dict())
    results = ResultsStore(data_dir)
    run.id = _free_run_id(results, run.id)  # importing on the machine that made it keeps the original
    if run.label != "sweep":  # the Sweep tab finds its runs by this label
        run.label = (run.label + " " if run.label else "") + "(imported)"
    run.note = (run.note + "; " if run.note else "") + "imported from a bundle"
    results.save(run)
    return {"configs": saved, "documents_added": added,
            "documents": len(bundle.documents) + len(bundle.document_names), "run_id": run.id,
            "questions": len(bundle.question_set.questions), "agent_traces": len(bundle.agent_traces)}


def _save_config(configs: ConfigStore, config: RAGConfig) -> str:
    """Save ``config``; a different local configuration of the same name is kept, and this one is saved under
    ``NAME-imported`` (``-imported-2`` ...). Returns the name it was saved under."""
    name = next(n for n in _import_names(config.name)
                if not configs.exists(n) or configs.load(n) == config.model_copy(update={"name": n}))
    configs.save(config.model_copy(update={"name": name}))
    return name


def _free_run_id(results: ResultsStore, run_id: str) -> str:
    return next(name for name in _import_names(run_id) if not results.exists(name))


def _import_names(name: str) -> Iterator[str]:
    """``name``, then ``name-imported``, ``name-imported-2``, ...: where an import goes when ``name`` is taken."""
    yield name
    yield f"{name}-imported"
    yield from (f"{name}-imported-{n}" for n in itertools.count(2))


def resolve_documents(bundle: Bundle, doc_store) -> list[Document]:
    """The documents to index: those included, plus those named, found by name in ``doc_store``."""
    by_name = {doc.name: doc for doc in doc_store.list()}
    missing = [name for name in bundle.document_names if name not in by_name]
    if missing:
        raise ValueError(f"the bundle names documents that are not loaded here: {', '.join(missing)}; "
                         "upload them on the Documents page or export the bundle with documents included")
    return [*bundle.documents, *(by_name[name] for name in bundle.document_names)]


def replay(bundle: Bundle, *, settings: Settings | None = None, progress: Callable[[int, int, str], None] | None = None,
           cancel: Callable[[], bool] | None = None, index_factory=None, execute=None,
           on_finish: Callable[[EvalRun], None] | None = None) -> EvalRun:
    """Re-index the bundle's documents for each configuration and re-run its comparison."""
    from rag_core.documents import DocumentStore

    settings = settings or get_settings()
    documents = resolve_documents(bundle, DocumentStore(settings.data_dir))
    return run_evaluation(bundle.question_set, bundle.configs, bundle.run.strategies, settings=settings,
                          documents=documents, index_factory=index_factory, execute=execute, progress=progress,
                          cancel=cancel, on_finish=on_finish, label="replay of bundle")
