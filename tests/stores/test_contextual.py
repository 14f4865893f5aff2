import numpy as np

from rag_core.chunking import chunk_document
from rag_core.config import ChunkingConfig
from rag_core.stores.contextual import context_text, embed_chunks, embedding_text, plan_vectors, windows
from rag_core.stores.keyword import KeywordIndex
from rag_core.tokens import count_tokens
from rag_core.types import Document

TEXT = """# Deployment

## Workers

Set the worker count to the number of cores.

Each worker holds its own connection pool.

## Timeouts

A request that takes longer than the limit is cancelled.
"""


def doc(text: str = TEXT) -> Document:
    return Document(id="d1", name="guide/deploy.md", doc_type="markdown", size=len(text), created="", text=text)


class Recorder:
    """A fake embedder: one-hot vectors per distinct text, recording what it was asked to embed."""

    dim = 64

    def __init__(self):
        self.texts: list[str] = []

    def embed_documents(self, texts, progress=None):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            self.texts.append(text)
            out[row, len(self.texts) % self.dim] = 1.0
        return out


def test_context_text_names_the_document_and_the_heading_path():
    chunks = chunk_document(doc(), ChunkingConfig(), "paragraph")
    timeouts = next(c for c in chunks if "cancelled" in c.text)
    assert context_text(timeouts, "guide/deploy.md").startswith("guide/deploy.md › Deployment › Timeouts\n\n")
    assert context_text(timeouts).startswith("Deployment › Timeouts\n\n## Timeouts")


def test_keyword_search_finds_a_passage_by_its_document_name_and_parent_heading():
    chunks = {c.id: c for c in chunk_document(doc(), ChunkingConfig(), "paragraph")}
    index = KeywordIndex.build(chunks, {"d1": "guide/deploy.md"})
    (best, _), *_ = index.search("deployment cancelled", 3)
    assert "cancelled" in chunks[best].text
    assert index.search("deploy", 3)  # only in the document name


def test_sections_are_embedded_from_their_passages_not_again():
    chunks = chunk_document(doc(), ChunkingConfig())
    embedder = Recorder()
    vectors = embed_chunks(chunks, {"d1": "guide/deploy.md"}, embedder.embed_documents, embedder.dim)
    embedded_kinds = {c.granularity for c in chunks if any(c.text in t for t in embedder.texts)}
    assert embedded_kinds >= {"paragraph"}
    assert len(embedder.texts) == len([c for c in chunks if c.granularity in ("paragraph", "row")])
    by_id = {c.id: i for i, c in enumerate(chunks)}
    section = next(c for c in chunks if c.granularity == "section" and c.heading_path == ["Deployment"])
    passages = [c for c in chunks if c.granularity == "paragraph"]
    expected = np.average([vectors[by_id[p.id]] for p in passages], axis=0, weights=[p.tokens for p in passages])
    assert np.allclose(vectors[by_id[section.id]], expected / np.linalg.norm(expected), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_long_passage_is_embedded_as_windows_that_cover_all_of_it():
    text = "# Notes\n\n" + " ".join(f"Sentence {i} adds a distinct fact." for i in range(120))
    chunks = chunk_document(doc(text), ChunkingConfig(max_tokens=1024, overlap=32), "paragraph")
    (passage,) = chunks
    plan = plan_vectors(chunks, {"d1": "notes.md"})
    assert len(plan.parts[0]) > 3
    assert all(t.startswith("notes.md › Notes\n\n") and count_tokens(t) <= 192 for t in plan.texts)
    assert "Sentence 119" in plan.texts[-1]
    assert windows("short text") == [("short text", 2)]


def test_pre_chunked_text_is_embedded_as_it_is():
    chunks = chunk_document(doc(), ChunkingConfig())
    plan = plan_vectors(chunks, {"d1": "guide/deploy.md"}, contextual=False)
    assert plan.texts == list(dict.fromkeys(c.text for c in chunks)) and not plan.derived


def test_table_delimiter_rows_are_not_embedded_but_stay_in_the_chunk():
    table = ("| Constraint | Description |\n| :--------- | ----------: |\n"
             "| `pattern` | A regex the string must match |\n")
    fenced = "```markdown\n| a | b |\n| --- | --- |\n```\n"
    text = f"# Strings\n\nConstraints on strings:\n\n{table}\n{fenced}"
    chunks = chunk_document(doc(text), ChunkingConfig(), "all")
    plan = plan_vectors(chunks, {"d1": "types.md"})
    embedded = "\n".join(plan.texts)
    assert "| `pattern` | A regex the string must match |" in embedded  # the rows, their header and context
    assert "| Constraint | Description |" in embedded and "types.md › Strings" in embedded
    assert ":---------" not in embedded and "----------:" not in embedded
    assert "| a | b |\n| --- | --- |" in embedded  # fenced code is embedded as it is
    assert any(":---------" in c.text for c in chunks)  # what the context shows and evidence is judged on
    rows = [c for c in chunks if c.granularity == "row"]
    assert rows and all("---" not in plan.texts[t] for c in rows for t, _ in plan.parts[chunks.index(c)])


def test_code_is_embedded_as_it_is():
    code = "def f():\n    return 1\n# ----------\n# | --- | --- |\n"
    source = Document(id="d2", name="f.py", doc_type="code", size=len(code), created="", text=code)
    chunks = chunk_document(source, ChunkingConfig(), "paragraph")
    assert embedding_text(chunks[0]) == chunks[0].text
