import pytest

from rag_core.chunking import chunk_document, fixed_chunks, lint
from rag_core.config import ChunkingConfig
from rag_core.types import Chunk

TEXT = """# Setup

Install the package. Then run it.

```python
x = 1
y = 2
```

| a | b |
|---|---|
| 1 | 2 |
| 3 | 4 |

- first item
- second item
"""


def spans_to_chunks(text, cuts):
    return [
        Chunk(id=f"c{i}", doc_id="doc1", granularity="paragraph", chunk_type="prose", text=text[s:e], start=s, end=e,
              tokens=5)
        for i, (s, e) in enumerate(zip(cuts, cuts[1:], strict=False))
    ]


def test_lint_counts_and_locates_cuts(make_doc):
    doc = make_doc(TEXT)
    cuts = [0, TEXT.index("Then"), TEXT.index("y = 2"), TEXT.index("| 3 |"), TEXT.index("second") + 3, len(TEXT)]
    report = lint(doc, spans_to_chunks(TEXT, cuts))
    assert report.counts == {
        "code_fence_cut": 2, "table_cut_or_headerless_row": 1, "list_item_cut": 2, "heading_not_at_start": 0,
        "sentence_cut": 0, "over_max_tokens": 0, "oversized_atomic": 0,
    }
    assert report.total == 5
    fence = TEXT.index("```python"), TEXT.index("```\n\n|") + 3
    assert [(v.kind, v.chunk_id, v.start, v.end) for v in report.violations[:2]] == [
        ("code_fence_cut", "c1", *fence), ("code_fence_cut", "c2", *fence)
    ]
    table_violation = next(v for v in report.violations if v.kind == "table_cut_or_headerless_row")
    assert table_violation.chunk_id == "c3" and "without its header row" in table_violation.detail


def test_lint_sentence_cut_and_heading_inside(make_doc):
    text = "Alpha beta gamma. Delta epsilon.\n\n## Next\n\nMore text here.\n"
    doc = make_doc(text)
    cuts = [0, text.index("gamma"), len(text)]
    report = lint(doc, spans_to_chunks(text, cuts))
    assert report.counts["sentence_cut"] == 2  # the end of c0 and the start of c1 fall inside one sentence
    assert report.counts["heading_not_at_start"] == 1
    assert report.violations[-1].start == text.index("## Next")


def test_lint_size_findings_separate_atomic_from_splittable(make_doc):
    text = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(40)) + "\n```\n\nShort one. Short two.\n"
    doc = make_doc(text)
    fence_end = text.index("\n\nShort")
    oversized = Chunk("a", "doc1", "paragraph", "code", text[:fence_end], 0, fence_end, 300)
    merged = Chunk("b", "doc1", "paragraph", "prose", text[fence_end + 2 :].rstrip(), fence_end + 2, len(text) - 1, 40)
    report = lint(doc, [oversized, merged], max_tokens=32)
    assert report.counts["oversized_atomic"] == 1 and report.counts["over_max_tokens"] == 1
    assert report.total == 1  # the flagged atomic block is reported apart
    assert [v.chunk_id for v in report.oversized] == ["a"]


def test_structure_chunker_is_clean_where_fixed_windows_cut(make_doc):
    doc = make_doc(TEXT)
    structure = chunk_document(doc, ChunkingConfig(max_tokens=32, overlap=4))
    assert lint(doc, structure, max_tokens=32).total == 0
    windows = fixed_chunks(doc, max_tokens=16, overlap=4)
    counts = lint(doc, windows, max_tokens=16).counts
    assert counts["code_fence_cut"] == 3 and counts["table_cut_or_headerless_row"] == 4
    assert counts["list_item_cut"] == 1


def test_fixed_windows_are_verbatim_and_overlap(make_doc):
    doc = make_doc(TEXT)
    windows = fixed_chunks(doc, max_tokens=16, overlap=4)
    assert [(c.start, c.end, c.tokens) for c in windows] == [(0, 57, 16), (47, 74, 16), (66, 96, 16), (91, 119, 16),
                                                             (107, 139, 10)]
    assert all(TEXT[c.start : c.end] == c.text and c.granularity == "paragraph" for c in windows)
    assert [c.position for c in windows] == [0, 1, 2, 3, 4]
    assert [c.id for c in windows] == [c.id for c in fixed_chunks(doc, max_tokens=16, overlap=4)]


def test_fixed_strategy_through_chunk_document(make_doc):
    doc = make_doc(TEXT)
    config = ChunkingConfig(strategy="fixed", max_tokens=32, overlap=8)
    assert [c.text for c in chunk_document(doc, config)] == [c.text for c in fixed_chunks(doc, 32, 8)]
    assert chunk_document(doc, config, "section") == []


def test_fixed_rejects_bad_arguments(make_doc):
    with pytest.raises(ValueError, match="overlap must be between 0 and max_tokens - 1"):
        fixed_chunks(make_doc(TEXT), max_tokens=16, overlap=16)
    assert fixed_chunks(make_doc("  \n"), 16, 4) == []


def test_lint_accepts_line_cuts_in_a_long_code_unit_without_blank_lines():
    """A data file (one JSON object, no blank line) bigger than the maximum is cut between lines by the
    chunker; the lint accepts cuts at a line's start or end there, and still flags one inside a line."""
    from rag_core.loaders import load_bytes

    text = "{\n" + ",\n".join(f'  "key_{i}": "value number {i} of the settings file"' for i in range(120)) + "\n}\n"
    doc = load_bytes("settings.json", text.encode())
    assert doc.doc_type == "code"
    chunks = chunk_document(doc, ChunkingConfig(max_tokens=128))
    assert len([c for c in chunks if c.granularity == "paragraph"]) > 3
    assert lint(doc, chunks, max_tokens=128).total == 0
    mid_line = text.index("value number 50") + 3
    cut = [Chunk("a", doc.id, "paragraph", "code", text[:mid_line], 0, mid_line, 1),
           Chunk("b", doc.id, "paragraph", "code", text[mid_line:], mid_line, len(text), 1)]
    assert lint(doc, cut, max_tokens=128).counts["code_fence_cut"] >= 1
