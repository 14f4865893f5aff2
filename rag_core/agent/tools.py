"""The agent's tools: pydantic argument models (their JSON schemas are the OpenAI tool definitions) and execution.

Every failure — an unknown tool, arguments that are not JSON or do not validate, a chunk id that does not
exist, a retrieval error — comes back as a ``ToolOutcome`` with ``ok=False`` and an ``error`` the agent can
read and act on; ``ToolBox.execute`` never raises for the agent's mistakes.
"""

from __future__ import annotations

import ast
import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rag_core.errors import EmbeddingError, RagError, field_problems
from rag_core.retrieval.rewrite import MAX_QUERY_CHARS, check_query
from rag_core.retrieval.terms import content_terms, term_coverage
from rag_core.types import Chunk, Granularity, Hit, RetrievalStrategy

if TYPE_CHECKING:
    from rag_core.index.protocol import SearchIndex
    from rag_core.retrieval.retriever import Retriever

FocusArea = Literal["general", "fact", "code", "procedure", "data"]
# Chunk types searched for each focus area (None: no chunk-type filter).
FOCUS_CHUNK_TYPES: dict[str, list[str] | None] = {
    "general": None,
    "fact": None,
    "code": ["code"],
    "procedure": ["list", "code"],
    "data": ["table"],
}


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchArgs(_Args):
    """Search the indexed documents; returns the best chunks with their ids, scores and text."""

    # The question's limit: a question the loop accepts is a query the search tool accepts.
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS,
                       description="What to look for, in the documents' words.")
    granularity: Granularity = Field(
        "section",
        description="section: a heading with its content (default, gives context); paragraph: one block for a "
        "precise answer; row: one table row; document: a whole file.",
    )
    focus_area: FocusArea = Field("general", description="Type of content wanted: code, procedure, data or general.")
    strategy: RetrievalStrategy = Field(
        "auto", description="auto: routed by the query; hybrid: meaning and keywords fused; vector or keyword alone.")
    max_results: int = Field(5, ge=1, le=20, description="How many chunks to return at most.")
    widen: bool = Field(
        True, description="true: when unsure the retriever widens k and relaxes granularity and content-type filters; "
        "false: one pass exactly as asked.")

    @field_validator("query")
    @classmethod
    def _has_words(cls, value: str) -> str:
        return check_query(value)


class ZoomInArgs(_Args):
    """Replace a broad section in the context by its paragraphs most relevant to the question."""

    section_id: str = Field(min_length=1, max_length=64, description="Chunk id of a section (from search results).")


class ZoomOutArgs(_Args):
    """Replace a chunk that lacks context by its parent section."""

    chunk_id: str = Field(min_length=1, max_length=64, description="Chunk id of a paragraph or row.")


class ListDocumentsArgs(_Args):
    """List the indexed documents with their ids."""


class ListSectionsArgs(_Args):
    """List a document's sections (ids and heading paths) in document order."""

    doc_id: str = Field(min_length=1, max_length=64)


class ReadSectionArgs(_Args):
    """Read one section of a document in full."""

    doc_id: str = Field(min_length=1, max_length=64)
    section_id: str = Field(min_length=1, max_length=64)


class DoneArgs(_Args):
    """Finish: give the final answer and the chunk ids that support it."""

    answer: str = Field(min_length=1, max_length=20_000, description="The final answer to the user's question.")
    citations: list[str] = Field(default_factory=list, description="Chunk ids whose text supports the answer.")


class Names(Protocol):
    """A person's names for what a step's arguments point at (a chunk: ``document › heading``; a document)."""

    def chunk(self, chunk_id: str) -> str: ...

    def doc(self, doc_id: str) -> str: ...


def shorten(text: Any, limit: int = 60) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


GRANULARITY_WORDS = {"section": "sections", "paragraph": "paragraphs", "row": "table rows",
                     "document": "whole documents"}


def _search_title(a: dict[str, Any], names: Names) -> str:
    scope = GRANULARITY_WORDS.get(a.get("granularity", "section"), "chunks")
    how = f" by {a['strategy']} search" if a.get("strategy") not in (None, "auto") else ""
    return f"Searched {scope} for “{shorten(a.get('query', ''))}”{how}"


def _done_title(a: dict[str, Any], names: Names) -> str:
    cited = len(a.get("citations") or [])
    return "Answered" + (f", citing {cited} passage(s)" if cited else "")


