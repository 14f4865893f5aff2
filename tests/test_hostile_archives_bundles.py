"""A bundle holding many documents under one name follows the same-name rule of uploads: the first (or the stored
one) is kept, the others are skipped and said so; nothing stays "not indexed" for ever."""

from __future__ import annotations

import json

import pytest

from rag_core.config import RAGConfig, Settings
from rag_core.embeddings import get_embedder
from rag_core.evaluation.bundle import export_bundle, import_bundle, read_bundle
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.evaluation.runner import Outcome, run_evaluation
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import DocumentStore
from rag_core.serving.jobs import JobRunner
from rag_core.types import Chunk, Document

QSET = QuestionSet(name="tiny", kind="upload", questions=[
    Question(id="q1", question="What port?", intent="fact", answer_texts=["port 8443"])])


class _NoIndex:
    def documents(self):
        return []


def _answer(question, strategy, config, index, settings) -> Outcome:
    chunk = Chunk(id="c1", doc_id="d1", granularity="paragraph", chunk_type="prose", text="uses port 8443", start=0,
                  end=14, tokens=3)
    return Outcome(ranked=[(chunk, "doc.md")], context_tokens=3, steps=1, trace={}, route=strategy)


@pytest.fixture
def run():
    return run_evaluation(QSET, [RAGConfig(name="demo")], ["vector"], index_factory=lambda c: _NoIndex(),
                          execute=_answer)


def _doc(name: str, text: str) -> Document:
    return Document(id="0123456789abcdef", name=name, doc_type="markdown", size=len(text), created="", text=text)


def test_fifty_documents_of_one_name_keep_the_first_and_all_that_is_stored_gets_indexed(run, data_dir):
    docs = [_doc("same.md", f"# Same\n\nVersion {i} of the page.\n") for i in range(50)]
    bundle = read_bundle(export_bundle(run, [*docs, _doc("other.md", "# Other\n")]), source="b.json")
    assert [(d.name, d.text) for d in bundle.documents] == [("same.md", docs[0].text), ("other.md", "# Other\n")]
    assert len(bundle.skipped) == 49
    assert bundle.skipped[0] == ("same.md: skipped, b.json already holds a document of that name with other text "
                                 "(the first one is kept)")
    summary = import_bundle(bundle, data_dir)
    assert summary["documents_added"] == 2 and summary["documents_skipped"] == bundle.skipped
    stored = DocumentStore(data_dir).list()
    settings = Settings(data_dir=data_dir)
    index = Index.open("bundle", settings, get_embedder("hash", settings, None))
    runner = JobRunner(data_dir)
    job = runner.wait(runner.submit_ingest(index, stored, title="Index all").id)
    assert job.message.startswith("2 indexed")
    assert {row["doc_id"] for row in index.documents()} == {d.id for d in stored}  # none left "not indexed"


def test_the_same_document_twice_is_one_and_not_reported(run):
    twice = [_doc("a.md", "# A\n"), _doc("a.md", "# A\n")]
    bundle = read_bundle(export_bundle(run, twice))
    assert [d.name for d in bundle.documents] == ["a.md"] and bundle.skipped == []


def test_a_bundled_document_named_like_a_stored_one_with_other_text_leaves_the_stored_one(run, data_dir):
    store = DocumentStore(data_dir)
    ours = store.add(load_bytes("guide.md", b"# Ours\n\nPort 1.\n"))[0]
    payload = json.loads(export_bundle(run, [_doc("guide.md", "# Theirs\n\nPort 2.\n"), _doc("new.md", "# New\n")]))
    summary = import_bundle(read_bundle(json.dumps(payload)), data_dir)
    assert summary["documents_added"] == 1
    assert summary["documents_skipped"] == ["guide.md: skipped, a document of that name with other text is already "
                                            "stored here (kept; delete it on the Documents page first to take the "
                                            "bundle's)"]
    assert [(d.name, d.text) for d in store.list()] == [("guide.md", ours.text), ("new.md", "# New\n")]


def test_a_name_both_included_and_named_is_one_document(run):
    payload = json.loads(export_bundle(run, [_doc("a.md", "# A\n")]))
    payload["document_names"] = ["a.md", "b.md", "b.md"]
    bundle = read_bundle(json.dumps(payload))
    assert [d.name for d in bundle.documents] == ["a.md"] and bundle.document_names == ["b.md"]


def test_the_import_message_names_the_documents_left_out():
    from ui.evaluate.eval_panels import import_message

    summary = {"run_id": "r1", "questions": 2, "agent_traces": 0, "configs": [], "documents_added": 1,
               "documents": 50, "documents_skipped": ["same.md: skipped, b.json already holds a document of that "
                                                      "name with other text (the first one is kept)"]}
    text = import_message(summary)
    assert "Not imported (1): same.md: skipped" in text and "documents: 1 new of 50" in text
    assert "Not imported" not in import_message({**summary, "documents_skipped": []})
