"""Faster trials, the same scores: searches remembered across trials, and only the context's hits de-duplicated."""

from __future__ import annotations

import itertools
import random

from rag_core.config import RAGConfig, get_settings
from rag_core.index import Filters
from rag_core.retrieval.retriever import Retriever
from rag_core.services import open_index
from rag_core.tuning.memo import MemoIndex
from rag_core.tuning.objective import IndexCache, score_one
from rag_core.tuning.space import apply
from tests.fakes.tiny_corpus import tiny_questions

QUERIES = ["copper kettle boils water", "Kettles notes line general care", "tyre pressure road bikes",
           "history", "lens beam lamp", "glaze bisque firing stoneware"]
FILTERS = [None, Filters(granularity=["paragraph"]), Filters(granularity=["section"]),
           Filters(granularity=["paragraph", "section"])]


def _documents(tiny_corpus):
    from rag_core.loaders import load_path

    folder, _, _ = tiny_corpus
    return [load_path(path, name=path.name) for path in sorted(folder.glob("*.md"))]


def _raw_index(tiny_corpus, **chunking):
    config = RAGConfig(embedding={"embedder": "hash"}, chunking={"max_tokens": 128, **chunking})
    cache = IndexCache(_documents(tiny_corpus), open_index, get_settings(), prefix="memo")
    index, _ = cache.get(config)
    assert isinstance(index, MemoIndex)  # the cache hands out remembered indexes
    return config, index.inner


def _pairs(found):
    return [(chunk.id, round(score, 6)) for chunk, score in found]


def test_a_remembered_search_is_the_index_s_own_at_every_depth(tiny_corpus):
    _, raw = _raw_index(tiny_corpus)
    assert raw.exact_vector_search  # embedded and small: exact search, so a shallower k is a prefix
    memo = MemoIndex(raw)
    asks = list(itertools.product(QUERIES, FILTERS, [1, 2, 3, 5, 8, 13, 40], ["vector_search", "keyword_search"]))
    random.Random(0).shuffle(asks)  # shallow before deep and deep before shallow
    for query, filters, k, search in asks:
        assert _pairs(getattr(memo, search)(query, k, filters)) == _pairs(getattr(raw, search)(query, k, filters))
    asked = memo.vector_search.calls + memo.keyword_search.calls
    served = memo.vector_search.served + memo.keyword_search.served
    assert served > asked and asked + served == len(asks)
    assert memo.get_many(["nope", *[c.id for c, _ in raw.vector_search("kettle", 3)]]) == [
        c for c, _ in raw.vector_search("kettle", 3)]


class _TiedKeywords:
    """An index whose keyword search has a tie at the 2nd/3rd place, and which picks among tied chunks by k."""

    exact_vector_search = True

    def __init__(self, chunks):
        self.chunks, self.asked = chunks, []

    def keyword_search(self, query, k, filters=None, exclude_ids=()):
        self.asked.append(k)
        a, b, c, d = self.chunks
        ranked = [(a, 3.0), (b, 2.0), (c, 2.0), (d, 1.0)] if k != 2 else [(a, 3.0), (c, 2.0)]
        return ranked[:k]

    def vector_search(self, query, k, filters=None, exclude_ids=()):
        return []


def test_a_tie_at_the_cut_asks_the_index_again(tiny_corpus):
    _, raw = _raw_index(tiny_corpus)
    inner = _TiedKeywords([c for c, _ in raw.vector_search("kettle", 4)])
    memo = MemoIndex(inner)
    deep = memo.keyword_search("q", 4)
    assert memo.keyword_search("q", 1) == deep[:1] and memo.keyword_search("q", 3) == deep[:3]
    assert _pairs(memo.keyword_search("q", 2)) == _pairs(inner.keyword_search("q", 2))  # the tie: asked again
    assert inner.asked == [4, 2, 2]


class _CountingIndex(MemoIndex):
    """Counts the texts embedded for de-duplication."""

    def __init__(self, index) -> None:
        super().__init__(index)
        self.embedded = 0

    def embed_texts(self, texts):
        self.embedded += len(texts)
        return self.inner.embed_texts(texts)


def test_context_only_gives_the_same_context_from_fewer_embedded_hits(tiny_corpus):
    config, raw = _raw_index(tiny_corpus, max_tokens=128)
    full, lean = _CountingIndex(raw), _CountingIndex(raw)
    for query, budget, granularity, k in itertools.product(QUERIES, [60, 150, 400, 4000], ["paragraph", "any"],
                                                           [2, 10, 30]):
        retrieval = config.retrieval.model_copy(update={"token_budget": budget, "granularity": granularity,
                                                        "initial_k": k, "max_k": 2 * k, "dedup_threshold": 0.9})
        everything = Retriever(full, retrieval).retrieve(query)
        context = Retriever(lean, retrieval).retrieve(query, context_only=True)
        same = ("text", "tokens", "included", "truncated")  # what the reader gets; ``dropped`` ends earlier
        assert {k: v for k, v in context.context.to_dict().items() if k in same} == {
            k: v for k, v in everything.context.to_dict().items() if k in same}
        assert [h.chunk.id for h in context.hits] == [h.chunk.id for h in everything.hits][:len(context.hits)]
    assert lean.embedded < full.embedded


def test_a_trial_scores_the_same_on_a_remembered_index(tiny_corpus):
    config, raw = _raw_index(tiny_corpus)
    memo = MemoIndex(raw)
    trials = [{}, {"retrieval.initial_k": 1, "retrieval.max_k": 8}, {"retrieval.granularity": "section"},
              {"retrieval.rrf_k": 5, "retrieval.section_weight": 0.0}, {"retrieval.strategy": "keyword"}]
    for values in trials * 2:  # the second round is answered from memory
        trial = apply(config, values, budget=200)
        for question in tiny_questions():
            scored = [score_one(question, trial.retrieval.strategy, trial, index, get_settings(), "place_recall")
                      for index in (raw, memo)]
            assert scored[0].score == scored[1].score and scored[0].metrics == scored[1].metrics
            assert scored[0].context_tokens == scored[1].context_tokens
    assert memo.vector_search.served > 0


def test_the_agent_answers_the_same_over_a_remembered_index(tiny_corpus):
    config, raw = _raw_index(tiny_corpus)
    trial = apply(config, {}, budget=300)
    for question in tiny_questions()[:4]:
        scored = [score_one(question, "agent", trial, index, get_settings(), "place_recall")
                  for index in (raw, MemoIndex(raw))]
        assert not scored[1].error and scored[0].score == scored[1].score
        assert scored[0].metrics == scored[1].metrics
