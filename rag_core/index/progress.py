"""Per-file progress of one ingest: which file is chunked or embedded now, and how far its own chunks are.

An ingest chunks its documents one by one, then embeds the chunks of all of them in one pass (batched across
files). The embedder reports texts done of the whole pass; ``FileProgress`` turns that count into each file's own
"chunks embedded of its chunks" by the range of texts each chunk needs, so a caller can show the file being
embedded with its own count, and a file as embedded the moment its last chunk is.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from rag_core.stores.contextual import VectorPlan
from rag_core.types import Chunk

FileEventState = Literal["chunking", "chunked", "embedding", "embedded", "unchanged", "failed"]


@dataclass(frozen=True, slots=True)
class FileEvent:
    """What happened to one document of an ingest: its new state; ``done``/``total`` are its own chunks."""

    doc_id: str
    state: FileEventState
    done: int = 0
    total: int = 0
    error: str = ""


FileEvents = Callable[[FileEvent], None]


def chunk_marks(plan: VectorPlan) -> list[int]:
    """Per chunk of ``plan``: how many of its texts (in embedding order) must be embedded before its vector is
    made: one past its last window, or for a section/document made from passages, the latest of theirs."""
    marks = [max((text + 1 for text, _ in parts), default=0) for parts in plan.parts]
    for i, members in plan.derived.items():
        marks[i] = max((marks[j] for j, _ in members), default=0)
    return marks


class FileProgress:
    """Each file's embedded chunks from the texts embedded of the whole pass (``update(done)``)."""

    def __init__(self, doc_ids: Sequence[str], chunks: Sequence[Chunk], marks: Sequence[int]):
        by_doc: dict[str, list[int]] = {doc_id: [] for doc_id in doc_ids}
        for chunk, mark in zip(chunks, marks, strict=True):
            by_doc.setdefault(chunk.doc_id, []).append(mark)
        self._files = [(doc_id, sorted(found)) for doc_id, found in by_doc.items()]
        self._next = 0  # the first file not embedded yet
        self._reported: tuple[str, int] | None = None

    @classmethod
    def from_plan(cls, doc_ids: Sequence[str], chunks: Sequence[Chunk], plan: VectorPlan) -> FileProgress:
        return cls(doc_ids, chunks, chunk_marks(plan))

    def update(self, texts_done: int) -> list[FileEvent]:
        """The events since the last update: files now embedded, then the one in progress with its own count (only
        when its count changed). Files after it have not started (their texts come later)."""
        events: list[FileEvent] = []
        while self._next < len(self._files):
            doc_id, marks = self._files[self._next]
            done = bisect_right(marks, texts_done)
            if done < len(marks):
                if self._reported != (doc_id, done):
                    self._reported = (doc_id, done)
                    events.append(FileEvent(doc_id, "embedding", done, len(marks)))
                break
            events.append(FileEvent(doc_id, "embedded", len(marks), len(marks)))
            self._next += 1
        return events
