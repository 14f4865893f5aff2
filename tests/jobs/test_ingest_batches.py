"""An ingest job commits its documents in batches (each commit rebuilds the keyword index of the whole collection,
so one commit per file made a folder of n files cost n²), and still says what happened to each file."""

from __future__ import annotations

import pytest

from rag_core.chunking import chunk_document
from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.serving.ingest_job import ingest_batches
from rag_core.serving.jobs import JobRunner
from rag_core.types import Document


def _doc(name: str, words: str) -> Document:
    return load_bytes(name, f"# {name}\n\n{words}\n\n## More\n\n{words} again.\n".encode())


@pytest.fixture
def commits(monkeypatch) -> list[list[str]]:
    """The names of the documents of each ``Index.ingest`` call (one call, one commit)."""
    calls: list[list[str]] = []
    original = Index.ingest

    def counted(self, docs, progress=None, **kw):
        calls.append([d.name for d in docs])
        return original(self, docs, progress, **kw)

    monkeypatch.setattr(Index, "ingest", counted)
    return calls


def _index(data_dir, **settings) -> Index:
    settings = Settings(data_dir=data_dir, **settings)
    return Index.open("batches", settings, get_embedder("hash", settings, None))


def test_a_folder_is_indexed_in_one_commit_with_each_file_counted(data_dir, commits):
    index = _index(data_dir)
    docs = [_doc(f"guide/page{i}.md", f"topic{i} words") for i in range(12)]
    runner = JobRunner(data_dir)
    job = runner.wait(runner.submit_ingest(index, docs, title="a folder").id)
    assert commits == [[d.name for d in docs]]
    assert job.state == "done" and job.message.startswith("12 indexed")
    chunks = {row["doc_id"]: sum(row["chunks"].values()) for row in index.documents()}
    assert [(f.state, f.chunks) for f in job.files] == [("indexed", chunks[d.id]) for d in docs]
    assert all(f.chunks > 0 for f in job.files)


def test_batches_are_cut_by_count_by_size_and_at_a_repeated_name():
    docs = [_doc(f"d{i}.md", "x") for i in range(5)]
    assert [[d.name for d in b] for b in ingest_batches(docs, max_files=2)] == [["d0.md", "d1.md"], ["d2.md", "d3.md"],
                                                                                ["d4.md"]]
    size = docs[0].size
    assert [len(b) for b in ingest_batches(docs, max_bytes=2 * size)] == [2, 2, 1]
    assert [len(b) for b in ingest_batches(docs, max_bytes=1)] == [1] * 5  # a document bigger than a batch: alone
    again = [_doc("a.md", "old"), _doc("b.md", "b"), _doc("a.md", "new")]
    assert [[d.text.split()[-2] for d in b] for b in ingest_batches(again)] == [["old", "b"], ["new"]]


def test_a_later_version_in_the_same_job_still_replaces_the_earlier_one(data_dir, commits):
    index = _index(data_dir)
    runner = JobRunner(data_dir)
    old, other, new = _doc("a.md", "old words"), _doc("b.md", "b"), _doc("a.md", "new words")
    job = runner.wait(runner.submit_ingest(index, [old, other, new], title="t").id)
    assert commits == [["a.md", "b.md"], ["a.md"]]
    assert job.state == "done"
    assert sorted(row["doc_id"] for row in index.documents()) == sorted([other.id, new.id])


def test_files_a_batch_could_not_take_are_indexed_alone(data_dir, commits):
    """Over the chunks of one ingest only together: each file fits alone, so each is indexed, none fails."""
    one, two = _doc("one.md", "alpha"), _doc("two.md", "beta")
    per_file = len(chunk_document(one, _index(data_dir).chunking, "all"))
    assert per_file == len(chunk_document(two, _index(data_dir).chunking, "all"))
    index = _index(data_dir, max_chunks_per_ingest=per_file)
    runner = JobRunner(data_dir)
    job = runner.wait(runner.submit_ingest(index, [one, two], title="t").id)
    assert commits == [["one.md", "two.md"], ["two.md"]]
    assert [(f.name, f.state, f.error) for f in job.files] == [("one.md", "indexed", ""), ("two.md", "indexed", "")]
    assert {row["name"] for row in index.documents()} == {"one.md", "two.md"}