# How the offline policy folds a tool's result into its relevance ranking: "rank", by the results' ranks;
# "replaced", the new chunks inherit the best relevance of those they replace; "child", the parent brought in
# inherits its child's; "", not at all.
Relevance = Literal["rank", "replaced", "child", ""]


@dataclass(frozen=True)
class ToolSpec:
    """One agent tool, everything about it in one row: its arguments (their model gives the name, description and
    JSON schema that LLMs and MCP clients see), the sentence the tool-calling prompt says of it, its step's title
    for people, whether it is a retrieval (it counts toward the step's retrieval record) and how the offline policy
    ranks what it returns, and its name as an MCP tool. A new tool is its row here plus its ``ToolBox._<name>``
    method: the prompt, the schemas, the step titles, the offline ranking and the MCP server read the row."""

    name: str
    args: type[_Args]
    prompt: str
    title: Callable[[dict[str, Any], Names], str]
    retrieval: bool = False
    relevance: Relevance = ""
    mcp: str | None = ""  # its name as an MCP tool: "" the same name, None not served (the agent's own ending)

    @property
    def mcp_name(self) -> str | None:
        return self.name if self.mcp == "" else self.mcp


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("search", SearchArgs,
             'search(query, granularity, focus_area, max_results) finds chunks; granularity "section" (default) '
             'gives context, "paragraph" a precise block, "row" one table row.',
             _search_title, retrieval=True, relevance="rank", mcp="search_documents"),
    ToolSpec("zoom_in", ZoomInArgs, "zoom_in(section_id) narrows a broad section to its relevant paragraphs.",
             lambda a, n: f"Zoomed into {shorten(n.chunk(a.get('section_id', '')))}",
             retrieval=True, relevance="replaced"),
    ToolSpec("zoom_out", ZoomOutArgs, "zoom_out(chunk_id) widens a paragraph to its section.",
             lambda a, n: f"Zoomed out to the section around {shorten(n.chunk(a.get('chunk_id', '')))}",
             retrieval=True, relevance="child"),
    ToolSpec("list_documents", ListDocumentsArgs, "list_documents() lists the documents with their ids.",
             lambda a, n: "Listed the documents"),
    ToolSpec("list_sections", ListSectionsArgs, "list_sections(doc_id) lists a document's sections.",
             lambda a, n: f"Listed the sections of {shorten(n.doc(a.get('doc_id', '')))}"),
    ToolSpec("read_section", ReadSectionArgs, "read_section(doc_id, section_id) reads one section in full.",
             lambda a, n: f"Read the section {shorten(n.chunk(a.get('section_id', '')))}", retrieval=True),
    ToolSpec("done", DoneArgs, "done(answer, citations) ends the task.", _done_title, mcp=None),
)
TOOL_SPECS: dict[str, ToolSpec] = {tool.name: tool for tool in TOOLS}
TOOL_ARGS: dict[str, type[_Args]] = {tool.name: tool.args for tool in TOOLS}
TOOL_NAMES: tuple[str, ...] = tuple(TOOL_ARGS)
RETRIEVAL_TOOLS = frozenset(tool.name for tool in TOOLS if tool.retrieval)


def tools_prompt() -> str:
    """The tool-calling prompt's paragraph on the tools: each row's own sentence, in the rows' order."""
    return "Tools: " + " ".join(tool.prompt for tool in TOOLS)


def tool_definitions() -> list[dict[str, Any]]:
    """The OpenAI ``tools`` list: one function per tool, its parameters the argument model's JSON schema."""
    definitions = []
    for name, model in TOOL_ARGS.items():
        schema = model.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        definitions.append(
            {"type": "function", "function": {"name": name, "description": model.__doc__ or name, "parameters": schema}}
        )
    return definitions


class ToolArgumentError(ValueError):
    """Tool arguments that could not be parsed or validated; the message is shown to the agent."""


