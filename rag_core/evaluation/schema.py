"""Strict shapes of evaluation data read back from disk or from a bundle, where it is untrusted.

A run (question set, per-question records) comes from ``ResultsStore`` files and from bundles made elsewhere; the
pages draw every field, so a wrong type must be refused here with a message naming the field, never break a page.
Texts are capped, counts are capped (``Settings.max_questions`` and ``max_eval_configs``), and every record must
belong to the run: one of its questions, configurations and strategies.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, ValidationInfo, model_validator

from rag_core.errors import field_problems
from rag_core.evaluation.questions import INTENTS, MAX_EVIDENCE_PLACES, MAX_SPANS, Question, QuestionSet
from rag_core.evaluation.runner import STRATEGIES, EvalRun
from rag_core.types import EvalStrategy

# Generous on purpose: a run this app stored must always load again; the bundle's 200 MB cap bounds the total.
MAX_TEXT = 100_000  # characters of a question, an answer, a note, an error
MAX_TRACE_ITEMS = 200_000  # entries of one record's trace, counted over all its nesting

ShortText = Annotated[str, StringConstraints(max_length=300)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
RunId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,159}$")]  # Rust regex: "$" is the end
Intent = Literal[INTENTS]  # type: ignore[valid-type]
QuestionType = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,39}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")


class PlaceModel(_Strict):
    file: Annotated[str, StringConstraints(max_length=2000)] | None = None
    heading_path: list[Text] = Field(default_factory=list, max_length=MAX_SPANS)
    spans: list[Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]] = Field(
        min_length=1, max_length=MAX_SPANS)


class QuestionModel(_Strict):
    id: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    question: Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]
    intent: Intent | None = None
    answer_texts: list[Text] = Field(default_factory=list, max_length=100)
    doc: Annotated[str, StringConstraints(max_length=2000)] | None = None
    heading: Annotated[str, StringConstraints(max_length=MAX_TEXT)] | None = None
    relevant_ids: dict[ShortText, int] = Field(default_factory=dict, max_length=10_000)
    evidence: list[PlaceModel] = Field(default_factory=list, max_length=MAX_EVIDENCE_PLACES)
    reference_answer: Text = ""
    type: QuestionType | None = None


class QuestionSetModel(_Strict):
    name: Annotated[str, StringConstraints(max_length=2000)]
    kind: Literal["golden", "upload", "beir", "drafted"] = "upload"  # drafted: a saved set drafted from documents
    source: Annotated[str, StringConstraints(max_length=2000)] = ""
    questions: list[QuestionModel] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> QuestionSetModel:
        ids = [q.id for q in self.questions]
        if len(set(ids)) != len(ids):
            raise ValueError("question ids must be unique")
        return self


class HitModel(_Strict):
    rank: int = Field(ge=1)
    chunk_id: ShortText
    doc: Annotated[str, StringConstraints(max_length=2000)]
    heading: Annotated[str, StringConstraints(max_length=MAX_TEXT)] = ""
    granularity: ShortText = ""
    tokens: int = Field(0, ge=0)
    found: bool = False
    text: Text = ""


def _count_items(value: Any) -> int:
    if isinstance(value, dict):
        return len(value) + sum(_count_items(v) for v in value.values())
    if isinstance(value, list):
        return len(value) + sum(_count_items(v) for v in value)
    return 0


class RecordModel(_Strict):
    question_id: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    question: Text
    intent: Intent | None = None
    type: QuestionType | None = None
    config: ShortText
    strategy: EvalStrategy
    latency_ms: float = Field(ge=0)
    metrics: dict[ShortText, Annotated[float, Field(ge=0, le=1)]] = Field(max_length=50)
    context_tokens: int = Field(ge=0)
    steps: int = Field(ge=0)
    route: ShortText = ""
    answer: Text = ""
    hits: list[HitModel] = Field(default_factory=list, max_length=10)
    error: Text | None = None
    trace: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _small_trace(self) -> RecordModel:
        if _count_items(self.trace) > MAX_TRACE_ITEMS:
            raise ValueError(f"the trace holds more than {MAX_TRACE_ITEMS} entries")
        return self


class RunModel(_Strict):
    id: RunId
    created: ShortText
    question_set: QuestionSetModel
    configs: list[dict[str, Any]] = Field(default_factory=list)
    strategies: list[EvalStrategy] = Field(min_length=1, max_length=len(STRATEGIES))
    records: list[RecordModel] = Field(default_factory=list)
    status: Literal["running", "complete", "cancelled", "failed"]
    elapsed_s: float = Field(0.0, ge=0)
    label: Annotated[str, StringConstraints(max_length=2000)] = ""
    note: Text = ""

    @model_validator(mode="after")
    def _records_belong_to_the_run(self, info: ValidationInfo) -> RunModel:
        if len(set(self.strategies)) != len(self.strategies):
            raise ValueError("strategies must not repeat")
        if not (info.context or {}).get("complete"):  # a stored run: types are enough for the pages
            return self
        names = [c.get("name") for c in self.configs]
        questions = {q.id for q in self.question_set.questions}
        for i, record in enumerate(self.records):
            if record.config not in names or record.strategy not in self.strategies:
                raise ValueError(f"records[{i}] is for configuration '{record.config}' with strategy "
                                 f"'{record.strategy}', which the run does not compare")
            if questions and record.question_id not in questions:
                raise ValueError(f"records[{i}] is for question '{record.question_id}', not in the question set")
        most = max(len(questions), 1) * len(self.configs) * len(self.strategies)
        if len(self.records) > most:
            raise ValueError(f"{len(self.records)} records; a run of this size has at most {most}")
        return self


def validation_text(error: ValidationError, limit: int = 5) -> str:
    """``field.path: problem`` for the first few errors, without echoing the (untrusted) input."""
    return field_problems(error, limit=limit)


def parse_run(data: Any, what: str = "evaluation run", complete: bool = False) -> EvalRun:
    """A stored or bundled run as an ``EvalRun`` once every field is checked; ``ValueError`` names the bad ones.

    ``complete`` (bundles) also requires every record to be for one of the run's questions, configurations and
    strategies, and at most one record per combination.
    """
    try:
        model = RunModel.model_validate(data, context={"complete": complete})
    except ValidationError as e:
        raise ValueError(f"{what} is malformed: {validation_text(e)}") from None
    return EvalRun.from_dict(model.model_dump())


def parse_question_set(data: Any, what: str = "question set") -> QuestionSet:
    try:
        model = QuestionSetModel.model_validate(data)
    except ValidationError as e:
        raise ValueError(f"{what} is malformed: {validation_text(e)}") from None
    return QuestionSet(name=model.name, kind=model.kind, source=model.source,
                       questions=[Question(**q.model_dump()) for q in model.questions])
