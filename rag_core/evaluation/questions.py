"""Question sets: the built-in golden set, uploaded CSV/JSONL files and BEIR folders, plus relevance matching.

A question is judged either by the answer text it must find (so relevance does not depend on chunk boundaries),
by evidence places (each a document and verbatim spans from it, one of which must be found: the real-docs QA
format of ``../shared/datasets/fastapi_docs_qa``; a multi-part question has several places, all needed: the format
of ``../shared/datasets/pydantic_multihop_qa``), by the document and heading its answer lives under, or — for
BEIR — by the ids of relevant corpus documents. A question of type ``null`` is one the documents do not answer:
it has nothing to find, and a system passes it by saying it found nothing.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rag_core.config import PROJECT_ROOT, get_settings
from rag_core.errors import LoadError
from rag_core.loaders.detect import decode_text
from rag_core.types import HEADING_SEPARATOR, Chunk

GOLDEN_PATH = PROJECT_ROOT / "samples" / "golden.jsonl"
INTENTS = ("fact", "code", "procedure", "data", "multi")
NULL_TYPE = "null"  # the question type of a question the documents do not answer
MAX_EVIDENCE_PLACES = 20
MAX_SPANS = 20

# Column names accepted in uploads (first is canonical); everything else in a row is an error.
_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "qid", "query_id"),
    "question": ("question", "query", "text"),
    "intent": ("intent",),
    "answer_text": ("answer_text", "answer", "expected_answer", "expected"),
    "answer_texts": ("answer_texts", "answers"),
    "doc": ("doc", "document", "doc_name", "source"),
    "heading": ("heading", "section"),
    "evidence": ("evidence",),
    "type": ("type", "question_type"),
}
_FIELD_OF = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
_MARKUP = re.compile(r"[`*]")
_SPACES = re.compile(r"\s+")
_TYPE = re.compile(r"[a-z][a-z0-9_-]{0,39}")


@dataclass(slots=True)
class Question:
    """One evaluation question with what counts as finding its answer."""

    id: str
    question: str
    intent: str | None = None
    answer_texts: list[str] = field(default_factory=list)
    doc: str | None = None
    heading: str | None = None
    relevant_ids: dict[str, int] = field(default_factory=dict)
    # Evidence places: {"file": name or None, "heading_path": [...], "spans": [verbatim text, ...]}; a place is
    # found when one of its spans is in a chunk of that file (whitespace-normalised).
    evidence: list[dict[str, Any]] = field(default_factory=list)
    reference_answer: str = ""
    # Free-form question type (comparison, bridge, ...) for per-type results; "null": the documents do not answer it.
    type: str | None = None

    @property
    def unanswerable(self) -> bool:
        return self.type == NULL_TYPE

    def targets(self) -> list[str]:
        """Ids of what must be found: one per evidence place, else per answer text, else the section, else the
        relevant documents."""
        if self.evidence:
            return [f"place:{i}" for i in range(len(self.evidence))]
        if self.answer_texts:
            return [f"answer:{i}" for i in range(len(self.answer_texts))]
        if self.doc or self.heading:
            return ["section"]
        return list(self.relevant_ids)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Question:
        return cls(**data)


@dataclass(slots=True)
class QuestionSet:
    """A named list of questions; ``source`` says where it came from (golden, upload name, BEIR folder)."""

    name: str
    kind: str
    questions: list[Question]
    source: str = ""

    def intents(self) -> list[str]:
        return sorted({q.intent for q in self.questions if q.intent})

    def types(self) -> dict[str, int]:
        """Question count per type, in first-seen order (empty when no question has a type)."""
        counts: dict[str, int] = {}
        for q in self.questions:
            if q.type:
                counts[q.type] = counts.get(q.type, 0) + 1
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "source": self.source,
                "questions": [q.to_dict() for q in self.questions]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuestionSet:
        return cls(name=data["name"], kind=data["kind"], source=data.get("source", ""),
                   questions=[Question.from_dict(q) for q in data["questions"]])


def normalise(text: str) -> str:
    """Case-folded text with Markdown emphasis/code marks dropped and whitespace collapsed, for containment tests."""
    return _SPACES.sub(" ", _MARKUP.sub("", text)).strip().casefold()


def chunk_matches(question: Question, chunk: Chunk, source_name: str = "") -> list[str]:
    """The targets of ``question`` this chunk satisfies (see ``Question.targets``)."""
    if question.evidence:
        text = _SPACES.sub(" ", chunk.text)
        return [f"place:{i}" for i, place in enumerate(question.evidence)
                if (not place.get("file") or _same_file(place["file"], chunk, source_name))
                and any(_SPACES.sub(" ", span).strip() in text for span in place["spans"])]
    if question.doc and not _same_doc(question.doc, chunk, source_name):
        return []
    if question.answer_texts:
        text = normalise(chunk.text)
        return [f"answer:{i}" for i, answer in enumerate(question.answer_texts) if normalise(answer) in text]
    if question.doc or question.heading:
        path = normalise(HEADING_SEPARATOR.join(chunk.heading_path))
        if question.heading and normalise(question.heading) not in path:
            return []
        return ["section"]
    return [chunk.doc_id] if chunk.doc_id in question.relevant_ids else []


def answer_matches(question: Question, answer: str, cited: Iterable[tuple[Chunk, str]] = ()) -> list[str]:
    """The targets of ``question`` the *answer* quotes (what a person reads, not what its context holds): an
    evidence span or answer text found in the answer's own words (an evidence place of a named file also needs a
    cited chunk of that file), a section or document through a ``cited`` chunk (chunk, source name)."""
    cited = list(cited)
    if question.evidence:
        said = _SPACES.sub(" ", answer)
        return [f"place:{i}" for i, place in enumerate(question.evidence)
                if any(_SPACES.sub(" ", span).strip() in said for span in place["spans"])
                and (not place.get("file") or any(_same_file(place["file"], c, s) for c, s in cited))]
    if question.answer_texts:
        said = normalise(answer)
        return [f"answer:{i}" for i, text in enumerate(question.answer_texts) if normalise(text) in said]
    return list(dict.fromkeys(t for chunk, source in cited for t in chunk_matches(question, chunk, source)))


def _same_doc(doc: str, chunk: Chunk, source_name: str) -> bool:
    names = {chunk.doc_id, source_name, str(chunk.metadata.get("source_name", ""))}
    wanted = doc.casefold()
    return any(name and (name.casefold() == wanted or Path(name).name.casefold() == wanted) for name in names)


def _same_file(file: str, chunk: Chunk, source_name: str) -> bool:
    """``file`` names the chunk's document: equal, or one path ends with the other (``docs/en/docs/a/b.md`` and
    ``a/b.md``)."""
    wanted = file.replace("\\", "/").strip("/").casefold()
    for name in (source_name, str(chunk.metadata.get("source_name", "")), chunk.doc_id):
        name = name.replace("\\", "/").strip("/").casefold()
        if name and (name == wanted or wanted.endswith("/" + name) or name.endswith("/" + wanted)):
            return True
    return False


def ranked_targets(question: Question, hits: Iterable[tuple[Chunk, str]]) -> list[str]:
    """Turn ranked chunks into ranked target ids: each target counts at the first chunk that satisfies it.

    A chunk that satisfies nothing new becomes a unique non-relevant id, so standard ranking metrics over
    ``question.targets()`` measure how early the answers appear.
    """
    ranked: list[str] = []
    found: set[str] = set()
    for position, (chunk, source_name) in enumerate(hits):
        new = [t for t in chunk_matches(question, chunk, source_name) if t not in found]
        if new:
            found.add(new[0])
            ranked.append(new[0])
            # a chunk holding several answers credits the rest at the same depth, one rank later each
            for extra in new[1:]:
                found.add(extra)
                ranked.append(extra)
        else:
            ranked.append(f"miss:{position}")
    return ranked


# ---------------------------------------------------------------- loading


def load_golden(path: Path | None = None) -> QuestionSet:
    """The built-in golden question set of the sample documents (``samples/golden.jsonl``)."""
    path = Path(path or GOLDEN_PATH)
    if not path.exists():
        raise ValueError(f"the golden question set {path} is missing; it ships with the sample documents")
    questions = parse_jsonl(path.read_text(encoding="utf-8"), path.name)
    return QuestionSet(name="golden", kind="golden", questions=questions, source=str(path))


def parse_upload(name: str, data: bytes) -> QuestionSet:
    """Parse an uploaded CSV or JSONL question file (by extension, else by content)."""
    try:  # the documents' decoder: BOMs, UTF-16 without one, legacy code pages; binary data is refused
        text = decode_text(name, data, expected="CSV or JSONL").text
    except LoadError as e:
        raise ValueError(str(e)) from e
    if not text.strip():
        raise ValueError(f"{name}: the file is empty; expected CSV or JSONL with a 'question' field")
    suffix = Path(name).suffix.lower()
    is_jsonl = suffix in (".jsonl", ".json", ".ndjson") or (suffix != ".csv" and text.lstrip().startswith("{"))
    questions = parse_jsonl(text, name) if is_jsonl else parse_csv(text, name)
    return QuestionSet(name=Path(name).stem or "upload", kind="upload", questions=questions, source=name)


def json_object_line(line: str, where: str) -> dict[str, Any]:
    """One JSONL line as a JSON object, or a ValueError that says ``where`` and what is wrong."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"{where}: not valid JSON ({e.msg})") from e
    except RecursionError as e:
        raise ValueError(f"{where}: not valid JSON (nested too deeply)") from e
    if not isinstance(row, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def parse_jsonl(text: str, name: str = "questions.jsonl") -> list[Question]:
    """One JSON object per line; blank lines are skipped. Errors name the line and the field."""
    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        for line_no, line in enumerate(_lines(text), start=1):
            if line.strip():
                yield f"line {line_no}", json_object_line(line, f"{name} line {line_no}")

    return _build(_at_most(rows(), name), name)


_LINE = re.compile(r"([^\r\n]*)(\r\n|\r|\n)|([^\r\n]+)\Z")


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text``, one at a time (no copy of the whole text), each CRLF or CR ending read as ``\\n``
    (universal newlines, as a text file reads)."""
    for match in _LINE.finditer(text):
        yield match.group(1) + "\n" if match.group(2) else match.group(3)


def _at_most(rows: Iterable[tuple[str, dict[str, Any]]], name: str) -> list[tuple[str, dict[str, Any]]]:
    """The rows, read one at a time and refused at the first beyond ``RAG_MAX_QUESTIONS`` (the rest is not read)."""
    limit = get_settings().max_questions
    kept: list[tuple[str, dict[str, Any]]] = []
    for where, row in rows:
        if len(kept) >= limit:
            raise ValueError(f"{name}: more than {limit:,} questions (stopped reading at {where}); at most "
                             f"{limit:,} per set (RAG_MAX_QUESTIONS)")
        kept.append((where, row))
    return kept


def parse_csv(text: str, name: str = "questions.csv") -> list[Question]:
    """A header row then one question per row. ``answer_texts`` may hold a JSON list or ``|``-separated texts."""
    reader = csv.DictReader(_lines(text))  # CR-only lines (old Mac Excel) read as lines
    try:
        return _csv_rows(reader, name)
    except csv.Error as e:  # a field over the csv module's limit, a stray quote
        raise ValueError(f"{name} row {reader.line_num}: not readable as CSV ({e})") from e


def _csv_rows(reader: csv.DictReader, name: str) -> list[Question]:
    if not reader.fieldnames:
        raise ValueError(f"{name}: no header row; the first row must name the columns (question, answer_text, ...)")
    def rows() -> Iterator[tuple[str, dict[str, Any]]]:
        for row in reader:
            if None in row:
                raise ValueError(f"{name} row {reader.line_num}: more values than columns in the header")
            if any((v or "").strip() for v in row.values()):
                yield f"row {reader.line_num}", {k: v for k, v in row.items() if v is not None and v.strip() != ""}

    return _build(_at_most(rows(), name), name)


def _build(rows: Sequence[tuple[str, dict[str, Any]]], name: str) -> list[Question]:
    if not rows:
        raise ValueError(f"{name}: no questions found")
    limit = get_settings().max_questions
    if len(rows) > limit:
        raise ValueError(f"{name}: {len(rows):,} questions; at most {limit:,} per set (RAG_MAX_QUESTIONS)")
    questions: list[Question] = []
    seen: set[str] = set()
    for position, (where, row) in enumerate(rows, start=1):
        question = _question(row, f"{name} {where}", default_id=f"q{position}")
        if question.id in seen:
            raise ValueError(f"{name} {where}: duplicate id '{question.id}'")
        seen.add(question.id)
        questions.append(question)
    return questions


def _question(row: dict[str, Any], where: str, default_id: str) -> Question:
    values: dict[str, Any] = {}
    for key, value in row.items():
        field_name = _FIELD_OF.get(str(key).strip().casefold())
        if field_name is None:
            allowed = ", ".join(_ALIASES)
            raise ValueError(f"{where}: unknown field '{key}'; allowed fields: {allowed}")
        values[field_name] = value
    question = _text(values.get("question"), "question", where)
    if not question:
        raise ValueError(f"{where}: field 'question' is missing or empty")
    qtype = _text(values.get("type"), "type", where).lower() or None
    if qtype is not None and not _TYPE.fullmatch(qtype):
        raise ValueError(f"{where}: field 'type' must be one short word (e.g. comparison, bridge, aggregation, "
                         f"procedure, or {NULL_TYPE} for a question the documents do not answer)")
    unanswerable = qtype == NULL_TYPE
    evidence = _evidence(values.get("evidence"), where, unanswerable)
    answers = _answer_list(values.get("answer_texts"), where)
    single = _text(values.get("answer_text"), "answer_text", where)
    reference = ""
    if evidence or unanswerable:  # the gold is the evidence (or nothing); an answer given is the reference, not matched
        reference, single, answers = single or " ".join(answers), "", []
    if single:
        answers = [single, *[a for a in answers if a != single]]
    doc = _text(values.get("doc"), "doc", where) or None
    heading = _text(values.get("heading"), "heading", where) or None
    if unanswerable and (doc or heading):
        raise ValueError(f"{where}: a '{NULL_TYPE}' question (the documents do not answer it) takes no 'doc' or "
                         "'heading'")
    if not answers and not doc and not heading and not evidence and not unanswerable:
        raise ValueError(
            f"{where}: give 'answer_text' (or 'answer_texts'), 'evidence', and/or 'doc' and 'heading' to judge "
            f"'{question}' ('type': '{NULL_TYPE}' when the documents do not answer it)"
        )
    intent = _text(values.get("intent"), "intent", where).lower() or None
    if intent is not None and intent not in INTENTS:
        raise ValueError(f"{where}: field 'intent' is '{intent}'; allowed: {', '.join(INTENTS)}")
    qid = _text(values.get("id"), "id", where) or default_id
    return Question(id=qid, question=question, intent=intent, answer_texts=answers, doc=doc, heading=heading,
                    evidence=evidence, reference_answer=reference, type=qtype)


def _evidence(value: Any, where: str, unanswerable: bool = False) -> list[dict[str, Any]]:
    """Evidence places: a list (or JSON text of one) of {"file", "heading_path", "spans"}; empty for a question the
    documents do not answer."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"{where}: field 'evidence' is not a valid JSON list ({e.msg})") from e
    if unanswerable:
        if value != []:
            raise ValueError(f"{where}: a '{NULL_TYPE}' question (the documents do not answer it) must have empty "
                             "'evidence'")
        return []
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: field 'evidence' must be a list of places, each with 'spans' (a question the "
                         f"documents do not answer: 'type': '{NULL_TYPE}' and 'evidence': [])")
    if len(value) > MAX_EVIDENCE_PLACES:
        raise ValueError(f"{where}: {len(value)} evidence places; at most {MAX_EVIDENCE_PLACES}")
    places = []
    for number, place in enumerate(value, start=1):
        label = f"{where}: evidence place {number}"
        if not isinstance(place, dict):
            raise ValueError(f"{label} must be an object with 'spans' (and optionally 'file', 'heading_path')")
        unknown = sorted(set(place) - {"file", "heading_path", "spans"})
        if unknown:
            raise ValueError(f"{label}: unknown field(s) {unknown}; allowed: file, heading_path, spans")
        spans = place.get("spans")
        if not isinstance(spans, list) or not spans or not all(isinstance(x, str) and x.strip() for x in spans):
            raise ValueError(f"{label}: 'spans' must be a non-empty list of texts")
        if len(spans) > MAX_SPANS:
            raise ValueError(f"{label}: {len(spans)} spans; at most {MAX_SPANS}")
        file = place.get("file")
        if file is not None and not isinstance(file, str):
            raise ValueError(f"{label}: 'file' must be text")
        path = place.get("heading_path") or []
        if not isinstance(path, list) or not all(isinstance(x, str) for x in path) or len(path) > MAX_SPANS:
            raise ValueError(f"{label}: 'heading_path' must be a list of at most {MAX_SPANS} texts")
        places.append({"file": file or None, "heading_path": list(path), "spans": list(spans)})
    return places


def _text(value: Any, field_name: str, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{where}: field '{field_name}' must be text, got {type(value).__name__}")
    return str(value).strip()


def _answer_list(value: Any, where: str) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError as e:
                raise ValueError(f"{where}: field 'answer_texts' is not a valid JSON list ({e.msg})") from e
        else:
            value = stripped.split("|")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: field 'answer_texts' must be a list of texts")
    return [v.strip() for v in value if v.strip()]


# ---------------------------------------------------------------- BEIR folders


@dataclass(slots=True)
class BeirDataset:
    """A BEIR folder: corpus id → (title, text), query id → text, and query id → {doc id: grade}."""

    name: str
    corpus: dict[str, tuple[str, str]]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    path: str = ""

    def question_set(self) -> QuestionSet:
        """The judged queries as a question set (relevance by document id)."""
        questions = [
            Question(id=qid, question=self.queries[qid], relevant_ids=dict(rels))
            for qid, rels in self.qrels.items()
            if qid in self.queries
        ]
        return QuestionSet(name=self.name, kind="beir", questions=questions, source=self.path or self.name)


def load_beir(folder: Path | str, split: str = "test") -> BeirDataset:
    """Load ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``; only judged queries are kept."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValueError(f"BEIR folder {folder} does not exist or is not a folder")
    paths = {"corpus": folder / "corpus.jsonl", "queries": folder / "queries.jsonl",
             "qrels": folder / "qrels" / f"{split}.tsv"}
    missing = [str(p.relative_to(folder)) for p in paths.values() if not p.is_file()]
    if missing:
        raise ValueError(f"BEIR folder {folder} lacks {', '.join(missing)} (expected corpus.jsonl, queries.jsonl, "
                         f"qrels/{split}.tsv)")
    qrels = _read_qrels(paths["qrels"])
    queries = _judged_queries(paths["queries"], qrels)  # before the corpus: a refusal costs no corpus read
    corpus: dict[str, tuple[str, str]] = {}
    for where, row in _jsonl_rows(paths["corpus"]):
        doc_id = _required_id(row, where)
        corpus[doc_id] = (str(row.get("title") or ""), str(row.get("text") or ""))
    if not corpus:
        raise ValueError(f"{paths['corpus']}: the corpus is empty")
    unknown = sorted(qid for qid in qrels if qid not in queries)
    if len(unknown) == len(qrels):
        raise ValueError(f"{paths['qrels']}: none of the judged query ids appear in queries.jsonl")
    for qid in unknown:
        del qrels[qid]
    return BeirDataset(name=folder.name, corpus=corpus, queries=queries, qrels=qrels, path=str(folder.resolve()))


def _judged_queries(path: Path, qrels: dict[str, dict[str, int]]) -> dict[str, str]:
    """Query id → text of the judged queries, read until more than ``RAG_MAX_QUESTIONS`` are found (refused)."""
    limit = get_settings().max_questions
    queries: dict[str, str] = {}
    for where, row in _jsonl_rows(path):
        qid = _required_id(row, where)
        if qid in qrels:
            if qid not in queries and len(queries) >= limit:
                raise ValueError(f"{where}: more than {limit:,} judged queries (stopped reading there); at most "
                                 f"{limit:,} per evaluation (RAG_MAX_QUESTIONS)")
            queries[qid] = str(row.get("text") or "")
    return queries


def _jsonl_rows(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    with path.open("rb") as handle:  # bytes, decoded per line: a decode error then names its line
        for line_no, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"{path.name} line {line_no}: not UTF-8 text ({e.reason})") from e
            yield from _jsonl_row(path, line_no, line)


def _jsonl_row(path: Path, line_no: int, line: str) -> Iterable[tuple[str, dict[str, Any]]]:
    if line.strip():
        where = f"{path.name} line {line_no}"
        yield where, json_object_line(line, where)


def _required_id(row: dict[str, Any], where: str) -> str:
    value = row.get("_id")
    if value is None or str(value).strip() == "":
        raise ValueError(f"{where}: field '_id' is missing")
    return str(value)


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            parts = line.rstrip("\n").split("\t")
            if not line.strip() or (line_no == 1 and parts[0] == "query-id"):
                continue
            if len(parts) != 3:
                raise ValueError(f"{path.name} line {line_no}: expected 3 tab-separated columns "
                                 f"(query-id, corpus-id, score), got {len(parts)}")
            try:
                grade = int(parts[2])
            except ValueError as e:
                raise ValueError(f"{path.name} line {line_no}: score '{parts[2]}' is not an integer") from e
            qrels.setdefault(parts[0], {})[parts[1]] = grade
    if not qrels:
        raise ValueError(f"{path}: no relevance judgements")
    return qrels
