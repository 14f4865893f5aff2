"""The one budget-fitting rule: greedy in order, skip or stop, the first kept whatever its size if asked."""

from __future__ import annotations

from rag_core.budget import Fit, fit_in_order, fits, hit_tokens
from rag_core.types import Chunk, Hit


def _hit(cid: str, tokens: int) -> Hit:
    chunk = Chunk(id=cid, doc_id="d", granularity="paragraph", chunk_type="prose", text=cid, start=0, end=10,
                  tokens=tokens)
    return Hit(chunk=chunk, score=1.0)


def _size(item: tuple[str, int], kept) -> int:
    return item[1]


ITEMS = [("a", 40), ("b", 70), ("c", 30), ("d", 20)]


def test_fits_is_at_most_the_budget():
    assert fits(60, 40, 100)
    assert not fits(61, 40, 100)
    assert fits(0, 0, 0)


def test_skip_lets_a_smaller_later_item_use_the_room():
    fit = fit_in_order(ITEMS, 100, _size)
    assert [k for k, _ in fit.kept] == ["a", "c", "d"]
    assert fit.sizes == [40, 30, 20] and fit.used == 90
    assert [k for k, _ in fit.refused] == ["b"] and fit.rest == []


def test_stop_ends_at_the_first_that_does_not_fit_and_counts_nothing_after():
    counted = []

    def size(item, kept):
        counted.append(item[0])
        return item[1]

    fit = fit_in_order(ITEMS, 100, size, stop=True)
    assert [k for k, _ in fit.kept] == ["a"]
    assert [k for k, _ in fit.refused] == ["b"]
    assert [k for k, _ in fit.rest] == ["c", "d"]
    assert counted == ["a", "b"]


def test_keep_first_takes_the_first_item_whatever_its_size_and_only_it():
    fit = fit_in_order([("big", 500), ("small", 30), ("other", 80)], 100, _size, keep_first=True)
    assert [k for k, _ in fit.kept] == ["big"] and fit.used == 500
    assert [k for k, _ in fit.refused] == ["small", "other"]
    assert fit_in_order([("big", 500), ("small", 30)], 100, _size).kept == [("small", 30)]


def test_the_cost_sees_what_was_kept_before_it():
    # A separator of 2 tokens before every item but the first.
    fit = fit_in_order(ITEMS, 100, lambda item, kept: item[1] + (2 if kept else 0))
    assert fit.sizes == [40, 32, 22] and [k for k, _ in fit.kept] == ["a", "c", "d"]


def test_items_may_depend_on_what_was_kept():
    def offers(kept):  # an item already kept is passed over (neither kept again nor refused)
        for item in [("a", 40), ("a", 40), ("b", 70), ("c", 30), ("c", 30), ("b", 70)]:
            if item not in kept:
                yield item

    fit = fit_in_order(offers, 100, _size)
    assert fit.kept == [("a", 40), ("c", 30)]
    assert fit.refused == [("b", 70), ("b", 70)]


def test_hits_cost_their_chunk_tokens_by_default():
    hits = [_hit("x", 60), _hit("y", 60), _hit("z", 30)]
    assert hit_tokens(hits[0]) == 60
    fit = fit_in_order(hits, 100)
    assert [h.chunk.id for h in fit.kept] == ["x", "z"] and fit.used == 90


def test_nothing_fits_an_empty_or_zero_budget():
    assert fit_in_order([], 100, _size) == Fit()
    fit = fit_in_order(ITEMS, 0, _size)
    assert fit.kept == [] and fit.refused == ITEMS