# The opening of a Markdown code fence, with its language. The fence is found by its ends, not by a pattern that
# spans the arguments: those are untrusted, and such a pattern backtracks in polynomial time on a fence and spaces.
# Not markdown_blocks.FENCE_LINE: a model wraps JSON in a fence anywhere on a line, even on the same line as it.
_FENCE_OPENING = re.compile(r"```[\w-]*")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def parse_arguments(raw: str | dict[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    """Parse tool-call arguments, repairing common model slips; returns (arguments, repairs made).

    Repairs (hand-written because they are small and specific to how models garble JSON): strip a Markdown code
    fence around the JSON, remove trailing commas, read a Python-style dict with ``ast.literal_eval`` (safe: it
    evaluates literals only), treat an empty string as no arguments. Anything else raises ``ToolArgumentError``.
    """
    if raw is None or isinstance(raw, dict):
        return dict(raw or {}), []
    repairs: list[str] = []
    text = raw.strip()
    if not text:
        return {}, ["empty arguments read as {}"]
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON; also a number of over 4,300 digits, or nesting too deep
        if len(text) >= 6 and text.startswith("```") and text.endswith("```"):
            text = text[_FENCE_OPENING.match(text).end() : -3].strip()
            repairs.append("stripped a code fence")
        without_commas = _TRAILING_COMMA.sub(r"\1", text)
        if without_commas != text:
            text = without_commas
            repairs.append("removed trailing commas")
        try:
            value = json.loads(text)
        except (ValueError, RecursionError) as e:
            value = _python_literal(text)
            if value is None:
                problem = (f"{e.msg} at position {e.pos}" if isinstance(e, json.JSONDecodeError) else
                           "nested too deeply" if isinstance(e, RecursionError) else "a number with too many digits")
                raise ToolArgumentError(
                    f"arguments are not valid JSON ({problem}); send a JSON object such as "
                    '{"query": "..."}'
                ) from e
            repairs.append("read a Python-style object (single quotes, True/None)")
    if not isinstance(value, dict):
        raise ToolArgumentError(f"arguments must be a JSON object, got {type(value).__name__}")
    return value, repairs


def _python_literal(text: str) -> dict[str, Any] | None:
    """``{'query': 'x', 'exact': True}`` as a dict; None when ``text`` is not a Python dict literal."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def validate_arguments(name: str, raw: str | dict[str, Any] | None) -> tuple[_Args, list[str]]:
    """The validated argument model of tool ``name``; raises ``ToolArgumentError`` naming what is wrong."""
    if name not in TOOL_ARGS:
        raise ToolArgumentError(f"unknown tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}")
    values, repairs = parse_arguments(raw)
    try:
        return TOOL_ARGS[name].model_validate(values), repairs
    except ValidationError as e:
        raise ToolArgumentError(f"invalid arguments for {name}: {field_problems(e, unnamed='arguments')}") from e


def untrusted_text(text: str, attrs: str) -> str:
    """``text`` wrapped as untrusted content for the model; ``attrs`` are the tag's attributes, already escaped."""
    # A document could contain the closing tag itself to "escape" the wrapper; neutralise it.
    body = re.sub(r"<\s*/?\s*untrusted_document", lambda m: html.escape(m.group(0)), text, flags=re.IGNORECASE)
    return f"<untrusted_document {attrs}>\n{body}\n</untrusted_document>"


def untrusted(chunk: Chunk, source: str, score: float | None = None) -> str:
    """A chunk wrapped as untrusted document content for the model (instructions inside must not be obeyed)."""
    attrs = (f'id="{html.escape(chunk.id)}" source="{html.escape(source)}" granularity="{chunk.granularity}" '
             f'tokens="{chunk.tokens}"')
    if score is not None:
        attrs += f' confidence="{score:.2f}"'
    return untrusted_text(chunk.text, attrs)


@dataclass(slots=True)
class ToolOutcome:
    """What a tool call produced: new context candidates, the retrieval trace if any, and the agent's view."""

    tool: str
    args: dict[str, Any]
    ok: bool
    error: str | None = None
    observation: str = ""
    hits: list[Hit] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    replaces: list[str] = field(default_factory=list)
    retrieval: Any = None
    repairs: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def failure(cls, tool: str, args: dict[str, Any], error: str, repairs: list[str] | None = None) -> ToolOutcome:
        return cls(tool=tool, args=args, ok=False, error=error, observation=f"TOOL ERROR: {error}",
                   repairs=repairs or [])


class ToolBox:
    """Runs tools against an ``Index`` and a ``Retriever``; navigation tools use the index's helpers."""

    def __init__(self, index: SearchIndex, retriever: Retriever, *, zoom_keep: int = 2,
                 config_defaults: bool = False) -> None:
        self.index = index
        self.retriever = retriever
        self.zoom_keep = zoom_keep
        # True (the MCP server): a search argument left out keeps the retriever's configured value, so a query
        # alone searches exactly as the Retrieval Lab does; False (the agent): the argument model's defaults.
        self.config_defaults = config_defaults
        self._names: dict[str, str] | None = None

    def source_name(self, doc_id: str) -> str:
        if self._names is None:
            names: dict[str, str] = {}
            try:
                for doc in self.index.documents():
                    doc_key = doc.get("doc_id") or doc.get("id")
                    if doc_key:
                        names[doc_key] = doc.get("name") or doc.get("source_name") or doc_key
            except RagError:
                pass
            self._names = names
        return self._names.get(doc_id, doc_id)

    def label(self, chunk: Chunk) -> str:
        name = self.source_name(chunk.doc_id)
        return f"{name} › {chunk.heading}" if chunk.heading_path else name

    def execute(
        self,
        name: str,
        raw_args: str | dict[str, Any] | None,
        *,
        exclude_ids: tuple[str, ...] | list[str] = (),
        previous_queries: tuple[str, ...] | list[str] = (),
        focus_query: str = "",
    ) -> ToolOutcome:
        """Run tool ``name``; any problem is returned as a failed outcome, never raised."""
        try:
            args, repairs = validate_arguments(name, raw_args)
        except ToolArgumentError as e:
            shown = raw_args if isinstance(raw_args, dict) else {"_raw": raw_args}
            return ToolOutcome.failure(name, shown, str(e))
        values = args.model_dump()
        try:
            outcome = getattr(self, f"_{name}")(args, exclude_ids, previous_queries, focus_query)
        except (RagError, ValueError, KeyError, LookupError) as e:
            return ToolOutcome.failure(name, values, f"{name} failed: {e}", repairs)
        outcome.args = values
        outcome.repairs = repairs
        return outcome

    def _search(self, args: SearchArgs, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        base = self.retriever.config
        given = args.model_fields_set if self.config_defaults else set(SearchArgs.model_fields)
        # Every value comes from the validated SearchArgs and stays within the base's bounds (k up to its max_k), so
        # the typed copy needs no second validation per search.
        changes: dict[str, Any] = {}
        if "granularity" in given:
            changes["granularity"] = args.granularity
        if "max_results" in given:
            changes["initial_k"] = min(args.max_results, base.max_k)
        if args.strategy != "auto" and "strategy" in given:
            changes["strategy"] = args.strategy
        if not args.widen and "widen" in given:
            changes["max_iterations"] = 1
        chunk_types = FOCUS_CHUNK_TYPES[args.focus_area]
        if "focus_area" in given and chunk_types is not None:
            changes["chunk_types"] = list(chunk_types)
        elif "focus_area" in given:
            # The focus area is the agent's explicit choice of content type: "general" and "fact" mean no
            # chunk-type filter, so the retriever must not add its own intent filter either.
            changes["use_intent_filter"] = False
        result = self.retriever.retrieve(args.query, exclude_ids=tuple(exclude_ids),
                                         previous_queries=tuple(previous_queries),
                                         config=base.model_copy(update=changes))
        hits = list(result.hits)[: args.max_results] if "max_results" in given else list(result.hits)
        if not hits:
            observation = (f"No chunks found for {args.query!r} at {args.granularity} granularity "
                           f"(confidence {result.confidence:.2f}). Try other words or another granularity.")
        else:
            parts = [f"{len(hits)} result(s) for {args.query!r} (route {result.route}, confidence "
                     f"{result.confidence:.2f}):"]
            parts += [untrusted(h.chunk, self.label(h.chunk), h.confidence) for h in hits]
            observation = "\n".join(parts)
        return ToolOutcome(tool="search", args={}, ok=True, observation=observation, hits=hits,
                           chunks=[h.chunk for h in hits], retrieval=result)

    def _zoom_in(self, args: ZoomInArgs, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        section = self.index.get(args.section_id)
        if section is None:
            raise LookupError(f"no chunk with id {args.section_id!r}; use an id from the search results")
        children = [c for c in self.index.zoom_in(args.section_id) if c.text.strip()]
        if not children:
            raise LookupError(f"chunk {args.section_id!r} ({section.granularity}) has no smaller chunks inside it")
        kept = self._most_relevant(children, focus_query) if focus_query else children
        # Zooming in never loses what the agent had already retrieved on its own: a child holding a chunk a
        # search found is kept too, and a found chunk inside the section that no kept child holds stays as is.
        span = section.end - section.start
        found = [c for c in self.index.get_many(list(dict.fromkeys(exclude_ids)))
                 if c.doc_id == section.doc_id and section.start <= c.start and c.end <= section.end
                 and c.end - c.start < span]
        kept = [c for c in children if c in kept or any(c.start <= f.start and f.end <= c.end for f in found)]
        kept += [f for f in found if not any(c.start <= f.start and f.end <= c.end for c in kept)]
        kept.sort(key=lambda c: (c.start, -c.end))
        observation = "\n".join(
            [f"Zoomed into section {section.id}: {len(kept)} of {len(children)} smaller chunks kept."]
            + [untrusted(c, self.label(c)) for c in kept]
        )
        return ToolOutcome(tool="zoom_in", args={}, ok=True, observation=observation, chunks=kept,
                           replaces=[section.id], info={"children": len(children), "kept": [c.id for c in kept],
                                                        "granularity": kept[0].granularity})

    def _zoom_out(self, args: ZoomOutArgs, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        chunk = self.index.get(args.chunk_id)
        if chunk is None:
            raise LookupError(f"no chunk with id {args.chunk_id!r}; use an id from the search results")
        parent = self.index.zoom_out(args.chunk_id)
        if parent is None:
            raise LookupError(f"chunk {args.chunk_id!r} is already at the top ({chunk.granularity})")
        observation = f"Zoomed out to {parent.id} ({parent.granularity}).\n{untrusted(parent, self.label(parent))}"
        return ToolOutcome(tool="zoom_out", args={}, ok=True, observation=observation, chunks=[parent],
                           info={"granularity": parent.granularity})

    def _list_documents(self, args, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        docs = self.index.documents()
        lines = []
        for doc in docs:  # names come from uploads: inside the untrusted wrapper, escaped
            doc_key = doc.get("doc_id") or doc.get("id")
            lines.append(f"- {doc_key}: {html.escape(str(doc.get('name', doc_key)))}")
        observation = f"{len(docs)} document(s):\n" + untrusted_text("\n".join(lines), 'source="document names"')
        return ToolOutcome(tool="list_documents", args={}, ok=True, observation=observation,
                           info={"documents": len(docs)})

    def _list_sections(self, args: ListSectionsArgs, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        sections = self.index.list_sections(args.doc_id)
        if not sections:
            raise LookupError(f"document {args.doc_id!r} has no sections; use an id from list_documents")
        lines = [f"- {s.id}: {html.escape(s.heading or '(untitled)')} ({s.tokens} tokens)" for s in sections]
        attrs = f'source="{html.escape(self.source_name(args.doc_id))}"'
        observation = f"{len(sections)} section(s) of document {args.doc_id}:\n" + untrusted_text("\n".join(lines),
                                                                                                  attrs)
        return ToolOutcome(tool="list_sections", args={}, ok=True, observation=observation,
                           info={"sections": len(sections)})

    def _read_section(self, args: ReadSectionArgs, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        section = self.index.read_section(args.doc_id, args.section_id)
        if section is None:
            raise LookupError(f"no section {args.section_id!r} in document {args.doc_id!r}")
        observation = f"Section {section.id}:\n{untrusted(section, self.label(section))}"
        return ToolOutcome(tool="read_section", args={}, ok=True, observation=observation, chunks=[section],
                           info={"granularity": section.granularity})

    def _done(self, args: DoneArgs, exclude_ids, previous_queries, focus_query) -> ToolOutcome:
        return ToolOutcome(tool="done", args={}, ok=True, observation="Answer recorded.")

    def _most_relevant(self, chunks: list[Chunk], query: str) -> list[Chunk]:
        """The ``zoom_keep`` chunks closest to ``query`` (embedding cosine plus query-term coverage), in order."""
        if len(chunks) <= self.zoom_keep:
            return chunks
        terms = content_terms(query)
        try:
            vectors = self.index.embed_texts([query] + [c.text for c in chunks])
            cosines = vectors[1:] @ vectors[0]
        except EmbeddingError:  # the embedding endpoint is down: query-term coverage alone
            cosines = np.zeros(len(chunks), dtype=np.float32)
        pairs = zip(chunks, cosines, strict=True)
        scored = [(float(cos) + term_coverage(terms, c.text), i) for i, (c, cos) in enumerate(pairs)]
        best = sorted(i for _, i in sorted(scored, reverse=True)[: self.zoom_keep])
        return [chunks[i] for i in best]
