"""A Markdown list nested hundreds of levels deep goes through chunking and the embedding plan in time linear in
its text: the nesting depth must not multiply the cost.

Before the fix, ``embedding_text`` removed table delimiter rows with a regex that backtracked through each line's
indentation (time quadratic in a line's length): a 9 MB list nested 3,000 levels took over 400 s to ingest.
"""

from __future__ import annotations

import time

from rag_core.chunking import chunk_document
from rag_core.stores.contextual import embedding_text, plan_vectors
from rag_core.types import Chunk


def nested_list(levels: int) -> str:
    """``- a`` nested ``levels`` deep, two spaces a level (about ``levels**2`` characters)."""
    return "".join("  " * level + "- a\n" for level in range(levels))


def indented_items(indent: int, size: int = 60_000) -> str:
    """About ``size`` characters of ``- a`` items all indented ``indent`` levels: the same text, deeper lines."""
    line = "  " * indent + "- a\n"
    return line * (size // len(line))


def list_chunk(text: str) -> Chunk:
    return Chunk(id="c", doc_id="d", granularity="section", chunk_type="list", text=text, start=0, end=len(text),
                 tokens=len(text) // 4)


def _seconds(work, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def test_embedding_text_time_does_not_grow_with_indentation():
    shallow, deep = list_chunk(indented_items(200)), list_chunk(indented_items(1600))
    assert abs(len(shallow.text) - len(deep.text)) < 4_000  # the same amount of text, lines 8x as deep
    shallow_s = _seconds(lambda: embedding_text(shallow))
    deep_s = _seconds(lambda: embedding_text(deep))
    assert deep_s < 3 * shallow_s + 0.05, (shallow_s, deep_s)  # was 8x: about 0.4 s against 3.5 s
    assert embedding_text(deep) == deep.text  # a list holds no table delimiter row: nothing is removed


def test_delimiter_rows_are_still_removed_however_indented():
    kept = "| a | b |\n| 1 | 2 |\n" + "  " * 500 + "- a\n--- a\n"
    text = ("| a | b |\n|---|:---:|\n| 1 | 2 |\n" + " " * 3 + "| --- | --- |\n" + "  " * 500 + "- a\n"
            "\t|\t---\n--- a\n```\n|---|\n```\n")
    assert embedding_text(list_chunk(text)) == kept.replace("--- a", "a") + "```\n|---|\n```\n"


def test_deep_list_document_is_chunked_and_planned_in_bounded_time(make_doc):
    document = make_doc(nested_list(800))  # 642 kB: took 11 s before the fix, under 1 s after

    def ingest_plan() -> None:
        plan_vectors(chunk_document(document), {"doc1": "doc.md"})

    assert _seconds(ingest_plan, repeats=1) < 4.0
