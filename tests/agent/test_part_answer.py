"""The per-part extractive answer (``answer.part_answer``): each part of the plan answered from its own evidence,
in the plan's order, the units that answer it rather than the ones that share a word with it."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from rag_core.agent.answer import EXTRACTIVE_NOTE, NOT_FOUND, code_blocks, part_answer
from rag_core.retrieval.terms import content_terms
from rag_core.types import Hit
from tests.fakes.executor import make_chunk


def overlap(queries, texts):
    """Share of each query's content terms a text holds (a stand-in for the plan's hybrid relevance)."""
    out = np.zeros((len(queries), len(texts)), dtype=np.float32)
    for i, query in enumerate(queries):
        terms = content_terms(query)
        for j, text in enumerate(texts):
            held = set(content_terms(text))
            out[i, j] = sum(t in held for t in terms) / len(terms) if terms else 0.0
    return out


def part(text, confidence, role="question", query=None):
    return SimpleNamespace(text=text, query=query or text, confidence=confidence, role=role,
                           covered=confidence >= 0.45)


def hit(text, cid, chunk_type="paragraph", tokens=None):
    chunk = make_chunk(text, cid=cid, tokens=tokens)
    chunk.chunk_type = chunk_type
    return Hit(chunk=chunk, score=1.0, confidence=0.5)


HITS = [
    hit("Deploy the service with the deploy command. Rollbacks restore the previous release. "
        "The dashboard shows every release.", "deploy"),
    hit("Logs are kept for 30 days. Log retention can be raised to 90 days on the Pro plan.", "logs"),
]


def test_parts_are_answered_in_the_plan_order_each_from_its_own_evidence():
    parts = [part("How long are logs kept?", 0.8), part("How do rollbacks restore a release?", 0.7)]
    answer = part_answer("q", parts, HITS, overlap, threshold=0.45)
    text = answer.text
    assert text.startswith(EXTRACTIVE_NOTE)
    first, second = text.index("#### 1. How long are logs kept?"), text.index("#### 2. How do rollbacks")
    assert first < text.index("Logs are kept for 30 days. [logs]") < second
    assert second < text.index("Rollbacks restore the previous release. [deploy]")
    assert answer.citations == ["logs", "deploy"]


def test_a_part_under_the_threshold_quotes_nothing_and_says_so():
    parts = [part("How long are logs kept?", 0.8), part("Which release does the dashboard show?", 0.3)]
    text = part_answer("q", parts, HITS, overlap, threshold=0.45).text
    assert "dashboard shows every release" not in text
    assert text.splitlines()[-1] == ("No passage found covers: Which release does the dashboard show? "
                                     "(best evidence 0.30, under the 0.45 a part needs)")


def test_a_covered_part_quotes_only_chunks_as_relevant_as_the_threshold():
    # "retention" is only in the logs chunk; the deploy chunk holds one of the part's three terms (0.33 < 0.45).
    parts = [part("log retention release", 0.67)]
    answer = part_answer("q", parts, HITS, overlap, threshold=0.45)
    assert answer.citations == ["logs"]


def test_the_story_of_a_question_gets_no_answer_of_its_own():
    parts = [part("Our rollbacks happen every week.", 0.9, role="context"), part("How long are logs kept?", 0.8)]
    text = part_answer("q", parts, HITS, overlap, threshold=0.45).text
    assert "####" not in text and "Rollbacks" not in text and "Logs are kept for 30 days. [logs]" in text


def test_a_one_part_question_under_the_threshold_shows_its_closest_passages_as_such():
    text = part_answer("q", [part("How long are logs kept?", 0.3)], HITS, overlap, threshold=0.45).text
    assert "#### Closest passages: best evidence 0.30, under the 0.45 a part needs" in text
    assert "Logs are kept for 30 days. [logs]" in text
    assert part_answer("q", [part("zebras", 0.3)], [], overlap, threshold=0.45).text == NOT_FOUND


def test_a_part_quotes_its_units_in_document_order_within_a_chunk():
    parts = [part("retention days logs Pro plan kept", 0.9)]
    text = part_answer("q", parts, HITS, overlap, threshold=0.45).text
    assert text.index("Logs are kept for 30 days.") < text.index("Log retention can be raised")


def test_source_code_is_quoted_in_fenced_blocks_cut_at_blank_lines():
    code = ("import os\n\n\ndef load_settings(path):\n    return os.environ.get(path)\n\n\n"
            "def save_settings(path, value):\n    os.environ[path] = value\n")
    assert code_blocks(code, limit=12) == ["import os", "def load_settings(path):\n    return os.environ.get(path)",
                                           "def save_settings(path, value):\n    os.environ[path] = value"]
    hits = [hit(code, "settings-py", chunk_type="code", tokens=400)]
    text = part_answer("q", [part("Where are settings saved to the environ?", 0.6)], hits, overlap,
                       threshold=0.45).text
    # Small blocks are joined up to CODE_UNIT_TOKENS: the file's three blocks are one quote, verbatim, fenced.
    assert "\n```\n" + code_blocks(code)[0] + "\n```\n[settings-py]" in text and len(code_blocks(code)) == 1
    assert "- def" not in text  # never a line of code flattened into a bullet


def test_when_no_part_reaches_the_threshold_each_shows_its_closest_passages_as_such():
    parts = [part("How long are logs kept?", 0.3), part("How do rollbacks restore a release?", 0.2)]
    answer = part_answer("q", parts, HITS, overlap, threshold=0.45)
    assert answer.text.count("#### Closest passages:") == 2 and "No passage found covers" not in answer.text
    assert set(answer.closest) == {"logs", "deploy"} == set(answer.citations)
    covered_one = part_answer("q", [parts[0], part("How do rollbacks restore a release?", 0.7)], HITS, overlap,
                              threshold=0.45)
    assert covered_one.closest == [] and "No passage found covers: How long are logs kept?" in covered_one.text


def test_a_pages_code_chunk_is_no_source_file():
    # A Markdown page's code chunk may open with a heading and prose; its fence says it is a page, not a code file.
    text = "## 0.114.0\n\nForbid extra fields:\n\n```python\nx = 1\n\ny = 2\n```\n\nRead the new docs."
    hits = [hit(text, "page-code", chunk_type="code", tokens=30)]
    answer = part_answer("q", [part("Forbid extra fields x y docs", 0.6)], hits, overlap, threshold=0.45)
    assert all(p.kind != "code" for p in answer.passages)
    assert "```python\nx = 1\n\ny = 2\n```" in answer.text and "```\n```" not in answer.text


def test_a_part_the_judge_uncovered_for_a_missing_name_quotes_nothing_and_says_why():
    parts = [part("How long are logs kept on Heroku?", 0.8), part("How do rollbacks restore a release?", 0.7)]
    parts[0].covered = False  # coverage.decide_found: "Heroku" is in no evidence
    text = part_answer("q", parts, HITS, overlap, threshold=0.45).text
    assert "No passage found covers: How long are logs kept on Heroku? (it asks about a name no evidence" in text
    assert "[logs]" not in text and "[deploy]" in text


def test_a_small_tables_rows_compete_and_rows_quoted_together_share_one_header():
    table = ("| plan | limit | value |\n| --- | --- | --- |\n| Team | log retention | 30 days |\n"
             "| Enterprise | log retention | 400 days |\n| Enterprise | seats | 500 |")
    hits = [hit(table, "limits", chunk_type="table", tokens=40)]
    text = part_answer("q", [part("Enterprise log retention", 0.7)], hits, overlap, threshold=0.45).text
    assert "| Enterprise | log retention | 400 days |" in text and "| Team |" not in text
    both = part_answer("q", [part("Enterprise plan limit value", 0.7)], hits, overlap, threshold=0.45).text
    assert both.count("| plan | limit | value |") == 1
    assert "| Enterprise | log retention | 400 days |\n| Enterprise | seats | 500 |" in both
