"""The index cache: one build per chunking, reused; a build stopped midway is rolled back and raised."""

from __future__ import annotations

import pytest

from rag_core.config import RAGConfig, get_settings
from rag_core.services import open_index
from rag_core.tuning.objective import BuildStopped, IndexCache, budget_outcome, primary_metric
from tests.fakes.tiny_corpus import tiny_questions


def _documents(tiny_corpus):
    from rag_core.loaders import load_path

    folder, _, _ = tiny_corpus
    return [load_path(path, name=path.name) for path in sorted(folder.glob("*.md"))]


def test_one_build_per_chunking_and_a_stopped_build_is_rolled_back(tiny_corpus):
    cache = IndexCache(_documents(tiny_corpus), open_index, get_settings(), prefix="t")
    config = RAGConfig(embedding={"embedder": "hash"}, chunking={"max_tokens": 256})
    with pytest.raises(BuildStopped, match="stopped while building"):
        cache.get(config, should_stop=lambda: True)
    assert not cache.has(config) and cache.build_seconds == []
    index, built = cache.get(config)
    assert built and len(index.documents()) == 6 and len(cache.build_seconds) == 1
    again, built_again = cache.get(config.model_copy(update={"retrieval": config.retrieval.model_copy(
        update={"initial_k": 9})}))
    assert again is index and not built_again  # retrieval-only: the same index


def test_search_is_scored_on_what_fits_the_budget(tiny_corpus):
    cache = IndexCache(_documents(tiny_corpus), open_index, get_settings(), prefix="t")
    config = RAGConfig(embedding={"embedder": "hash"}, retrieval={"strategy": "keyword", "token_budget": 100,
                                                                 "initial_k": 10, "max_k": 10})
    index, _ = cache.get(config)
    outcome = budget_outcome("copper kettle boils water", "keyword", config, index, get_settings())
    assert outcome.context_tokens <= 100
    assert sum(chunk.tokens for chunk, _ in outcome.ranked) <= 100  # a chunk the budget cuts: only what is shown
    assert primary_metric(tiny_questions()) == "place_recall"



class _SlowBuild:
    """An index whose build reports its progress in tenths."""

    def __init__(self) -> None:
        self.reports = 0

    def documents(self):
        return []

    def vector_search(self, *args):
        return []

    keyword_search = vector_search

    def ingest(self, documents, progress):
        for done in range(0, 101, 10):
            self.reports += 1
            progress(done, 100)


def test_a_build_that_cannot_finish_in_time_is_given_up_early(tiny_corpus):
    from rag_core.tuning.objective import BuildTooSlow

    builds = []
    opener = lambda config, settings, collection: builds.append(_SlowBuild()) or builds[-1]  # noqa: E731
    cache = IndexCache(_documents(tiny_corpus), opener, get_settings(), prefix="slow")
    config = RAGConfig(embedding={"embedder": "hash"}, chunking={"max_tokens": 128})
    ticks = iter(range(0, 10_000, 10))  # 10 s per tenth: 100 s in all
    with pytest.raises(BuildTooSlow, match="past the time budget"):
        cache.get(config, finish_by=60.0, clock=lambda: float(next(ticks)))
    assert builds[0].reports == 2  # given up at the first measure of its pace, not at the deadline
    assert not cache.has(config) and cache.build_seconds and cache.build_seconds[0] >= 90  # its projected length
    ticks = iter(range(0, 10_000, 10))
    _, built = cache.get(config, finish_by=200.0, clock=lambda: float(next(ticks)))  # time enough: built
    assert built and builds[1].reports == 11
