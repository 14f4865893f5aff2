"""A stand-in for the evaluation runner's ``execute``: scripted rankings per (strategy, question), no index needed."""

from __future__ import annotations

from rag_core.evaluation.runner import Outcome
from rag_core.types import Chunk


def make_chunk(text: str, doc_id: str = "d1", heading_path=None, cid: str | None = None, tokens: int | None = None):
    """A paragraph chunk of ``text``, its id derived from the text unless ``cid`` is given."""
    return Chunk(id=cid or f"c-{abs(hash(text)) % 10**8}", doc_id=doc_id, granularity="paragraph",
                 chunk_type="prose", text=text, start=0, end=len(text),
                 tokens=tokens if tokens is not None else len(text.split()), heading_path=list(heading_path or []))


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
