"""Fakes for the evaluation tests: a tiny index and an executor that returns scripted rankings."""

from __future__ import annotations

import pytest

from rag_core.evaluation.runner import Outcome
from rag_core.types import Chunk


def make_chunk(text: str, doc_id: str = "d1", heading_path=None, cid: str | None = None, tokens: int | None = None):
    return Chunk(id=cid or f"c-{abs(hash(text)) % 10**8}", doc_id=doc_id, granularity="paragraph",
                 chunk_type="prose", text=text, start=0, end=len(text),
                 tokens=tokens if tokens is not None else len(text.split()), heading_path=list(heading_path or []))


class FakeIndex:
    def __init__(self, doc_ids=()):
        self.doc_ids = list(doc_ids)
        self.ingested: list[str] = []

    def documents(self):
        return [{"doc_id": d} for d in self.doc_ids]

    def ingest(self, docs, progress=None):
        for doc in docs:
            self.doc_ids.append(doc.id)
            self.ingested.append(doc.id)
        if progress:
            progress(len(docs), len(docs))


class ScriptedExecutor:
    """Returns ``script[(strategy, question)]`` ranked texts; records every call."""

    def __init__(self, script):
        self.script = script
        self.calls = []

    def __call__(self, question, strategy, config, index, settings):
        self.calls.append((config.name, strategy, question))
        texts = self.script.get((strategy, question))
        if texts is None:
            raise RuntimeError(f"no script for {strategy} {question}")
        ranked = [(make_chunk(t, cid=f"{strategy}-{i}"), "doc.md") for i, t in enumerate(texts)]
        return Outcome(ranked=ranked, context_tokens=sum(c.tokens for c, _ in ranked), steps=2 if strategy == "agent"
                       else 1, trace={"strategy": strategy, "long": "x" * 1000}, route=strategy)


@pytest.fixture
def fake_index():
    return FakeIndex(doc_ids=["d1"])


@pytest.fixture
def fakes():
    """The fake classes, for tests that build their own (importlib mode cannot import conftest)."""
    from types import SimpleNamespace

    return SimpleNamespace(FakeIndex=FakeIndex, ScriptedExecutor=ScriptedExecutor, make_chunk=make_chunk)
