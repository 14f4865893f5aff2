"""What search sees of a chunk: its text with its context, and how its vector is made.

A passage rarely names what it is about ("Set it to 0 to disable."): the document it comes from and its heading
path do. Both retrievers therefore read a chunk as ``name › heading › sub-heading`` followed by its text
(``context_text``), while the chunk itself (what the context shows and the evidence is judged on) stays verbatim.

Vectors (``plan_vectors``): the embedder reads a bounded window (MiniLM: 256 word pieces, about 200 cl100k
tokens of prose), so a longer text is embedded as consecutive windows, each with the context line, and its
vector is the token-weighted mean of theirs: every part of the text counts, not only its beginning. A section
or document is the sum of its passages, so its vector is the token-weighted mean of the vectors of the passages
inside it: no token is embedded twice across granularities, and a long section is represented whole.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rag_core.tokens import decode, encode
from rag_core.types import Chunk, Progress

# cl100k tokens per embedding window, context line included: MiniLM truncates at 256 word pieces, and prose
# takes ~1.2 word pieces per cl100k token.
EMBED_WINDOW_TOKENS = 192
MIN_WINDOW_TOKENS = 64  # however long the context line, a window holds at least this much of the text
CONTEXT_SEPARATOR = " › "
# Names how vectors are made here; change it with the recipe, so that caches of indexes built by it are rebuilt.
RECIPE = (f"context-line, no table delimiter rows, windows of {EMBED_WINDOW_TOKENS}, "
          "sections and documents from passages")
# Granularities whose vector is derived from the passages they contain.
DERIVED = ("section", "document")

# A Markdown table's delimiter row (``| --- | :--: |``) tells the embedder nothing and costs it one word piece per
# "-" and "|": in the pydantic docs, padded delimiter rows filled table rows' 256-piece window before their cells.
# It is left out of what the embedder reads (outside fenced code; code is read as it is). Measured on the FastAPI
# and code QA sets: recall as before or higher, 4% fewer word pieces to embed on the pydantic docs. Removing link
# targets and inline-code backticks too saved 18% but lost 0.02-0.07 FastAPI recall (URLs name their topic).
# These two rules are part of RECIPE (every stored vector was made with them), so they stay as they are rather than
# markdown_blocks' line recognisers: a whole closed fence, and a delimiter row (or a rule line) at a line's start.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t]*\1[ \t]*$", re.M | re.S)
# The leading blanks are matched possessively (``*+``): backtracking through them, as the plain ``*`` did, took time
# quadratic in a line's indentation (a 2.5 MB list nested 1,600 levels: 38 s).
_TABLE_DELIMITER = re.compile(r"^[ \t]*+\|?[ \t]*+:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*\n?", re.M)


def context_line(chunk: Chunk, doc_name: str = "") -> str:
    """``doc name › heading › sub-heading`` of ``chunk`` (empty when it has neither)."""
    parts = [doc_name] if doc_name else []
    parts += [h for h in chunk.heading_path if h]
    return CONTEXT_SEPARATOR.join(parts)


def context_text(chunk: Chunk, doc_name: str = "") -> str:
    """The chunk as the retrievers read it: its context line, a blank line, its text."""
    line = context_line(chunk, doc_name)
    return f"{line}\n\n{chunk.text}" if line else chunk.text


def embedding_text(chunk: Chunk) -> str:
    """``chunk.text`` as the embedder reads it: without table delimiter rows outside fenced code; code as it is."""
    if chunk.chunk_type == "code" or "-" not in chunk.text:
        return chunk.text
    pieces, last = [], 0
    for fence in _FENCE.finditer(chunk.text):
        pieces += [_TABLE_DELIMITER.sub("", chunk.text[last : fence.start()]), fence.group(0)]
        last = fence.end()
    pieces.append(_TABLE_DELIMITER.sub("", chunk.text[last:]))
    return "".join(pieces)


def windows(text: str, size: int = EMBED_WINDOW_TOKENS) -> list[tuple[str, int]]:
    """``text`` cut into consecutive windows of at most ``size`` tokens: ``(window text, tokens)``."""
    ids = encode(text)
    if len(ids) <= size:
        return [(text, max(len(ids), 1))]
    return [(decode(ids[i : i + size]), len(ids[i : i + size])) for i in range(0, len(ids), size)]


@dataclass(slots=True)
class VectorPlan:
    """Texts to embed and, per chunk, how its vector is made from them (or from other chunks)."""

    texts: list[str] = field(default_factory=list)
    # per chunk: [(index into texts, weight)] for an embedded chunk, or [] for a derived one
    parts: list[list[tuple[int, float]]] = field(default_factory=list)
    # per derived chunk: [(index into the chunk list, weight)] of the passages it holds
    derived: dict[int, list[tuple[int, float]]] = field(default_factory=dict)


def plan_vectors(chunks: Sequence[Chunk], names: Mapping[str, str], contextual: bool = True,
                 window: int = EMBED_WINDOW_TOKENS) -> VectorPlan:
    """How to embed ``chunks``: passages and rows by their windows, sections and documents from their passages.

    ``contextual=False`` embeds each chunk's own text once (truncated by the embedder), the way a plain RAG
    pipeline does; it serves pre-chunked corpora and baselines.
    """
    plan = VectorPlan()
    seen: dict[str, int] = {}

    def text_index(text: str) -> int:
        if text not in seen:
            seen[text] = len(plan.texts)
            plan.texts.append(text)
        return seen[text]

    passages: dict[str, list[tuple[int, int, int]]] = {}  # doc id → sorted (start, end, chunk index)
    if contextual:
        for i, chunk in enumerate(chunks):
            if chunk.granularity == "paragraph":
                passages.setdefault(chunk.doc_id, []).append((chunk.start, chunk.end, i))
        for spans in passages.values():
            spans.sort()
    for i, chunk in enumerate(chunks):
        if not contextual:
            plan.parts.append([(text_index(chunk.text), 1.0)])
            continue
        if chunk.granularity in DERIVED:
            inside = _inside(passages.get(chunk.doc_id, []), chunk.start, chunk.end)
            if inside:
                plan.parts.append([])
                plan.derived[i] = [(j, float(max(chunks[j].tokens, 1))) for j in inside]
                continue
        line = context_line(chunk, names.get(chunk.doc_id, ""))
        prefix = f"{line}\n\n" if line else ""
        size = max(window - len(encode(prefix)), MIN_WINDOW_TOKENS)
        plan.parts.append([(text_index(prefix + part), float(tokens))
                           for part, tokens in windows(embedding_text(chunk), size)])
    return plan


def _inside(spans: list[tuple[int, int, int]], start: int, end: int) -> list[int]:
    """Indexes of the passages lying within ``[start, end)`` (``spans`` sorted by start)."""
    inside = []
    for s, e, i in spans[bisect_left(spans, (start, -1, -1)) :]:
        if s >= end:
            break
        if e <= end:
            inside.append(i)
    return inside


def assemble_vectors(plan: VectorPlan, embedded: np.ndarray, dim: int) -> np.ndarray:
    """Each chunk's unit vector from the embedded texts (weighted means, then normalised)."""
    vectors = np.zeros((len(plan.parts), dim), dtype=np.float32)
    for i, parts in enumerate(plan.parts):
        if parts:
            vectors[i] = _mean([embedded[t] for t, _ in parts], [w for _, w in parts])
    for i, members in plan.derived.items():
        vectors[i] = _mean([vectors[j] for j, _ in members], [w for _, w in members])
    return vectors


