"""``auto`` is routed alike in Evaluate and the Retrieval Lab: with a model configured both ask its LLM router, and no
other strategy asks it (before, Evaluate routed ``auto`` by the rules while the Lab asked the model)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rag_core import services
from rag_core.config import RAGConfig, Settings
from rag_core.evaluation.questions import Question, QuestionSet
from rag_core.evaluation.runner import run_evaluation
from rag_core.tokens import count_tokens
from rag_core.types import Chunk
from tests.fakes.index import FakeIndex

# The rules send this natural-language question to vector search; the model below answers "keyword".
QUESTION = "why do requests stop after a while"
TEXTS = {"p-timeout": "The timeout setting controls how long a request may take before it is cancelled.",
         "p-install": "To install Wrenfall run pip install wrenfall and then wrenfall init in your project."}


class RouterLLM:
    """A chat client that routes every query to keyword search and records what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def chat(self, messages, tools=None, temperature=0.0, **bounds):
        self.asked.append(messages[-1]["content"])
        return SimpleNamespace(content="keyword")


@pytest.fixture
def index() -> FakeIndex:
    chunks = [Chunk(id=cid, doc_id="d1", granularity="paragraph", chunk_type="prose", text=text, start=100 * n,
                    end=100 * n + len(text), tokens=count_tokens(text), heading_path=["Guide"])
              for n, (cid, text) in enumerate(TEXTS.items())]
    return FakeIndex(chunks, names={"d1": "guide.md"})


def _evaluate(index, llm, tmp_path):
    qset = QuestionSet(name="tiny", kind="upload", questions=[
        Question(id="q1", question=QUESTION, intent="fact", answer_texts=["timeout setting"])])
    run = run_evaluation(qset, [RAGConfig(name="base")], ["auto", "hybrid"], settings=Settings(data_dir=tmp_path),
                         index_factory=lambda config: index, llm=llm)
    return {record["strategy"]: record["route"] for record in run.records}


def test_evaluate_routes_auto_with_the_llm_as_the_lab_does(index, tmp_path):
    llm = RouterLLM()
    routes = _evaluate(index, llm, tmp_path)
    assert "LLM router chose keyword" in routes["auto"]
    assert routes["hybrid"] == "hybrid: strategy set to hybrid in the configuration"
    assert len(llm.asked) == 1  # auto's one question; hybrid never asks the model
    lab = services.open_retriever(index, RAGConfig().retrieval.model_copy(update={"strategy": "auto"}),
                                  Settings(data_dir=tmp_path), llm=llm).retrieve(QUESTION)
    assert f"{lab.route}: {lab.route_reason}" == routes["auto"]


def test_without_a_model_auto_is_routed_by_the_rules(index, tmp_path):
    routes = _evaluate(index, None, tmp_path)
    assert "natural-language question" in routes["auto"] and "LLM" not in routes["auto"]


def test_open_retriever_opens_the_configured_llm_for_auto_only(index, tmp_path, monkeypatch):
    llm = RouterLLM()
    opened: list[Settings] = []
    monkeypatch.setattr(services, "open_llm", lambda settings: opened.append(settings) or llm)
    settings = Settings(data_dir=tmp_path)
    hybrid = services.open_retriever(index, RAGConfig().retrieval.model_copy(update={"strategy": "hybrid"}), settings)
    assert hybrid.llm is None and opened == []
    given = services.open_retriever(index, RAGConfig().retrieval, settings, llm=llm)
    assert given.llm is None  # hybrid, the default: the client given is not held either
    auto = services.open_retriever(index, RAGConfig().retrieval.model_copy(update={"strategy": "auto"}), settings)
    assert auto.llm is llm and opened == [settings]
