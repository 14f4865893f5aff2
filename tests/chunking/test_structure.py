import pytest

from rag_core.chunking import chunk_document
from rag_core.config import ChunkingConfig
from rag_core.tokens import count_tokens

GUIDE = """# Auth

Tokens expire after one hour.

## JWT flow

The flow is:

1. Sign the claims.
2. Send the token.

```bash
# get a token
curl -X POST /token
```

### Claims

| claim | meaning |
|-------|---------|
| sub   | user id |
| exp   | expiry  |

# FAQ

Why JWT? Because it is stateless.
"""


def by_text(chunks, prefix):
    return next(c for c in chunks if c.text.startswith(prefix))


def test_passages_pack_the_blocks_under_one_heading(make_doc):
    chunks = chunk_document(make_doc(GUIDE), ChunkingConfig(), "paragraph")
    assert [(c.chunk_type, c.text) for c in chunks] == [
        ("prose", "# Auth\n\nTokens expire after one hour."),
        ("code", GUIDE[GUIDE.index("## JWT flow") : GUIDE.index("\n\n### Claims")]),
        ("table", GUIDE[GUIDE.index("### Claims") : GUIDE.index("\n\n# FAQ")]),
        ("prose", "# FAQ\n\nWhy JWT? Because it is stateless."),
    ]
    assert [c.heading_path for c in chunks] == [["Auth"], ["Auth", "JWT flow"], ["Auth", "JWT flow", "Claims"], ["FAQ"]]
    assert chunks[1].language == "bash"
    assert all(GUIDE[c.start : c.end] == c.text and c.verbatim for c in chunks)


def test_max_tokens_sets_the_passage_size(make_doc):
    """A smaller maximum cuts passages between blocks; a heading and a lead-in stay with what they introduce."""
    chunks = chunk_document(make_doc(GUIDE), ChunkingConfig(max_tokens=32, overlap=4), "paragraph")
    assert [(c.chunk_type, c.text) for c in chunks] == [
        ("prose", "# Auth\n\nTokens expire after one hour."),
        ("list", "## JWT flow\n\nThe flow is:\n\n1. Sign the claims.\n2. Send the token."),
        ("code", "```bash\n# get a token\ncurl -X POST /token\n```"),
        ("table", GUIDE[GUIDE.index("### Claims") : GUIDE.index("\n\n# FAQ")]),
        ("prose", "# FAQ\n\nWhy JWT? Because it is stateless."),
    ]
    long_section = "# Notes\n\n" + "\n\n".join(f"Note {i} says one more thing about tokens." for i in range(40))
    counts = [len(chunk_document(make_doc(long_section), ChunkingConfig(max_tokens=m, overlap=4), "paragraph"))
              for m in (32, 64, 512)]
    assert counts[0] > counts[1] > counts[2]


def test_passages_are_balanced_and_never_end_with_a_heading_or_lead_in(make_doc):
    paragraphs = [f"Paragraph {i} explains one more detail of the retry policy." for i in range(6)]
    text = "# Retries\n\n" + "\n\n".join(paragraphs[:3]) + "\n\nThe steps are:\n\n- one\n- two\n\n" + \
        "\n\n".join(paragraphs[3:])
    chunks = chunk_document(make_doc(text), ChunkingConfig(max_tokens=48, overlap=4), "paragraph")
    sizes = [c.tokens for c in chunks]
    assert len(chunks) >= 2 and max(sizes) <= 48
    for chunk in chunks:
        assert not chunk.text.rstrip().endswith(":") and not chunk.text.rstrip().endswith("# Retries")
    assert any("The steps are:\n\n- one" in c.text for c in chunks)
    assert all(text[c.start : c.end] == c.text for c in chunks)


def test_sections_nest_by_heading_level_with_links(make_doc, at):
    chunks = chunk_document(make_doc(GUIDE), ChunkingConfig())
    sections = at(chunks, "section")
    assert [(s.heading_path, s.start, s.end) for s in sections] == [
        (["Auth"], 0, GUIDE.index("\n\n# FAQ")),
        (["Auth", "JWT flow"], GUIDE.index("## JWT"), GUIDE.index("\n\n# FAQ")),
        (["Auth", "JWT flow", "Claims"], GUIDE.index("### Claims"), GUIDE.index("\n\n# FAQ")),
        (["FAQ"], GUIDE.index("# FAQ"), len(GUIDE) - 1),
    ]
    by_id = {c.id: c for c in chunks}
    auth, jwt, claims, faq = sections
    (document,) = at(chunks, "document")
    assert auth.parent_id == document.id and faq.parent_id == document.id
    assert jwt.parent_id == auth.id and claims.parent_id == jwt.id
    assert document.child_ids == [auth.id, faq.id]
    assert auth.contains_types == ["code", "heading", "list", "prose", "table"]
    assert faq.contains_types == ["heading", "prose"]
    code = by_text(at(chunks, "paragraph"), "## JWT flow")
    assert by_id[code.parent_id] is jwt
    assert code.id in jwt.child_ids
    assert jwt.chunk_type == "table" and faq.chunk_type == "prose"  # dominant by tokens
    table = by_text(at(chunks, "paragraph"), "### Claims")
    assert table.parent_id == claims.id