def _mean(rows: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    if len(rows) == 1:
        return np.asarray(rows[0], dtype=np.float32)
    mean = np.average(np.asarray(rows, dtype=np.float32), axis=0, weights=np.asarray(weights, dtype=np.float32))
    norm = float(np.linalg.norm(mean))
    return (mean / norm if norm > 0 else mean).astype(np.float32)


def embed_chunks(chunks: Sequence[Chunk], names: Mapping[str, str], embed: Callable[..., np.ndarray], dim: int,
                 progress: Progress | None = None, contextual: bool = True,
                 batch: int = 512, on_plan: Callable[[VectorPlan], None] | None = None) -> np.ndarray:
    """Vectors of ``chunks`` (see ``plan_vectors``); ``embed(texts, progress)`` is the embedder's documents call,
    made per ``batch`` texts so progress moves and memory stays bounded on large corpora. ``on_plan`` sees the
    plan before the first text is embedded (progress counts its texts; an ingest maps them to its files)."""
    plan = plan_vectors(chunks, names, contextual)
    if on_plan is not None:
        on_plan(plan)
    total = len(plan.texts)
    embedded = np.zeros((total, dim), dtype=np.float32)
    if progress is not None:
        progress(0, total)
    for start in range(0, total, batch):
        texts = plan.texts[start : start + batch]

        def batch_progress(done: int, _total: int, label: str = "", *, offset: int = start) -> None:
            if progress is not None:
                progress(min(total, offset + done), total)

        vectors = np.asarray(embed(texts, batch_progress), dtype=np.float32)
        if vectors.shape != (len(texts), dim):
            raise ValueError(f"the embedder returned shape {vectors.shape}, expected ({len(texts)}, {dim})")
        embedded[start : start + len(texts)] = vectors
        if progress is not None:
            progress(start + len(texts), total)
    return assemble_vectors(plan, embedded, dim)
