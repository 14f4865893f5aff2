"""Limits on the work one input can cause (Settings ``max_*``): over a limit the input is cut with a note or refused
with a message naming the setting; just under it, everything loads."""

from __future__ import annotations

import pytest

from rag_core.config import EmbeddingConfig, RAGConfig
from rag_core.errors import LoadError
from rag_core.evaluation.questions import Question, QuestionSet, parse_upload
from rag_core.evaluation.runner import run_evaluation
from rag_core.loaders import load_bytes
from rag_core.services import open_index


def _csv(rows: int) -> bytes:
    return ("id,city\n" + "".join(f"{i},town {i}\n" for i in range(rows))).encode()


def test_csv_rows_past_the_limit_are_cut_with_a_note(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_MAX_CSV_ROWS", "10")
    whole = load_bytes("ten.csv", _csv(10))
    assert "town 9" in whole.text and "warnings" not in whole.metadata
    cut = load_bytes("thirty.csv", _csv(30))
    assert "town 9 " in cut.text and "town 10 " not in cut.text
    assert cut.metadata["warnings"] == ["only the first 10 of 30 rows were loaded (limit RAG_MAX_CSV_ROWS); "
                                        "split the file to load the rest"]


def test_documents_with_too_many_headings_are_refused(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_MAX_HEADINGS", "10")
    assert load_bytes("ok.md", "".join(f"# H{i}\n\ntext {i}\n\n" for i in range(10)).encode()).name == "ok.md"
    with pytest.raises(LoadError, match=r"many\.md: has more than 10 headings.*\(RAG_MAX_HEADINGS\); split it"):
        load_bytes("many.md", "".join(f"## H{i}\n\ntext {i}\n\n" for i in range(11)).encode())
    with pytest.raises(LoadError, match="more than 10 headings"):  # setext headings count too
        load_bytes("setext.md", "".join(f"H{i}\n===\n\n" for i in range(11)).encode())


def test_question_files_and_evaluations_are_capped(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTIONS", "2")
    with pytest.raises(ValueError, match=r"more than 2 questions .*; at most 2 per set \(RAG_MAX_QUESTIONS\)"):
        parse_upload("q.csv", b"question,answer_text\na?,x\nb?,y\nc?,z\n")
    monkeypatch.setenv("RAG_MAX_EVAL_CONFIGS", "1")
    questions = QuestionSet(name="s", kind="upload", questions=[Question(id="q", question="a?", answer_texts=["x"])])
    with pytest.raises(ValueError, match=r"2 configurations; at most 1 are allowed \(RAG_MAX_EVAL_CONFIGS\)"):
        run_evaluation(questions, [RAGConfig(name="a"), RAGConfig(name="b")], ["keyword"],
                       index_factory=lambda c: None, execute=lambda *a: None)


def test_ingest_caps_chunks_per_document_and_per_batch(data_dir, monkeypatch):
    config = RAGConfig(name="limits", embedding=EmbeddingConfig(embedder="hash"))
    small = load_bytes("small.md", b"# Small\n\nOne paragraph.\n")
    big = load_bytes("big.md", "".join(f"## Part {i}\n\nParagraph {i}.\n\n" for i in range(40)).encode())
    monkeypatch.setenv("RAG_MAX_CHUNKS_PER_DOCUMENT", "20")
    report = open_index(config).ingest([small, big])
    assert report.added == [small.id]
    assert report.errors["big.md"].endswith("over the limit of 20 per document (RAG_MAX_CHUNKS_PER_DOCUMENT); "
                                            "split the file or raise max tokens")
    monkeypatch.setenv("RAG_MAX_CHUNKS_PER_DOCUMENT", "1000")
    monkeypatch.setenv("RAG_MAX_CHUNKS_PER_INGEST", "100")  # each file makes 82 chunks
    other = load_bytes("other.md", "".join(f"## Bit {i}\n\nLine {i}.\n\n" for i in range(40)).encode())
    report = open_index(config).ingest([big, other])
    assert report.added == [big.id]  # the first fits; the rest waits for another batch
    assert "limit per ingest is 100 (RAG_MAX_CHUNKS_PER_INGEST)" in report.errors["other.md"]


def test_pre_chunked_batches_are_capped_too(data_dir, monkeypatch):
    """A BEIR corpus is indexed one chunk per document with ``add_chunks``: the same per-ingest limit applies."""
    from rag_core.chunking import chunk_document

    monkeypatch.setenv("RAG_MAX_CHUNKS_PER_INGEST", "5")
    config = RAGConfig(name="limits", embedding=EmbeddingConfig(embedder="hash"))
    doc = load_bytes("big.md", "".join(f"## Part {i}\n\nParagraph {i}.\n\n" for i in range(4)).encode())
    chunks = chunk_document(doc, config.chunking, "all")
    assert len(chunks) > 5
    with pytest.raises(ValueError, match=r"in one batch; the limit per ingest is 5 \(RAG_MAX_CHUNKS_PER_INGEST"):
        open_index(config).add_chunks([doc], chunks)
