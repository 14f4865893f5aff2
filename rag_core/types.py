"""Core data types shared by every layer: documents, chunks, hits and traces.

Dataclasses (not pydantic) because a 1 MB corpus makes tens of thousands of chunks and
validation on every construction would dominate chunking time; pydantic is used where data
enters from outside (settings, configurations, agent tool arguments).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, get_args

# The vocabulary: every list of these names (configuration fields, tool arguments, command-line choices, page
# options) is read from these Literals with ``typing.get_args``.
Granularity = Literal["document", "section", "paragraph", "row"]
GRANULARITIES: tuple[str, ...] = get_args(Granularity)

ChunkType = Literal["prose", "code", "table", "list", "quote", "heading"]
CHUNK_TYPES: tuple[str, ...] = get_args(ChunkType)

# A document's format: the name of a row of ``rag_core/loaders/format_table.py``, the one list of formats (the
# document store checks stored documents against it), so a new format is not listed here too.
DocType = str

# The configuration's field; every list of strategies (command line, Chunk Explorer) reads the table in
# ``rag_core.chunking.strategies``, whose names a test holds equal to these.
ChunkingStrategy = Literal["structure", "fixed"]

EmbedderName = Literal["minilm", "hash", "openai"]
EMBEDDER_NAMES: tuple[str, ...] = get_args(EmbedderName)

# How one search ranks: ``auto`` lets the router pick one of the others per query.
RetrievalStrategy = Literal["auto", "vector", "keyword", "hybrid"]
RETRIEVAL_STRATEGIES: tuple[str, ...] = get_args(RetrievalStrategy)

PolicyName = Literal["offline", "llm", "llm-answer"]
POLICY_NAMES: tuple[str, ...] = get_args(PolicyName)

# What an evaluation compares: one search per strategy, or the agent.
EvalStrategy = Literal["vector", "keyword", "hybrid", "auto", "agent"]
EVAL_STRATEGIES: tuple[str, ...] = get_args(EvalStrategy)

HEADING_SEPARATOR = " › "


class Progress(Protocol):
    """Progress callback: ``done`` of ``total`` steps, with ``label`` saying what is being done when it helps.

    One signature for every long step (loading, embedding, indexing, evaluating, drafting), so one callback (a
    job's ``TaskHandle.progress``, a progress bar, a command-line printer) serves any of them.
    """

    def __call__(self, done: int, total: int, label: str = "") -> None: ...


@dataclass(slots=True)
class Document:
    """A loaded document: its normalised source text plus provenance.

    ``text`` is what chunk offsets index into. For Markdown, text and code it is the file's
    decoded content; for HTML, DOCX, CSV and PDF it is the Markdown the loader produced from
    the original (kept structure: headings, tables, lists, code), and ``metadata`` says so.
    """

    id: str
    name: str
    doc_type: DocType
    size: int
    created: str
    text: str
    language: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Document:
        return cls(**data)


@dataclass(slots=True)
class Chunk:
    """One retrievable unit at one granularity, with its provenance.

    ``verbatim`` is True exactly when ``document.text[start:end] == text``. Synthesised
    chunks (a table row with its header repeated, a re-fenced code piece) set it False and
    keep in ``start``/``end`` the span they come from.
    """

    id: str
    doc_id: str
    granularity: Granularity
    chunk_type: ChunkType
    text: str
    start: int
    end: int
    tokens: int
    heading_path: list[str] = field(default_factory=list)
    parent_id: str | None = None
    child_ids: list[str] = field(default_factory=list)
    language: str | None = None
    verbatim: bool = True
    oversized: bool = False
    continued: bool = False
    position: int = 0
    contains_types: list[ChunkType] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def heading(self) -> str:
        return HEADING_SEPARATOR.join(self.heading_path)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk:
        return cls(**data)


@dataclass(slots=True)
class Hit:
    """A retrieved chunk with its fused score and each retriever's rank and raw score.

    ``score`` is the strategy's own score; ``confidence`` is the calibrated [0, 1] value that
    is comparable across strategies (see ``rag_core.retrieval.confidence``).
    """

    chunk: Chunk
    score: float
    confidence: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    source_name: str = ""

    def to_dict(self, include_text: bool = True) -> dict[str, Any]:
        chunk = self.chunk.to_dict()
        if not include_text:
            chunk.pop("text", None)
        return {
            "chunk_id": self.chunk.id,
            "score": self.score,
            "confidence": self.confidence,
            "ranks": dict(self.ranks),
            "scores": dict(self.scores),
            "source_name": self.source_name,
            "chunk": chunk,
        }
