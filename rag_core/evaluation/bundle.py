"""Demo bundles: one JSON file with configurations, a question set, results, selected agent traces and documents.

Exported on one machine and imported on another, a bundle restores the configurations, the documents (included
in full, or named and found in the local document store) and the stored results; ``replay`` then re-indexes the
documents for each configuration and re-runs the same comparison, so both sets of numbers can be put side by side.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from rag_core.config import RAGConfig, Settings, get_settings
from rag_core.evaluation.questions import QuestionSet
from rag_core.evaluation.results import ResultsStore
from rag_core.evaluation.runner import EvalRun, check_counts, run_evaluation
from rag_core.evaluation.schema import MAX_TEXT, parse_question_set, parse_run, validation_text
from rag_core.loaders import document_id, safe_name
from rag_core.loaders.document_store import DocumentStore, parse_document
from rag_core.serving.configstore import ConfigStore, parse_config
from rag_core.types import Document, Progress

FORMAT = "agentic-rag-studio/bundle"
VERSION = 1
MAX_BUNDLE_BYTES = 200 * 1024 * 1024


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
    skipped: list[str] = field(default_factory=list)  # why a bundled document was left out (one line each)


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


class _Trace(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    question_id: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    question: Annotated[str, StringConstraints(max_length=MAX_TEXT)]
    config: Annotated[str, StringConstraints(max_length=300)] = ""
    answer: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""
    trace: dict[str, Any] = Field(default_factory=dict)


class _Payload(BaseModel):
    """The top level of a bundle; its parts are checked one by one below so each message names its part."""

    model_config = ConfigDict(strict=True, extra="ignore")

    format: Literal["agentic-rag-studio/bundle"]
    version: Literal[1]
    created: Annotated[str, StringConstraints(max_length=40)] = ""
    configs: list[Any] = Field(min_length=1)
    question_set: Any
    results: Any
    agent_traces: list[Any] = Field(default_factory=list)
    documents: list[Any] = Field(default_factory=list)
    document_names: list[Annotated[str, StringConstraints(min_length=1, max_length=300)]] = Field(
        default_factory=list)


def read_bundle(data: str | bytes, source: str = "bundle", settings: Settings | None = None) -> Bundle:
    """Parse and validate a bundle, which is untrusted: every problem is a ``ValueError`` naming the bad part.

    Types, lengths and counts are checked (``Settings.max_questions``, ``max_eval_configs``,
    ``max_bundle_documents``, ``max_upload_mb`` per document); documents get the upload's name cleaning and an id
    recomputed from their name and text, so a bundle cannot plant a document under another one's id.
    """
    settings = settings or get_settings()
    if isinstance(data, bytes):
        if len(data) > MAX_BUNDLE_BYTES:
            limit = MAX_BUNDLE_BYTES // 10**6
            raise ValueError(f"{source}: {len(data) / 1e6:.0f} MB is larger than the {limit} MB limit")
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{source}: not a bundle (not UTF-8 JSON)") from e
    if len(data) > MAX_BUNDLE_BYTES:
        raise ValueError(f"{source}: larger than the {MAX_BUNDLE_BYTES // 10**6} MB limit")
    try:
        payload = json.loads(data, parse_constant=_refuse_constant)
    except json.JSONDecodeError as e:
        raise ValueError(f"{source}: not a bundle (invalid JSON at line {e.lineno}: {e.msg})") from e
    except (RecursionError, ValueError) as e:
        raise ValueError(f"{source}: not a bundle ({e if isinstance(e, ValueError) else 'nested too deeply'})") from e
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{source}: not an Agentic RAG Studio bundle (missing format '{FORMAT}')")
    if payload.get("version") != VERSION:
        raise ValueError(f"{source}: bundle version {payload.get('version')!r} is not supported (expected {VERSION})")
    try:
        top = _Payload.model_validate(payload)
    except ValidationError as e:
        raise ValueError(f"{source}: {validation_text(e)}") from None
    check_counts(0, len(top.configs), settings, source)
    configs = [parse_config(c, source=f"{source} configs[{i}]") for i, c in enumerate(top.configs)]
    names = [c.name for c in configs]
    if len(set(names)) != len(names):
        raise ValueError(f"{source}: configuration names repeat ({', '.join(names)})")
    question_set = parse_question_set(top.question_set, f"{source} question_set")
    check_counts(len(question_set.questions), len(configs), settings, source)
    run = parse_run(top.results, f"{source} results", complete=True)
    run_names = [c.get("name") for c in run.configs]
    if sorted(map(str, run_names)) != sorted(names):
        raise ValueError(f"{source}: the results compare configurations {run_names}, the bundle carries {names}")
    for i, config in enumerate(run.configs):
        parse_config(config, source=f"{source} results.configs[{i}]")
    if len(run.question_set.get("questions", [])) > settings.max_questions:
        check_counts(len(run.question_set["questions"]), len(configs), settings, f"{source} results")
    if len(top.agent_traces) > max(len(question_set.questions), 1) * len(configs):
        raise ValueError(f"{source}: {len(top.agent_traces)} agent traces for {len(question_set.questions)} questions")
    try:
        traces = [_Trace.model_validate(t).model_dump() for t in top.agent_traces]
    except ValidationError as e:
        raise ValueError(f"{source} agent_traces: {validation_text(e)}") from None
    if len(top.documents) + len(top.document_names) > settings.max_bundle_documents:
        raise ValueError(f"{source}: {len(top.documents) + len(top.document_names):,} documents; at most "
                         f"{settings.max_bundle_documents:,} are allowed (RAG_MAX_BUNDLE_DOCUMENTS)")
    max_bytes = settings.max_upload_mb * 1024 * 1024
    documents = [_bundle_document(d, f"{source} documents[{i}]", max_bytes) for i, d in enumerate(top.documents)]
    documents, skipped = first_of_each_name(documents, source)
    included = {doc.name for doc in documents}
    names = [n for n in dict.fromkeys(safe_name(n) for n in top.document_names) if n not in included]
    return Bundle(configs=configs, question_set=question_set, run=run, agent_traces=traces, documents=documents,
                  document_names=names, created=top.created, skipped=skipped)


def first_of_each_name(documents: Sequence[Document], source: str = "bundle") -> tuple[list[Document], list[str]]:
    """The same-name rule of uploads, for a bundle: the first document of a name is kept; a later one with the same
    text is the same document and is dropped, one with other text is skipped and said so (an index holds one
    document per name, so keeping both left all but one "not indexed" for ever)."""
    kept: dict[str, Document] = {}
    skipped: list[str] = []
    for doc in documents:
        first = kept.get(doc.name)
        if first is None:
            kept[doc.name] = doc
        elif first.text != doc.text:
            skipped.append(f"{doc.name}: skipped, {source} already holds a document of that name with other text "
                           "(the first one is kept)")
    return list(kept.values()), skipped


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _bundle_document(data: Any, where: str, max_bytes: int) -> Document:
    """A bundled document as an upload would be stored: name cleaned, size checked, id from name and text."""
    doc = parse_document(data, where, check_id=False)
    raw = doc.text.encode("utf-8", "surrogatepass")
    if len(raw) > max_bytes:
        raise ValueError(f"{where}: the text is {len(raw) / 1024 / 1024:.1f} MB, over the "
                         f"{max_bytes // 1024 // 1024} MB limit per file (RAG_MAX_UPLOAD_MB)")
    if not doc.text.strip():
        raise ValueError(f"{where}: the document is empty")
    name = safe_name(doc.name)
    return replace(doc, id=document_id(name, raw), name=name, size=len(raw))


def import_bundle(bundle: Bundle, data_dir: Path | str | None = None, *, settings: Settings | None = None,
                  ) -> dict[str, Any]:
    """Save the bundle's configurations, documents and results locally, all or nothing; returns what was restored.

    With ``settings`` (instead of ``data_dir``), configurations and results go where the deployment keeps them:
    on the Chroma server when one is configured.

    Named (not included) documents must already be in the local document store; a missing one is an error
    naming it, before anything is written. A bundled document whose name and text are already stored is not
    stored twice; one whose name is stored with other text is skipped (uploads' same-name rule: the stored one is
    kept, nothing is replaced or duplicated silently), and ``documents_skipped`` (one line each, with the bundle's
    own same-name duplicates) is then in the summary. If any write fails, what this import wrote is removed again
    and the error raised.
    """
    if settings is not None:
        data_dir = Path(settings.data_dir)
        configs, results = ConfigStore.for_settings(settings), ResultsStore.for_settings(settings)
    else:
        data_dir = Path(data_dir or get_settings().data_dir)
        configs, results = ConfigStore(data_dir), ResultsStore(data_dir)
    doc_store = DocumentStore(data_dir)
    resolve_documents(bundle, doc_store)
    stored = {d.name: d.text for d in doc_store.list()}
    new_docs = [doc for doc in bundle.documents if doc.name not in stored]
    skipped = [*bundle.skipped, *(f"{doc.name}: skipped, a document of that name with other text is already stored "
                                  "here (kept; delete it on the Documents page first to take the bundle's)"
                                  for doc in bundle.documents if stored.get(doc.name, doc.text) != doc.text)]
    planned = [_import_config(configs, config) for config in bundle.configs]
    run = EvalRun.from_dict(bundle.run.to_dict())
    run.id = _free_run_id(results, run.id)  # importing on the machine that made it keeps the original
    if run.label != "sweep":  # the Sweep tab finds its runs by this label
        run.label = (run.label + " " if run.label else "") + "(imported)"
    run.note = (run.note + "; " if run.note else "") + "imported from a bundle"
    written_configs: list[str] = []
    written_docs: list[str] = []
    try:
        for config, existed in planned:
            if not existed:
                configs.save(config)
                written_configs.append(config.name)
        for doc, added in doc_store.add_many(new_docs):
            if added:
                written_docs.append(doc.id)
        results.save(run)
    except BaseException:
        for name in written_configs:
            configs.delete(name)
        for doc_id in written_docs:
            doc_store.delete(doc_id)
        raise
    summary = {"configs": [config.name for config, _ in planned], "documents_added": len(written_docs),
               "documents": len(bundle.documents) + len(bundle.document_names), "run_id": run.id,
               "questions": len(bundle.question_set.questions), "agent_traces": len(bundle.agent_traces)}
    if skipped:
        summary["documents_skipped"] = skipped
    return summary


def _import_config(configs: ConfigStore, config: RAGConfig) -> tuple[RAGConfig, bool]:
    """Where ``config`` goes: its own name, or ``NAME-imported`` (``-imported-2`` ...) when a different local
    configuration has that name; True when an equal one is already saved there. Names keep the 80-character rule."""
    for name in _import_names(config.name):
        renamed = config.renamed(name)
        if not configs.exists(name):
            return renamed, False
        if configs.load(name) == renamed:
            return renamed, True
    raise AssertionError("unreachable: _import_names never ends")


def _free_run_id(results: ResultsStore, run_id: str) -> str:
    return next(name for name in _import_names(run_id, 160) if not results.exists(name))


def _import_names(name: str, limit: int = 80) -> Iterator[str]:
    """``name``, then ``name-imported``, ``name-imported-2``, ...: where an import goes when ``name`` is taken
    (the base is shortened so each stays within ``limit`` characters)."""
    yield name
    for suffix in itertools.chain(["-imported"], (f"-imported-{n}" for n in itertools.count(2))):
        yield name[: limit - len(suffix)].rstrip(" .-_") + suffix


def resolve_documents(bundle: Bundle, doc_store) -> list[Document]:
    """The documents to index: those included, plus those named, found by name in ``doc_store``."""
    by_name = {doc.name: doc for doc in doc_store.list()}
    missing = [name for name in bundle.document_names if name not in by_name]
    if missing:
        raise ValueError(f"the bundle names documents that are not loaded here: {', '.join(missing)}; "
                         "upload them on the Documents page or export the bundle with documents included")
    return [*bundle.documents, *(by_name[name] for name in bundle.document_names)]


def replay(bundle: Bundle, *, settings: Settings | None = None, progress: Progress | None = None,
           cancel: Callable[[], bool] | None = None, index_factory=None, execute=None,
           on_finish: Callable[[EvalRun], None] | None = None, open_index=None, llm=None) -> EvalRun:
    """Re-index the bundle's documents for each configuration and re-run its comparison (``open_index`` and ``llm``
    as in ``run_evaluation``)."""
    settings = settings or get_settings()
    documents = resolve_documents(bundle, DocumentStore(settings.data_dir))
    return run_evaluation(bundle.question_set, bundle.configs, bundle.run.strategies, settings=settings,
                          documents=documents, index_factory=index_factory, execute=execute, progress=progress,
                          cancel=cancel, on_finish=on_finish, label="replay of bundle", open_index=open_index,
                          llm=llm)
