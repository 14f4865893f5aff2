"""Sentence boundaries in prose, and splitting oversized prose into sentence-aligned pieces with token overlap.

Hand-written on purpose: the usual sentence splitters (NLTK punkt, spaCy, pysbd) need model data or a heavy
install, and Markdown prose needs only a conservative rule — end punctuation, optional closing quote or
bracket, whitespace, then something that can start a sentence — plus a short abbreviation list.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from rag_core.chunking.markdown_blocks import strip_span

# The lookbehind starts a match only at the first mark of a run ("...", "?!"): starting again at every mark of a
# long run rescanned the run each time (time quadratic in its length).
_SENTENCE_END = re.compile(r"""(?<![.!?…])[.!?…]+["'”’)\]*_]*(?=\s+["'“‘(\[*_`]*[A-Z0-9#`\[(*_>-])""")
# How far back the word before a sentence end is read (longer words are never abbreviations or initials).
_WORD_WINDOW = 64
_ABBREVIATIONS = frozenset(
    "e.g i.e etc vs cf al fig no dr mr mrs ms st jr sr approx ca resp esp incl",
)
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)$")


@dataclass(slots=True)
class SentenceRun:
    """Consecutive sentences packed up to ``max_tokens``: a verbatim sub-span of an oversized prose block."""

    start: int
    end: int
    tokens: int
    oversized: bool = False


def sentence_spans(
    text: str, start: int, end: int, no_cut: list[tuple[int, int]] | None = None
) -> list[tuple[int, int]]:
    """Sentences of ``text[start:end]`` as spans (whitespace between sentences excluded).

    Boundaries inside any ``no_cut`` span (nested code fences) are skipped; a blank line always ends a
    sentence, so list-like or line-broken prose without punctuation still has boundaries.
    """
    segment = text[start:end]
    cuts: set[int] = set()
    for m in _SENTENCE_END.finditer(segment):
        word = _WORD_BEFORE.search(segment, max(0, m.start() - _WORD_WINDOW), m.start())
        if word and m.group().startswith(".") and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
            continue
        if len(word.group(1)) == 1 if word else False:  # an initial such as "J. Smith"
            continue
        cuts.add(m.end())
    for m in re.finditer(r"\n[ \t]*\n", segment):
        cuts.add(m.start())
    spans: list[tuple[int, int]] = []
    pos = 0
    for cut in sorted(cuts) + [len(segment)]:
        absolute = start + cut
        if no_cut and any(s < absolute < e for s, e in no_cut) and cut != len(segment):
            continue
        s, e = strip_span(segment, pos, cut)
        if e > s:
            spans.append((start + s, start + e))
            pos = cut
    return spans


def pack_sentences(
    text: str,
    sentences: list[tuple[int, int]],
    max_tokens: int,
    overlap: int,
    count: Callable[[str], int],
) -> list[SentenceRun]:
    """Pack consecutive sentences into runs of at most ``max_tokens``; each run after the first starts
    with the previous run's last whole sentences totalling at most ``overlap`` tokens.

    A single sentence longer than ``max_tokens`` becomes its own run flagged ``oversized``.
    """
    sizes = [count(text[s:e]) + 1 for s, e in sentences]  # +1: the joining whitespace
    runs: list[SentenceRun] = []
    i = 0
    n = len(sentences)
    while i < n:
        j = i
        total = 0
        while j < n and (j == i or total + sizes[j] <= max_tokens):
            total += sizes[j]
            j += 1
        if j == i + 1 and sizes[i] - 1 > max_tokens:
            s, e = sentences[i]
            runs.append(SentenceRun(s, e, sizes[i] - 1, oversized=True))
        else:
            s, e = sentences[i][0], sentences[j - 1][1]
            runs.append(SentenceRun(s, e, total - 1))
        if j >= n:
            break
        # Step back over whole trailing sentences for the overlap, keeping room for at least one new sentence.
        back = j
        carried = 0
        while back - 1 > i and carried + sizes[back - 1] <= overlap:
            if carried + sizes[back - 1] + sizes[j] > max_tokens:
                break
            back -= 1
            carried += sizes[back]
        i = back
    return runs
