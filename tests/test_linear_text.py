"""Text from a model, a server or a document is untrusted: reading it takes linear time, whatever its shape.

Each adversarial input below once took from 3 s to hours (a pattern that backtracked over the whole text from
every position, or over every split of its words); each must now finish well under a second. The rewritten
patterns are also checked against the ones they replace on short texts, where those are still fast.
"""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.agent.policies.answer_only import _MARKERS, cite
from rag_core.agent.policies.tool_calling import _tagged_calls, calls_in_text
from rag_core.agent.tools import ToolArgumentError, parse_arguments
from rag_core.types import Chunk, Hit
from ui.agent.agent_text import readable_answer
from ui.safe_text import md_escape, md_inert, safe_markdown

# Generous: these inputs take milliseconds now and took seconds to hours before.
TIME_CAP_S = 1.0
# The Markdown parser behind ``safe_markdown`` is linear but slow on dense markup (about 40 µs a character).
RENDER_CAP_S = 2.0
WORDS = " ".join(["rotate"] * 3000)


def _timed(function, *args, cap: float = TIME_CAP_S):
    started = time.perf_counter()
    try:
        result = function(*args)
    except ToolArgumentError as e:
        result = e
    elapsed = time.perf_counter() - started
    assert elapsed < cap, f"{function.__name__} took {elapsed:.2f} s on {len(args[0])} characters"
    return result


def _hits() -> list[Hit]:
    chunk = Chunk(id="c1", doc_id="d", text="Rotate the key in Settings.", start=0, end=27, granularity="paragraph",
                  chunk_type="prose", tokens=6)
    return [Hit(chunk=chunk, score=1.0, confidence=1.0, source_name="guide.md")]


@pytest.mark.parametrize("reply", [
    "<tool_call>{" * 20_000,  # 240 KB of unclosed tags: was 85 s
    "<tool_call>{" * 20_000 + "}</tool_call>",
    '{"a":' * 48_000,  # a bare object nested past the JSON reader's recursion limit, at every brace
    '{"k":' * 900 + '"' + "x" * 240_000,  # every brace reads up to an unterminated string
    '{"' * 120_000,
    "{" * 240_000,
])
def test_calls_in_text_is_linear_and_never_raises(reply):
    calls, _ = _timed(calls_in_text, reply)
    assert calls == []


def test_calls_in_text_still_recovers_calls_and_keeps_the_prose():
    call = '{"name": "search", "arguments": {"query": "rotate key"}}'
    calls, prose = calls_in_text(f"Let me look. <tool_call>\n{call}\n</tool_call> Then <tool_call>{call}</tool_call>")
    assert [(c.name, c.arguments) for c in calls] == [("search", '{"query": "rotate key"}')] * 2
    assert prose == "Let me look.  Then"
    calls, prose = calls_in_text(f"I will search. {call} thanks")
    assert [c.name for c in calls] == ["search"] and prose == "I will search.  thanks"
    many = _timed(calls_in_text, f"<tool_call>{call}</tool_call>" * 3_500)  # 245 KB of calls: prose joined once
    assert len(many[0]) == 3_500 and many[1] == ""


@pytest.mark.parametrize("arguments", [
    "```" + " " * 10_000 + "```x",  # was over 200 s
    "```" + " " * 10_000 + "```",
    "```\n" + " \n" * 5_000 + "x",
    "```" + "a" * 10_000,
    "[" * 100_000,  # deeper than the JSON reader's recursion limit: a ToolArgumentError, not a RecursionError
    '{"max_results": ' + "1" * 5_000 + "}",  # more digits than Python converts: a ToolArgumentError too
])
def test_parse_arguments_is_linear_and_raises_only_tool_argument_errors(arguments):
    assert isinstance(_timed(parse_arguments, arguments), ToolArgumentError)


def test_parse_arguments_still_strips_a_fence():
    assert parse_arguments('```json\n{"query": "jwt",}\n```') == (
        {"query": "jwt"}, ["stripped a code fence", "removed trailing commas"])
    assert parse_arguments('```{"query": "jwt"}```') == ({"query": "jwt"}, ["stripped a code fence"])
    with pytest.raises(ToolArgumentError, match="not valid JSON"):
        parse_arguments("``````")


@pytest.mark.parametrize("answer", [
    "The answer is [" + WORDS,  # an unclosed [ before words: was about x7 per added word
    "The answer is [" + WORDS.replace(" ", ", "),
    "[1" * 5_000,
    "![" + WORDS + "](",
])
def test_citation_markers_are_found_in_linear_time(answer):
    _timed(cite, answer, _hits())
    _timed(readable_answer, answer, None)


@pytest.mark.parametrize("text", [
    "a" * 20_000,  # one long word: the link finder tried a URL scheme from each character (3 s per call)
    "a" * 20_000 + "://x",
    "a" * 20_000 + "@example.com",
    "a@" + "b" * 20_000,
    ("a" * 63 + "@") * 300,
    "<a:" * 7_000,
    "<https:" + "x" * 20_000,
    "[" + WORDS,
])
def test_untrusted_text_renders_in_linear_time(text):
    for render in (md_inert, md_escape, safe_markdown):
        _timed(render, text)


ADVERSARIAL = ["<tool_call>", "</tool_call>", "{", "}", '{"', '"name"', ":", "[", "]", "(", "```", " ", "\n", ",", ";",
               "a", "rotate", "://", "@", ".", "<", ">", "https:", "www.", "!", "*", "`", "\\", "1"]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(ADVERSARIAL), min_size=1, max_size=6).map("".join))