def test_rows_repeat_the_header_and_keep_their_span(make_doc, at):
    chunks = chunk_document(make_doc(GUIDE), ChunkingConfig())
    rows = at(chunks, "row")
    assert [r.text for r in rows] == [
        "| claim | meaning |\n|-------|---------|\n| sub   | user id |",
        "| claim | meaning |\n|-------|---------|\n| exp   | expiry  |",
    ]
    assert [GUIDE[r.start : r.end] for r in rows] == ["| sub   | user id |", "| exp   | expiry  |"]
    assert all(not r.verbatim and r.chunk_type == "table" for r in rows)
    table = by_text(at(chunks, "paragraph"), "### Claims")
    assert {r.parent_id for r in rows} == {table.id}
    assert table.child_ids == [r.id for r in rows]


def test_granularity_filter_and_bad_granularity(make_doc):
    doc = make_doc(GUIDE)
    assert {c.granularity for c in chunk_document(doc, ChunkingConfig(), "row")} == {"row"}
    assert len(chunk_document(doc, ChunkingConfig(), "document")) == 1
    with pytest.raises(ValueError, match="allowed: document, section, paragraph, row, all"):
        chunk_document(doc, ChunkingConfig(), "chapter")


def test_ids_are_stable_and_depend_on_parameters(make_doc):
    doc = make_doc(GUIDE)
    first = [c.id for c in chunk_document(doc, ChunkingConfig())]
    assert first == [c.id for c in chunk_document(make_doc(GUIDE), ChunkingConfig())]
    assert len(set(first)) == len(first)
    other = [c.id for c in chunk_document(doc, ChunkingConfig(max_tokens=256))]
    assert not set(first) & set(other)


def test_heading_jump_h1_to_h3_nests_under_h1(make_doc):
    text = "# Top\n\nIntro.\n\n### Deep\n\nBody.\n\n## Mid\n\nMore.\n"
    sections = chunk_document(make_doc(text), ChunkingConfig(), "section")
    assert [s.heading_path for s in sections] == [["Top"], ["Top", "Deep"], ["Top", "Mid"]]
    assert sections[1].parent_id == sections[0].id and sections[2].parent_id == sections[0].id


def test_oversized_prose_splits_at_sentences_with_overlap(make_doc):
    sentences = [f"Sentence {w} covers the retry policy of the service." for w in ("one", "two", "three", "four")]
    text = " ".join(sentences)
    chunks = chunk_document(make_doc(text), ChunkingConfig(max_tokens=32, overlap=12), "paragraph")
    assert [c.text for c in chunks] == [
        " ".join(sentences[0:2]), " ".join(sentences[1:3]), " ".join(sentences[2:4])
    ]
    assert [c.continued for c in chunks] == [False, True, True]
    assert all(text[c.start : c.end] == c.text and count_tokens(c.text) <= 32 for c in chunks)


def test_oversized_code_is_refenced_per_piece(make_doc):
    body = "\n\n".join(f"def handler_{i}(event):\n    return compute(event, {i})" for i in range(4))
    text = f"Intro paragraph that stands on its own.\n\n```python\n{body}\n```\n"
    chunks = chunk_document(make_doc(text), ChunkingConfig(max_tokens=32, overlap=4), "paragraph")
    code = [c for c in chunks if c.text.startswith("```python")]
    assert chunks[0].text.startswith("Intro paragraph") and chunks[0].text.endswith("compute(event, 0)\n```")
    code = [chunks[0]] + code
    assert [c.text.removeprefix("Intro paragraph that stands on its own.\n\n") for c in code] == [
        f"```python\ndef handler_{i}(event):\n    return compute(event, {i})\n```" for i in range(4)
    ]
    assert all(not c.verbatim and c.continued and c.language == "python" for c in code)
    # The span a piece stands for: the first reaches back to the opening fence, the last to the closing one.
    assert text[code[0].start : code[0].end] == text[: text.index("\ndef handler_1")].rstrip()
    assert text[code[1].start : code[1].end] == "def handler_1(event):\n    return compute(event, 1)"
    assert text[code[3].start : code[3].end] == "def handler_3(event):\n    return compute(event, 3)\n```"


