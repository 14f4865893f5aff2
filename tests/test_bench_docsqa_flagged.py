"""``bench docsqa`` counts the product's own verbatim quotes that the grounding check flags "Not grounded"."""

from __future__ import annotations

from types import SimpleNamespace

from bench.docsqa import report, verbatim_flagged
from rag_core.types import Chunk, Hit

ROW = "| vite | 4625 | 120 |"


def _hits():
    text = f"| Tool | Cold start (ms) | Rebuild (ms) |\n| --- | --- | --- |\n{ROW}"
    chunk = Chunk(id="bench", doc_id="d", granularity="paragraph", chunk_type="table", text=text, start=0,
                  end=len(text), tokens=30)
    return [Hit(chunk=chunk, score=1.0, confidence=1.0)]


def test_only_verbatim_units_are_counted():
    unsupported = [{"sentence": f"{ROW} [bench]", "reason": "states the number '4625', which ..."},
                   {"sentence": "| vite | 4626 | 120 |", "reason": "states the number '4626', which ..."},
                   {"sentence": "Vite starts in 4625 ms.", "reason": "..."}]
    assert verbatim_flagged(unsupported, _hits()) == 1
    assert verbatim_flagged([], _hits()) == 0


def test_the_results_table_reports_the_count():
    per = [{"id": f"q{i}", "intent": "fact", "found": 1, "places": 1, "batch": 0, "quoted": 1, "flagged": i,
            "answerable": True, "not_found": None, "tokens": 100, "ms": 5.0, "steps": 1} for i in range(3)]
    text = report([{"set": "fastapi", "budget": 1500, "system": "one-shot", "per": per}], SimpleNamespace(limit=0))
    header = next(line for line in text.splitlines() if line.startswith("| system"))
    row = next(line for line in text.splitlines() if line.startswith("| one-shot"))
    column = header.split(" | ").index("verbatim quotes not grounded")
    assert row.split(" | ")[column] == "3"
