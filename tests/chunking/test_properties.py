"""Property tests over generated Markdown: offsets, coverage, size bounds, integrity, stable ids, containment."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.chunking import chunk_document, fixed_chunks, lint
from rag_core.chunking.structure import size_limit
from rag_core.config import ChunkingConfig
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Document

WORDS = st.sampled_from(
    ["token", "retry", "the", "service", "Auth", "é", "naïve", "数据", "e.g.", "v2.1", "<b>", "`x`", "**bold**"]
)
SENTENCE = st.builds(
    lambda words, end: " ".join(words).capitalize() + end,
    st.lists(WORDS, min_size=2, max_size=14),
    st.sampled_from([".", "!", "?", ":", ""]),
)
PARAGRAPH = st.lists(SENTENCE, min_size=1, max_size=8).map(" ".join)
HEADING = st.builds(lambda level, title: "#" * level + " " + title, st.integers(1, 4), SENTENCE)
CODE_LINE = st.sampled_from(["# not a heading", "x = 1", "def f(a):", "    return a", "", "print('# hi')", "}"])
FENCE = st.builds(
    lambda lang, lines: f"```{lang}\n" + "\n".join(lines) + "\n```",
    st.sampled_from(["python", "js", ""]),
    st.lists(CODE_LINE, min_size=1, max_size=30),
)
TABLE = st.builds(
    lambda rows: "| key | value |\n|-----|-------|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows),
    st.lists(st.tuples(WORDS, SENTENCE), min_size=1, max_size=12),
)
LIST = st.builds(
    lambda items, ordered: "\n".join(f"{i + 1}. {t}" if ordered else f"- {t}" for i, t in enumerate(items)),
    st.lists(PARAGRAPH, min_size=1, max_size=8),
    st.booleans(),
)
QUOTE = PARAGRAPH.map(lambda p: "> " + p)
REFERENCES = st.lists(st.sampled_from(["[a]: https://a.example/x", "[PEP 8]: https://peps.python.org/pep-0008/"]),
                      min_size=1, max_size=3).map("\n".join)
BLOCK = st.one_of(HEADING, PARAGRAPH, FENCE, TABLE, LIST, QUOTE, REFERENCES, st.just("---"))
DOCUMENT = st.lists(BLOCK, min_size=1, max_size=14).map(lambda blocks: "\n\n".join(blocks) + "\n")
CONFIG = st.builds(lambda m, o: ChunkingConfig(max_tokens=m, overlap=o), st.sampled_from([32, 48, 96]),
                   st.sampled_from([0, 8, 16]))

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def make(text: str) -> Document:
    return Document("p1", "gen.md", "markdown", len(text), "", text)


@SETTINGS
@given(DOCUMENT, CONFIG)
def test_verbatim_offsets_are_exact(text, config):
    for chunk in chunk_document(make(text), config):
        assert chunk.verbatim == (text[chunk.start : chunk.end] == chunk.text) or not chunk.verbatim
        if chunk.verbatim:
            assert text[chunk.start : chunk.end] == chunk.text


@SETTINGS
@given(DOCUMENT, CONFIG)
def test_every_non_blank_character_is_in_a_paragraph_chunk(text, config):
    covered = bytearray(len(text))
    for chunk in chunk_document(make(text), config, "paragraph"):
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert missing == []


@SETTINGS
@given(DOCUMENT, CONFIG)
def test_no_chunk_over_the_maximum_unless_flagged(text, config):
    for chunk in chunk_document(make(text), config):
        if not chunk.oversized:
            limit = size_limit(chunk.granularity, config.max_tokens)
            assert chunk.tokens <= limit
            assert count_tokens(chunk.text) <= limit


@SETTINGS
@given(DOCUMENT, CONFIG)
def test_lint_finds_no_violations(text, config):
    doc = make(text)
    report = lint(doc, chunk_document(doc, config), max_tokens=config.max_tokens)
    assert report.counts["code_fence_cut"] == 0
    assert report.total == 0, report.violations[:3]


@SETTINGS
@given(DOCUMENT, CONFIG)
def test_ids_stable_and_unique(text, config):
    first = chunk_document(make(text), config)
    second = chunk_document(make(text), config)
    assert [c.id for c in first] == [c.id for c in second]
    assert len({c.id for c in first}) == len(first)


@SETTINGS
@given(DOCUMENT, CONFIG)
def test_parents_contain_their_children(text, config):
    chunks = chunk_document(make(text), config)
    by_id = {c.id: c for c in chunks}
    for chunk in chunks:
        for child_id in chunk.child_ids:
            assert by_id[child_id].parent_id == chunk.id
        if chunk.parent_id is None:
            assert chunk.granularity == "document"
            continue
        parent = by_id[chunk.parent_id]
        assert chunk.id in parent.child_ids
        if chunk.granularity == "section" and parent.granularity in ("section", "document"):
            # A subsection lies within its parent section (which may be stored as several parts).
            lo = parent.metadata.get("section_start", parent.start)
            hi = parent.metadata.get("section_end", parent.end)
            assert lo <= chunk.start and chunk.end <= hi
        else:
            assert parent.start <= chunk.start and chunk.end <= parent.end


@SETTINGS
@given(DOCUMENT, st.lists(st.integers(0, 10_000), max_size=12))
def test_lint_judges_any_span_list(text, cuts):
    doc = make(text)
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    chunks = [Chunk(f"c{i}", "p1", "paragraph", "prose", text[s:e], s, e, count_tokens(text[s:e]))
              for i, (s, e) in enumerate(zip(points, points[1:], strict=False))]
    report = lint(doc, chunks, max_tokens=64)
    assert report.total == sum(n for kind, n in report.counts.items() if kind != "oversized_atomic")
    assert report.total == len(report.violations)
    assert all(0 <= v.start <= v.end <= len(text) for v in report.violations)
    if len(chunks) == 1:  # the whole document as one chunk cuts nothing (headings inside are another matter)
        cuts = ("code_fence_cut", "table_cut_or_headerless_row", "list_item_cut", "sentence_cut")
        assert [report.counts[kind] for kind in cuts] == [0, 0, 0, 0]


@SETTINGS
@given(DOCUMENT, st.sampled_from([16, 32, 64]), st.sampled_from([0, 4, 8]))
def test_fixed_windows_cover_the_text_verbatim(text, max_tokens, overlap):
    windows = fixed_chunks(make(text), max_tokens, overlap)
    assert all(text[c.start : c.end] == c.text and c.tokens <= max_tokens for c in windows)
    assert windows[0].start == 0 and windows[-1].end == len(text)
    assert all(b.start <= a.end for a, b in zip(windows, windows[1:], strict=False))