def test_oversized_table_pieces_keep_the_header(make_doc):
    rows = "\n".join(f"| {i} | item number {i} |" for i in range(6))
    text = f"| id | name |\n|----|------|\n{rows}\n"
    chunks = chunk_document(make_doc(text), ChunkingConfig(max_tokens=32, overlap=4), "paragraph")
    assert [c.text for c in chunks] == [
        "| id | name |\n|----|------|\n| 0 | item number 0 |\n| 1 | item number 1 |",
        "| id | name |\n|----|------|\n| 2 | item number 2 |\n| 3 | item number 3 |",
        "| id | name |\n|----|------|\n| 4 | item number 4 |\n| 5 | item number 5 |",
    ]
    assert [c.verbatim for c in chunks] == [True, False, False]


def test_lists_split_only_between_items_and_huge_item_is_flagged(make_doc):
    items = [f"- item {i} describes a configuration flag in detail" for i in range(4)]
    huge = "- " + " ".join(["word"] * 60)
    text = "\n".join(items + [huge]) + "\n"
    chunks = chunk_document(make_doc(text), ChunkingConfig(max_tokens=32, overlap=4), "paragraph")
    assert [c.text for c in chunks] == ["\n".join(items[0:2]), "\n".join(items[2:4]), huge]
    assert [c.oversized for c in chunks] == [False, False, True]


def test_python_source_splits_at_top_level_definitions(make_doc):
    source = (
        "import os\n\nLIMIT = 3\n\n\n@cache\ndef load(path):\n    return os.read(path)\n\n\n"
        "class Store:\n    def get(self):\n        return 1\n"
    )
    doc = make_doc(source, doc_type="code", language="python", name="store.py")
    paragraphs = chunk_document(doc, ChunkingConfig(max_tokens=32, overlap=4), "paragraph")
    assert [c.text for c in paragraphs] == [
        "import os\n\nLIMIT = 3\n\n\n@cache\ndef load(path):\n    return os.read(path)",
        "class Store:\n    def get(self):\n        return 1",
    ]
    assert [c.heading_path for c in paragraphs] == [["def load"], ["class Store"]]
    (whole,) = chunk_document(doc, ChunkingConfig(), "paragraph")
    assert whole.text == source.rstrip("\n")
    assert all(c.chunk_type == "code" and c.language == "python" for c in paragraphs)


def test_other_languages_split_at_blank_line_blocks(make_doc):
    body = "\n".join(f"    total += values[{i}] * weights[{i}]" for i in range(3))
    source = f"package main\n\nfunc a() {{\n\n{body}\n}}\n\nfunc b() {{\n{body}\n}}\n"
    doc = make_doc(source, doc_type="code", language="go", name="main.go")
    assert [c.text for c in chunk_document(doc, ChunkingConfig(max_tokens=48, overlap=2), "paragraph")] == [
        f"package main\n\nfunc a() {{\n\n{body}\n}}", f"func b() {{\n{body}\n}}"
    ]


def test_pdf_pages_are_carried_into_metadata(make_doc):
    text = "First page text.\n\nSecond page text.\n"
    doc = make_doc(text, metadata={"pages": [[0, 1], [18, 2]]})
    paragraphs = chunk_document(doc, ChunkingConfig(max_tokens=32, overlap=4), "paragraph")
    assert [c.metadata["pages"] for c in paragraphs] == [[1, 2]]
    paragraphs = chunk_document(make_doc(text.replace("\n\n", "\n\n# Two\n\n"), metadata={"pages": [[0, 1], [18, 2]]}),
                                ChunkingConfig(), "paragraph")
    assert [c.metadata["pages"] for c in paragraphs] == [[1], [2]]
    assert chunk_document(doc, ChunkingConfig(), "document")[0].metadata["pages"] == [1, 2]


def test_empty_document_has_no_chunks(make_doc):
    assert chunk_document(make_doc("   \n\n"), ChunkingConfig()) == []


def test_oversized_python_class_splits_between_methods(make_doc):
    body = "        value = self.data[key]\n\n        return value"
    methods = [f"    def get_{i}(self, key):\n{body} + {i}" for i in range(3)]
    source = "class Store:\n" + "\n\n".join(methods) + "\n"
    doc = make_doc(source, doc_type="code", language="python", name="store.py")
    pieces = chunk_document(doc, ChunkingConfig(max_tokens=48), "paragraph")
    # The blank line inside each method is never chosen: cuts fall before a method (the least indented statement).
    assert [c.text for c in pieces] == ["class Store:\n" + methods[0], methods[1] + "\n\n" + methods[2]]
    assert [c.continued for c in pieces] == [False, True]
    assert all(c.verbatim and source[c.start : c.end] == c.text for c in pieces)