def test_any_repeated_pattern_is_processed_in_linear_time(unit):
    text = unit * (8_000 // len(unit) + 1)
    _timed(calls_in_text, text)
    _timed(parse_arguments, text)
    _timed(_MARKERS.findall, text)  # cite's own part (its fallback, rag_core.chunking's sentence_spans, is not here)
    _timed(md_inert, text)
    _timed(md_escape, text)
    _timed(safe_markdown, text, cap=RENDER_CAP_S)


MARKDOWN_LINES = [
    " " * 100_000 + "x",
    "#" * 100_000,
    "-" * 100_000 + " x",
    "1" * 100_000 + ". ",
    " " * 50_000 + "- " + " " * 50_000,
    "| --- " * 16_000 + "x",
    "|---" * 25_000 + "|x",
    "| :---: " * 12_000 + "|  x",
]


@pytest.mark.parametrize("line", MARKDOWN_LINES)
def test_the_markdown_line_recognisers_are_linear(line):
    from rag_core.chunking.markdown_blocks import FENCE_LINE, HEADING_LINE, LIST_MARKER, TABLE_DELIMITER_ROW

    for pattern in (FENCE_LINE, HEADING_LINE, LIST_MARKER, TABLE_DELIMITER_ROW):
        _timed(pattern.match, line)
    _timed(lambda text: LIST_MARKER.sub("", text), line)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(["|", "-", "---", ":", " ", "\t", "#", "*", "1", ".", ")", "```", "~~~", "a"]),
                min_size=1, max_size=6).map("".join))
def test_any_repeated_markdown_line_is_read_in_linear_time(unit):
    from rag_core.chunking.markdown_blocks import FENCE_LINE, HEADING_LINE, LIST_MARKER, TABLE_DELIMITER_ROW

    line = unit * (40_000 // len(unit) + 1) + "x"
    for pattern in (FENCE_LINE, HEADING_LINE, LIST_MARKER, TABLE_DELIMITER_ROW):
        _timed(pattern.match, line)


# The patterns replaced, to compare with on short texts (on long ones they take quadratic or exponential time).
OLD_TAGGED_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
OLD_MARKERS = re.compile(r"(?<!!)\[((?:\s*[\w.:#-]+\s*[,;]?)+)\](?!\()")


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(["<tool_call>", "</tool_call>", "{", "}", " ", "\n", "a", '"name"']),
                max_size=14).map("".join))
def test_tagged_calls_are_the_ones_the_old_pattern_found(text):
    assert _tagged_calls(text) == [(m.start(), m.end(), m.group(1)) for m in OLD_TAGGED_CALL.finditer(text)]


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="[]a1 ,;!(\n.#", max_size=10))
def test_citation_markers_are_the_ones_the_old_pattern_found(text):
    assert [(m.span(), m.group(1)) for m in _MARKERS.finditer(text)] == \
           [(m.span(), m.group(1)) for m in OLD_MARKERS.finditer(text)]


@pytest.mark.parametrize("reply", [
    "<tool_call>{" * 100_000,  # 1.2 MB of unclosed tags: was 378 s (192 KB: 7.2 s)
    "{" * 1_200_000,
    "x}" + "{" * 600_000,
])
def test_json_object_in_is_linear_and_says_what_is_wrong(reply):
    from rag_core.llm import json_object_in

    started = time.perf_counter()
    with pytest.raises(ValueError, match="no JSON object|malformed"):
        json_object_in(reply)
    assert time.perf_counter() - started < TIME_CAP_S


def test_json_object_in_still_reads_the_object_among_prose():
    from rag_core.llm import json_object_in

    assert json_object_in('Sure: {"a": {"b": 1}} done') == {"a": {"b": 1}}


_OLD_TRAILING_FRAMING = re.compile(
    r"(?:[\s,.;!]*(?:please|thanks?(?: you)?(?: (?:so|very) much)?|thx|cheers|for me|if possible))+[\s.!]*$",
    re.IGNORECASE,
)


@pytest.mark.parametrize("query", [
    "x" + " ," * 1_999 + "y",  # separators that never end in a phrase: the old rule retried them from each position
    "rotate" + " please" * 570 + " !",
    "x" + ";" * 3_990 + "y",
])
def test_strip_framing_is_linear(query):
    from rag_core.retrieval.rewrite import strip_framing

    _timed(strip_framing, query, cap=0.2)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["rotate", "key", "please", "thanks", "thank you so much", "for me", "thx", ",", ".",
                                 "!", ";", " ", "cheers", "if possible", "Please"]), max_size=12))
def test_trailing_framing_rule_matches_the_old_pattern(parts):
    from rag_core.retrieval.rewrite import _strip_trailing_framing

    text = " ".join(" ".join(parts).split())
    assert _strip_trailing_framing(text) == _OLD_TRAILING_FRAMING.sub("", text)


def test_previous_queries_are_length_checked_before_the_rules_run():
    from rag_core.retrieval.rewrite import rewrite_query

    started = time.perf_counter()
    with pytest.raises(ValueError, match="previous query 1 is 20,003 characters long; keep it under 4,000"):
        rewrite_query("and its default?", ["x" + " ," * 10_000 + "yz"])
    assert time.perf_counter() - started < TIME_CAP_S


def test_a_query_with_a_lone_surrogate_is_refused_clearly():
    from rag_core.retrieval.rewrite import check_query

    with pytest.raises(ValueError, match=r"lone surrogate \(U\+DCFF\) at character 7"):
        check_query("rotate\udcff key")
    assert check_query("rotate 🔑 key") == "rotate 🔑 key"
