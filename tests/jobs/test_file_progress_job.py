"""An ingest job's files change state as it happens (queued → chunking → chunked → embedding → embedded →
indexed), each with its own chunk count and its own seconds, not all at once at the batch's end (issue 35.6)."""

from __future__ import annotations

import time

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.serving.jobs import JobRunner


class WatchingEmbedder:
    """The hash embedder; each call notes the job's file states first and takes 20 ms a text (a slow model)."""

    def __init__(self, settings: Settings, runner: JobRunner):
        self.inner = get_embedder("hash", settings, None)
        self.dim, self.id = self.inner.dim, self.inner.id
        self.runner, self.job_id, self.seen = runner, "", []

    def embed_documents(self, texts, progress=None):
        if self.job_id:
            job = self.runner.get(self.job_id)
            self.seen.append([(f.state, f.embedded, f.chunks) for f in job.files])
        time.sleep(0.02 * len(texts))
        return self.inner.embed_documents(texts, progress)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def _doc(name: str, paragraphs: int):
    words = " ".join(f"word{n}" for n in range(150))
    body = "\n\n".join(f"## Part {i}\n\nPart {i} of {name}: {words}." for i in range(paragraphs))
    return load_bytes(name, f"# {name}\n\n{body}\n".encode())


def test_each_file_moves_on_its_own_with_its_own_chunks_and_seconds(data_dir, monkeypatch):
    monkeypatch.setattr("rag_core.index.writes.WRITE_BATCH", 2)  # the embedder is called every two texts
    settings = Settings(data_dir=data_dir)
    runner = JobRunner(data_dir)
    embedder = WatchingEmbedder(settings, runner)
    index = Index.open("per-file", settings, embedder)
    docs = [_doc("small.md", 1), _doc("big.md", 12), _doc("last.md", 2)]
    job = runner.submit_ingest(index, docs, title="three files")
    embedder.job_id = job.id
    final = runner.wait(job.id)
    assert final.state == "done"
    own = {row["doc_id"]: sum(row["chunks"].values()) for row in index.documents()}
    assert [f.chunks for f in final.files] == [own[d.id] for d in docs]
    # While big.md was embedded: small.md done before it, last.md chunked and waiting, big.md's own count.
    during = [seen for seen in embedder.seen if seen[1][0] == "embedding" and 0 < seen[1][1] < seen[1][2]]
    assert during, embedder.seen
    assert all(s[0][0] == "embedded" and s[2][0] == "chunked" for s in during)
    assert all(s[1][2] == own[docs[1].id] for s in during)  # the file's own chunks, not the batch's
    # Each file's seconds are its own: the big one embedded longest.
    seconds = [f.seconds for f in final.files]
    assert seconds[1] > seconds[0] and seconds[1] > seconds[2] and len(set(seconds)) == 3
    assert [f.state for f in final.files] == ["indexed"] * 3
    assert final.current_file() is None
