"""YAML front matter of a Markdown file: document metadata, never chunk text; a bad block never stops a load."""

from __future__ import annotations

from rag_core.chunking import chunk_document
from rag_core.loaders import load_bytes
from rag_core.loaders.document_store import parse_document
from rag_core.loaders.front_matter import split_front_matter

GUIDE = (b"---\n"
         b"title: Dependencies\n"
         b"description: Adding packages from a registry or git.\n"
         b"date: 2024-05-01\n"
         b"hide:\n  - navigation\n"
         b"---\n\n"
         b"# Git dependencies\n\n"
         b"Add a dependency from a git repository with `pkg add --git URL`.\n")


def test_front_matter_becomes_metadata_and_no_chunk_carries_it():
    doc = load_bytes("guides/deps.md", GUIDE)
    assert doc.text == GUIDE.decode()  # the file as uploaded: offsets index it
    assert doc.text[doc.metadata["front_matter_chars"]:].startswith("# Git dependencies\n")
    assert doc.metadata["title"] == "Dependencies"
    assert doc.metadata["front_matter"] == {"title": "Dependencies",
                                            "description": "Adding packages from a registry or git.",
                                            "date": "2024-05-01"}  # lists and mappings are not kept
    chunks = chunk_document(doc)
    assert chunks
    for chunk in chunks:
        assert "title:" not in chunk.text and "---" not in chunk.text and "description" not in chunk.text
        assert doc.text[chunk.start:chunk.end] == chunk.text or chunk.metadata.get("synthetic")
    assert all(chunk.heading_path[:1] == ["Git dependencies"] for chunk in chunks if chunk.granularity != "document")


def test_stored_document_with_front_matter_reads_back():
    doc = load_bytes("deps.md", GUIDE)
    again = parse_document(doc.to_dict())
    assert again.metadata["title"] == "Dependencies" and again.text == doc.text


def test_malformed_front_matter_is_kept_as_text_with_a_warning():
    doc = load_bytes("bad.md", b"---\ntitle: [unclosed\nauthor: me\n---\n\n# Heading\n\nBody text.\n")
    assert doc.text.startswith("---\ntitle: [unclosed")
    assert "title" not in doc.metadata
    assert any("front matter could not be read" in w and "kept as text" in w for w in doc.metadata["warnings"])


def test_yaml_is_parsed_safely_no_python_objects():
    front = split_front_matter("x.md", "---\ntitle: !!python/object/apply:os.system ['echo hi']\n---\nBody\n")
    assert front.metadata == {}
    assert front.warning is not None and front.text.startswith("---")


def test_a_document_that_opens_with_a_rule_is_not_front_matter():
    text = "---\n\nJust some prose between two rules.\n\n---\n\nMore prose.\n"
    doc = load_bytes("rules.md", text.encode())
    assert doc.text == text
    assert "warnings" not in doc.metadata and "front_matter" not in doc.metadata


def test_only_markdown_files_lose_front_matter():
    text = "---\ntitle: Notes\n---\nplain text file\n"
    assert load_bytes("notes.txt", text.encode()).text == text


def test_front_matter_alone_is_refused_with_a_message():
    import pytest

    from rag_core.errors import LoadError

    with pytest.raises(LoadError, match="only YAML front matter"):
        load_bytes("empty.md", b"---\ntitle: Nothing here\n---\n\n")


def test_deeply_nested_yaml_does_not_crash():
    body = "key: " + "[" * 5000 + "]" * 5000 + "\n"
    doc = load_bytes("deep.md", f"---\n{body}---\n\n# Title\n\ntext\n".encode())
    assert "# Title" in doc.text


def _assert_offsets_index_the_file(file_text: str, doc, config=None) -> None:
    from rag_core.chunking.fixed import fixed_chunks

    assert doc.text == file_text
    chunks = chunk_document(doc, config) + fixed_chunks(doc, max_tokens=8, overlap=2)
    assert len(chunks) > 3
    for chunk in chunks:
        if chunk.verbatim:
            assert file_text[chunk.start:chunk.end] == chunk.text, chunk
        assert chunk.start >= doc.metadata["front_matter_chars"]
        assert "title:" not in chunk.text


def test_offsets_index_the_file_with_front_matter():
    from rag_core.config import ChunkingConfig

    text = GUIDE.decode() + "\n## Lists\n\n- one\n- two\n\n```sh\npkg add --git URL\n```\n"
    doc = load_bytes("deps.md", text.encode())
    _assert_offsets_index_the_file(text, doc)
    _assert_offsets_index_the_file(text, doc, ChunkingConfig(max_tokens=32, overlap=0))


def test_offsets_with_crlf_and_bom_index_the_decoded_lf_text():
    """The loader drops a BOM and turns CRLF into LF; offsets index that text (front matter included)."""
    text = GUIDE.decode() + "\n## More\n\nSecond section.\n"
    doc = load_bytes("deps.md", b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    _assert_offsets_index_the_file(text, doc)


def test_front_matter_of_lists_only_keeps_offsets_on_the_file():
    text = "---\ninclude_yaml:\n  topic_repos: data/topic_repos.yml\n---\n\n# External Links\n\nMany posts.\n"
    doc = load_bytes("links.md", text.encode())
    assert "front_matter" not in doc.metadata and doc.text == text
    chunks = chunk_document(doc)
    assert chunks and all(text[c.start:c.end] == c.text for c in chunks if c.verbatim)
    assert all("include_yaml" not in c.text for c in chunks)


def test_front_matter_of_lists_alone_is_refused_with_a_message():
    import pytest

    from rag_core.errors import LoadError

    with pytest.raises(LoadError, match="only YAML front matter"):
        load_bytes("empty.md", b"---\nhide:\n  - navigation\n---\n\n")
