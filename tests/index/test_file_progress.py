"""Per-file progress of an ingest: the embedder's count of texts done (the whole batch's) becomes each file's own
chunks embedded, by the texts each chunk needs; the index reports each file's states as they happen."""

from __future__ import annotations

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Index
from rag_core.index.progress import FileEvent, FileProgress, chunk_marks
from rag_core.loaders import load_bytes
from rag_core.stores.contextual import VectorPlan
from rag_core.types import Chunk


def _chunk(doc_id: str, n: int) -> Chunk:
    return Chunk(id=f"{doc_id}-{n}", doc_id=doc_id, granularity="paragraph", chunk_type="prose", text="t", start=0,
                 end=1, tokens=1)


def test_marks_are_one_past_a_chunks_last_text_and_a_derived_chunk_waits_for_its_passages():
    plan = VectorPlan(texts=["a", "b", "c"], parts=[[(0, 1.0)], [(1, 1.0), (2, 1.0)], []],
                      derived={2: [(0, 1), (1, 1)]})
    assert chunk_marks(plan) == [1, 3, 3]


def test_texts_done_of_the_batch_become_each_files_own_count():
    """Three files of 2, 4 and 1 chunks (texts 0-1, 2-5, 6): the count names the file and its own chunks."""
    chunks = [_chunk("a", i) for i in range(2)] + [_chunk("b", i) for i in range(4)] + [_chunk("c", 0)]
    progress = FileProgress(["a", "b", "c"], chunks, [1, 2, 3, 4, 5, 6, 7])
    assert progress.update(0) == [FileEvent("a", "embedding", 0, 2)]
    assert progress.update(1) == [FileEvent("a", "embedding", 1, 2)]
    assert progress.update(1) == []  # nothing new
    assert progress.update(5) == [FileEvent("a", "embedded", 2, 2), FileEvent("b", "embedding", 3, 4)]
    assert progress.update(7) == [FileEvent("b", "embedded", 4, 4), FileEvent("c", "embedded", 1, 1)]
    assert progress.update(7) == []


def test_a_file_without_chunks_and_one_whose_texts_came_earlier_are_embedded_in_turn():
    chunks = [_chunk("a", 0), _chunk("c", 0)]  # "b" made no chunks; "c" repeats a text of "a" (mark 1)
    progress = FileProgress(["a", "b", "c"], chunks, [1, 1])
    assert progress.update(0) == [FileEvent("a", "embedding", 0, 1)]
    assert progress.update(1) == [FileEvent("a", "embedded", 1, 1), FileEvent("b", "embedded", 0, 0),
                                  FileEvent("c", "embedded", 1, 1)]


def test_the_index_reports_each_files_states_in_order(data_dir):
    settings = Settings(data_dir=data_dir)
    index = Index.open("events", settings, get_embedder("hash", settings, None))
    one = load_bytes("one.md", b"# One\n\nFirst page.\n\n## Part\n\nMore of it.\n")
    two = load_bytes("two.md", b"# Two\n\nSecond page.\n")
    index.ingest([one])
    events: list[FileEvent] = []
    index.ingest([one, two], on_file=events.append, force=False)
    assert events[0] == FileEvent(one.id, "unchanged")
    states = [(e.doc_id, e.state) for e in events[1:]]
    assert states[:2] == [(two.id, "chunking"), (two.id, "chunked")]
    assert states[-1] == (two.id, "embedded")
    chunks = next(sum(row["chunks"].values()) for row in index.documents() if row["doc_id"] == two.id)
    assert events[1 + 1].total == chunks and events[-1].done == events[-1].total == chunks


def test_a_file_over_the_batchs_chunk_limit_is_not_reported_failed(data_dir):
    """It fits alone, so the job indexes it in a batch of its own: meanwhile it waits (chunked), never "failed"."""
    one = load_bytes("one.md", b"# One\n\nFirst page.\n")
    two = load_bytes("two.md", b"# Two\n\nSecond page.\n")
    probe = Index.open("probe", Settings(data_dir=data_dir), get_embedder("hash", Settings(data_dir=data_dir), None))
    per_file = len(probe._chunk(one))
    settings = Settings(data_dir=data_dir, max_chunks_per_ingest=per_file)
    index = Index.open("limit", settings, get_embedder("hash", settings, None))
    events: list[FileEvent] = []
    report = index.ingest([one, two], on_file=events.append)
    assert two.name in report.errors
    assert [e.state for e in events if e.doc_id == two.id] == ["chunking", "chunked"]
