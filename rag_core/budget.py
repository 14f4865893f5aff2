"""Fitting items into a token budget: greedy, in the order given, each item's tokens counted by the caller.

One rule for every context the engine builds (the agent's held and final context, the formatted context, the
documents the answer-only model reads, the part-by-part fill, the trimmed chunks' units): an item is taken while
the tokens used so far plus its own stay within the budget. The callers differ only in what an item costs (a
chunk's tokens, a formatted block's, the tokens a unit adds to its chunk), in whether the first item is taken
whatever its size, and in whether the first item that does not fit ends the fitting (the rest are not counted)
or is skipped so a smaller one after it can still use the room.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from rag_core.types import Hit

T = TypeVar("T")


def fits(used: int, size: int, budget: int) -> bool:
    """Whether an item of ``size`` tokens fits beside ``used`` tokens within ``budget``."""
    return used + size <= budget


def hit_tokens(hit: Hit, kept: Sequence[Hit] = ()) -> int:
    """A hit's cost: its chunk's tokens (whatever was kept before it)."""
    return hit.chunk.tokens


@dataclass(frozen=True, slots=True)
class Fit(Generic[T]):
    """What fitting took (in order, with the tokens each cost), refused, and never counted (after a stop)."""

    kept: list[T] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    refused: list[T] = field(default_factory=list)
    rest: list[T] = field(default_factory=list)

    @property
    def used(self) -> int:
        return sum(self.sizes)


def fit_in_order(items: Iterable[T] | Callable[[Sequence[T]], Iterable[T]], budget: int,
                 cost: Callable[[T, Sequence[T]], int] = hit_tokens, *, keep_first: bool = False,
                 stop: bool = False) -> Fit[T]:
    """Take ``items`` in order while they fit ``budget`` tokens; ``cost(item, kept)`` is an item's tokens given
    the items kept before it.

    ``keep_first``: the first item is kept whatever its size. ``stop``: the first item that does not fit ends the
    fitting (it is the one refused; the items after it are ``rest``, never counted); otherwise it is skipped and
    the next is tried. ``items`` may be a function of the items kept so far, read lazily as they are kept, for a
    caller whose next candidate depends on what was taken.
    """
    kept: list[T] = []
    sizes: list[int] = []
    refused: list[T] = []
    source = iter(items(kept) if callable(items) else items)
    used = 0
    for item in source:
        size = cost(item, kept)
        if fits(used, size, budget) or (keep_first and not kept):
            kept.append(item)
            sizes.append(size)
            used += size
            continue
        refused.append(item)
        if stop:
            return Fit(kept, sizes, refused, list(source))
    return Fit(kept, sizes, refused)
