"""Property tests: any input either loads or raises LoadError — never another exception."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_core.errors import LoadError
from rag_core.loaders import load_bytes, safe_name

NAMES = st.sampled_from(["a.md", "b.txt", "c.csv", "d.html", "e.py", "f.pdf", "g.docx", "h", "i.tsv", "j.json"])
FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _loads_or_load_error(name: str, data: bytes):
    try:
        doc = load_bytes(name, data)
    except LoadError as e:
        assert str(e).startswith(safe_name(name) + ":")
        return None
    assert doc.text.strip()
    assert "\r" not in doc.text
    assert len(doc.id) == 16
    return doc


@FAST
@given(NAMES, st.binary(max_size=2048))
def test_any_bytes(name, data):
    _loads_or_load_error(name, data)


@FAST
@given(NAMES, st.binary(max_size=512))
def test_bytes_behind_a_magic_header(name, data):
    for magic in (b"%PDF-1.7\n", b"PK\x03\x04", b"\xef\xbb\xbf", b"\xff\xfe", b"<!DOCTYPE html><html>"):
        _loads_or_load_error(name, magic + data)


HTML_PIECES = st.sampled_from([
    "<p>", "</p>", "<ul>", "<li>", "</li>", "</ul>", "<table>", "<tr>", "<td>", "<th>", "</td>", "</tr>", "</table>",
    "<pre>", "</pre>", "<h2>", "</h2>", "<b>", "</b>", "<a href='javascript:x'>", "</a>", "<script>", "</script>",
    "<br>", "<blockquote>", "text", "|", "`", "```", "<!--", "-->", "<code class='language-py'>", "</code>", "&amp;",
])


@FAST
@given(st.lists(HTML_PIECES, max_size=80))
def test_any_tag_soup(pieces):
    doc = _loads_or_load_error("soup.html", ("<html><body>" + "".join(pieces)).encode())
    if doc is not None:
        assert doc.doc_type == "html"
        assert not re.search(r"\]\(\s*javascript:", doc.text, re.I)  # never a Markdown link to javascript:


@FAST
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1,
               max_size=300))
def test_utf8_markdown_round_trips(text):
    # NUL is excluded: "a\0b\0c\0d\0" is both valid UTF-8 and BOM-less UTF-16; such files are treated as UTF-16.
    doc = _loads_or_load_error("t.md", text.encode("utf-8"))
    if doc is not None and doc.doc_type == "markdown":
        assert doc.text == text.replace("\r\n", "\n").replace("\r", "\n")


CELL = st.text(alphabet=st.characters(blacklist_characters=";\t|", blacklist_categories=("Cs",)), max_size=8)


@FAST
@given(st.lists(st.lists(CELL, max_size=5), max_size=8))
def test_any_csv(rows):
    # ";", tab and "|" are left out of cells: a one-column file of "a;b" is honestly ambiguous.
    import csv
    import io

    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    doc = _loads_or_load_error("r.csv", buffer.getvalue().encode())
    kept = [r for r in rows if any(c.strip() for c in r)]
    if doc is not None:
        lines = doc.text.rstrip("\n").split("\n")
        assert lines[1] == "|" + "|".join(["---"] * max(len(r) for r in kept)) + "|"
        assert len(lines) == len(kept) + 1
        # every row has the same number of cell separators: pipes inside cells are escaped
        assert len({line.count(" | ") for line in lines if not line.startswith("|---")}) == 1


@FAST
@given(st.text(max_size=200))
def test_safe_name_never_has_separators_or_controls(name):
    clean = safe_name(name)
    assert clean and "/" not in clean and "\\" not in clean and ".." not in clean
    assert all(ch.isprintable() or ch == " " for ch in clean)
