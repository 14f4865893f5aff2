"""The shared Markdown line recognisers (``markdown_blocks``) and the call sites moved onto them: each call site
reads a line exactly as its own pattern did, checked against that pattern on every short line of Markdown-ish
characters hypothesis tries."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.agent.answer import _numbered
from rag_core.chunking.markdown_blocks import FENCE_LINE, HEADING_LINE, LIST_MARKER, TABLE_DELIMITER_ROW
from rag_core.evaluation.draft_text import _heading, _list_item

# The patterns the call sites had (answer.py, grounding.py, draft_text.py).
OLD_FENCE = re.compile(r"^\s*(```|~~~)")
OLD_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
OLD_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")
OLD_TABLE_RULE = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?$")
OLD_NUMBERED = re.compile(r"^\s{0,3}\d+[.)]\s+")
OLD_DRAFT_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
OLD_DRAFT_LIST_ITEM = re.compile(r"^(\s*)(\d{1,3}[.)]|[-*+])\s+\S")

LINES = st.text(alphabet="#-*+.)|:`~ \t\u00a0\r1234a", max_size=14)


def _span(match: re.Match | None) -> tuple[int, int] | None:
    return match.span() if match else None


@settings(max_examples=1500, deadline=None)
@given(LINES)
def test_the_shared_recognisers_match_what_the_call_sites_matched(line):
    assert _span(FENCE_LINE.match(line)) == _span(OLD_FENCE.match(line))
    assert _span(LIST_MARKER.match(line)) == _span(OLD_LIST_ITEM.match(line))
    assert LIST_MARKER.sub("", line) == OLD_LIST_ITEM.sub("", line)
    assert _span(HEADING_LINE.match(line)) == _span(OLD_HEADING.match(line))
    assert _span(TABLE_DELIMITER_ROW.match(line.strip())) == _span(OLD_TABLE_RULE.match(line.strip()))
    assert _numbered(line) == bool(OLD_NUMBERED.match(line))


@settings(max_examples=1500, deadline=None)
@given(LINES)
def test_the_draft_rules_are_the_shared_recognisers_narrowed_as_before(line):
    old = OLD_DRAFT_HEADING.match(line)
    assert _heading(line) == ((len(old.group(1)), old.group(2)) if old else None)
    old_item, item = OLD_DRAFT_LIST_ITEM.match(line), _list_item(line)
    assert (item.group(1, 2) if item else None) == (old_item.group(1, 2) if old_item else None)


def test_what_each_recogniser_reads():
    assert FENCE_LINE.match("  ~~~python").group(1) == "~~~" and not FENCE_LINE.match("`code`")
    assert HEADING_LINE.match("### Keys").group(1) == "###" and not HEADING_LINE.match("####### seven")
    assert LIST_MARKER.match("  12) step").group(1, 2) == ("  ", "12)") and not LIST_MARKER.match("-x")
    assert TABLE_DELIMITER_ROW.match("| --- | :---: |") and not TABLE_DELIMITER_ROW.match("| --- | :-: |")
    assert _heading("## Rotate keys {#rotate}  ") == (2, "Rotate keys {#rotate}") and _heading(" # indented") is None
    assert _list_item("2024. was the year") is None and _list_item("3. Restart") is not None
    assert _numbered("   1. step") and not _numbered("    1. nested code") and not _numbered("- bullet")
