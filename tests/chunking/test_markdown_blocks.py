from rag_core.chunking.markdown_blocks import line_starts, parse_markdown

SOURCE = """---
title: Auth
---
# Auth

Intro text.

### JWT flow

```python
# not a heading
token = sign(claims)
```

!!! note "Keys"
    Rotate keys monthly.

> Quoted advice.

<div>raw html</div>

| name | value |
|------|-------|
| a    | 1     |
| b    | 2     |
"""


def test_blocks_kinds_and_exact_spans():
    parsed = parse_markdown(SOURCE)
    kinds = [b.kind for b in parsed.blocks]
    assert kinds == ["front_matter", "heading", "paragraph", "heading", "fence", "admonition", "blockquote", "html",
                     "table"]
    texts = [SOURCE[b.start : b.end] for b in parsed.blocks]
    assert texts[0] == "---\ntitle: Auth\n---"
    assert texts[1] == "# Auth"
    assert texts[4] == "```python\n# not a heading\ntoken = sign(claims)\n```"
    assert texts[5] == '!!! note "Keys"\n    Rotate keys monthly.'
    assert texts[7] == "<div>raw html</div>"


def test_hash_in_fence_is_not_a_heading_and_levels_are_kept():
    parsed = parse_markdown(SOURCE)
    headings = [(b.title, b.level) for b in parsed.blocks if b.kind == "heading"]
    assert headings == [("Auth", 1), ("JWT flow", 3)]
    assert [SOURCE[s:e] for s, e, _ in parsed.headings] == ["# Auth", "### JWT flow"]


def test_fence_language_body_and_table_rows():
    parsed = parse_markdown(SOURCE)
    fence = next(b for b in parsed.blocks if b.kind == "fence")
    assert fence.language == "python"
    assert SOURCE[fence.fence_body[0] : fence.fence_body[1]] == "# not a heading\ntoken = sign(claims)"
    table = next(b for b in parsed.blocks if b.kind == "table")
    assert SOURCE[table.header[0] : table.header[1]] == "| name | value |"
    assert SOURCE[table.delimiter[0] : table.delimiter[1]] == "|------|-------|"
    assert [SOURCE[s:e] for s, e in table.items] == ["| a    | 1     |", "| b    | 2     |"]


def test_list_items_and_crlf_offsets():
    text = "Intro:\r\n\r\n- one\r\n- two\r\n  more\r\n"
    parsed = parse_markdown(text)
    lst = parsed.blocks[1]
    assert lst.kind == "list"
    assert [text[s:e] for s, e in lst.items] == ["- one", "- two\r\n  more"]
    assert line_starts("a\r\nb\rc\n") == [0, 3, 5, 7]


def test_unclosed_fence_runs_to_end():
    text = "Text\n\n```js\nlet a = 1;\n"
    fence = parse_markdown(text).blocks[1]
    assert fence.kind == "fence"
    assert text[fence.start : fence.end] == "```js\nlet a = 1;"
    assert text[fence.fence_body[0] : fence.fence_body[1]] == "let a = 1;"


def test_link_reference_definitions_become_a_block():
    text = "Read [the docs][d].\n\n[d]: https://docs.example/\n[e]: https://e.example/\n\n# Next\n"
    parsed = parse_markdown(text)
    assert [(b.kind, text[b.start : b.end]) for b in parsed.blocks] == [
        ("paragraph", "Read [the docs][d]."),
        ("references", "[d]: https://docs.example/\n[e]: https://e.example/"),
        ("heading", "# Next"),
    ]
