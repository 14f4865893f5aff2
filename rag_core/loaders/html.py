"""HTML → Markdown that keeps the structure the chunker uses: headings, fenced code with its language,
tables, lists, block quotes. Scripts, styles and other non-content elements are dropped.

Hand-written on BeautifulSoup rather than markdownify because hostile input must not crash us: the walk
is depth-limited (10,000 nested ``<ul>`` or ``<blockquote>`` flatten to text past ``MAX_DEPTH`` instead of
raising RecursionError), ``javascript:`` links lose their target, and code blocks keep their language from
``class="language-x"`` so the chunker can flag them.
"""

from __future__ import annotations

import re

from bs4 import BeautifulSoup, CData, Comment, Declaration, Doctype, NavigableString, ProcessingInstruction, Tag

from rag_core.loaders.formats import Converted

MAX_DEPTH = 60
DROP_TAGS = frozenset({"script", "style", "noscript", "template", "iframe", "object", "embed", "svg", "canvas",
                       "head", "form", "button", "input", "select", "textarea", "meta", "link"})
BLOCK_TAGS = frozenset({"p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "figure",
                        "figcaption", "details", "summary", "address", "body", "html", "center", "dl", "dd", "dt",
                        "fieldset"})
HEADING_TAGS = {f"h{i}": i for i in range(1, 7)}
_LANG_RE = re.compile(r"^(?:language|lang|highlight-source|highlight)-([\w+#.-]+)$")
_SKIPPED_STRINGS = (Comment, Declaration, Doctype, ProcessingInstruction)
_SAFE_URL_RE = re.compile(r"^(?:https?:|mailto:|#|/|\./|\.\./|[\w\-./]+$)", re.I)
_HTML_START_RE = re.compile(r"^\s*(?:<\?xml[^>]*>\s*)?(?:<!--.*?-->\s*)*<(?:!doctype\s+html|html[\s>])", re.I | re.S)


def looks_like_html(text: str) -> bool:
    """Text that starts as an HTML page (a doctype or ``<html>``, after an XML declaration or comments)."""
    return bool(_HTML_START_RE.match(text[:4096]))


def convert_html(name: str, text: str) -> Converted:
    """An HTML page as Markdown, its ``<title>`` as the document's title."""
    markdown, title = html_to_markdown(text)
    return Converted(markdown, {"title": title} if title else {})


def html_to_markdown(html: str) -> tuple[str, str | None]:
    """Markdown for an HTML document, and its ``<title>`` if any."""
    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    title = _clean_inline(title_tag.get_text(" ")) if title_tag else None
    for element in soup.find_all(string=lambda s: isinstance(s, Comment)):
        element.extract()
    for tag in soup.find_all(DROP_TAGS):
        tag.decompose()
    blocks = _Converter().blocks(soup, depth=0)
    text = "\n\n".join(b for b in blocks if b.strip())
    text = re.sub(r"\n{3,}", "\n\n", text).strip() + "\n"
    if title and not re.match(r"^#\s", text):
        text = f"# {title}\n\n{text}"
    return text, title


def _clean_inline(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _child_tags(node: Tag, *names: str) -> list[Tag]:
    """Direct children named ``names`` (cheaper than ``find_all(recursive=False)`` on large pages)."""
    return [c for c in node.children if isinstance(c, Tag) and c.name.lower() in names]


def _code_language(tag: Tag) -> str:
    """Language of a ``<pre>`` from its ``<code>`` child, itself, or (Sphinx's ``highlight-x``) two wrappers up."""
    parents = [p for p in (tag.parent, tag.parent.parent if tag.parent else None) if isinstance(p, Tag)]
    for candidate in (*_child_tags(tag, "code")[:1], tag, *parents):
        lang = candidate.get("data-lang")
        if isinstance(lang, str) and re.fullmatch(r"[\w+#.-]{1,30}", lang):
            return lang.lower()
        for cls in candidate.get("class") or []:
            match = _LANG_RE.match(cls)
            if match and match.group(1).lower() not in ("default", "text", "none"):
                return match.group(1).lower()
    return ""


def _fence(code: str, language: str) -> str:
    code = code.strip("\n")
    longest = max((len(m) for m in re.findall(r"`{3,}", code)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{code}\n{ticks}"


def _cell(text: str) -> str:
    return _clean_inline(text).replace("\\", "\\\\").replace("|", "\\|")


class _Converter:
    """Turns a parsed tree into Markdown blocks (one string per block)."""

    def blocks(self, node: Tag, depth: int) -> list[str]:
        if depth > MAX_DEPTH:
            flat = _clean_inline(node.get_text(" "))
            return [flat] if flat else []
        out: list[str] = []
        inline: list[str] = []

        def flush() -> None:
            text = _clean_inline("".join(inline))
            if text:
                out.append(text)
            inline.clear()

        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _SKIPPED_STRINGS) or isinstance(child, CData):
                    inline.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name in HEADING_TAGS:
                flush()
                heading = _clean_inline(self.inline(child, depth + 1))
                if heading:
                    out.append("#" * HEADING_TAGS[name] + " " + heading)
            elif name == "pre":
                flush()
                for br in child.find_all("br"):
                    br.replace_with("\n")
                out.append(_fence(child.get_text(), _code_language(child)))
            elif name in ("ul", "ol"):
                flush()
                listing = self.list_block(child, depth + 1, indent=0)
                if listing:
                    out.append(listing)
            elif name == "table":
                flush()
                caption = " ".join(_clean_inline(c.get_text(" ")) for c in _child_tags(child, "caption"))
                if caption:
                    out.append(caption)
                table = self.table(child)
                if table:
                    out.append(table)
            elif name == "blockquote":
                flush()
                inner = "\n\n".join(self.blocks(child, depth + 1))
                if inner.strip():
                    out.append("\n".join("> " + line if line else ">" for line in inner.split("\n")))
            elif name == "hr":
                flush()
                out.append("---")
            elif name == "br":
                inline.append("\n")
            elif name in BLOCK_TAGS or name == "li":
                flush()
                out.extend(self.blocks(child, depth + 1))
            else:
                inline.append(self.inline_tag(child, depth + 1))
        flush()
        return out

    def inline(self, node: Tag, depth: int) -> str:
        """The Markdown of ``node``'s children, as one line of inline text."""
        if depth > MAX_DEPTH:
            return node.get_text(" ")
        parts: list[str] = []
        for child in node.children:
            if isinstance(child, NavigableString):
                if not isinstance(child, _SKIPPED_STRINGS) or isinstance(child, CData):
                    parts.append(str(child))
            elif isinstance(child, Tag):
                parts.append(self.inline_tag(child, depth + 1))
        return "".join(parts)

    def inline_tag(self, tag: Tag, depth: int) -> str:
        """The Markdown of one inline element (code, emphasis, link, image ...)."""
        name = tag.name.lower()
        if name == "code":
            code = tag.get_text()
            ticks = "``" if "`" in code else "`"
            return f"{ticks}{code}{ticks}" if code.strip() else code
        if name == "img":
            alt = _clean_inline(tag.get("alt") or "")
            return f"[image: {alt}]" if alt else ""
        if name == "br":
            return " "
        text = self.inline(tag, depth)
        if name in ("strong", "b") and text.strip():
            return f"**{text.strip()}**"
        if name in ("em", "i") and text.strip():
            return f"*{text.strip()}*"
        if name == "a":
            href = (tag.get("href") or "").strip()
            if text.strip() and href and _SAFE_URL_RE.match(href):
                return f"[{text.strip()}]({href.replace(' ', '%20').replace(')', '%29')})"
            return text  # javascript:, data: and other schemes lose their target
        return text

    def list_block(self, node: Tag, depth: int, indent: int) -> str:
        ordered = node.name.lower() == "ol"
        lines: list[str] = []
        number = int(node.get("start") or 1) if str(node.get("start") or "1").isdigit() else 1
        pad = "   " * indent
        for item in _child_tags(node, "li"):
            marker = f"{number}." if ordered else "-"
            number += 1
            if depth > MAX_DEPTH:
                lines.append(f"{pad}{marker} {_clean_inline(item.get_text(' '))}")
                continue
            nested = [c for c in item.children if isinstance(c, Tag) and c.name.lower() in ("ul", "ol")]
            for sub in nested:
                sub.extract()
            body = "\n\n".join(self.blocks(item, depth + 1)).strip() or ""
            body_lines = body.split("\n") if body else [""]
            lines.append(f"{pad}{marker} {body_lines[0]}".rstrip())
            lines.extend(f"{pad}{' ' * (len(marker) + 1)}{line}" if line else "" for line in body_lines[1:])
            for sub in nested:
                lines.append(self.list_block(sub, depth + 1, indent + 1))
        return "\n".join(line for line in lines if line is not None)

    def table(self, node: Tag) -> str:
        rows: list[list[str]] = []
        header_rows = 0
        # Rows directly in the table or in its thead/tbody/tfoot; nested tables flatten into their cell's text.
        trs: list[Tag] = []
        for child in _child_tags(node, "tr", "thead", "tbody", "tfoot"):
            trs.extend([child] if child.name.lower() == "tr" else _child_tags(child, "tr"))
        for tr in trs:
            cells = _child_tags(tr, "th", "td")
            if not cells:
                continue
            row: list[str] = []
            for cell in cells:
                span = str(cell.get("colspan") or "1")
                row.extend([_cell(cell.get_text(" "))] * (min(int(span), 50) if span.isdigit() and span != "0" else 1))
            in_thead = isinstance(tr.parent, Tag) and tr.parent.name.lower() == "thead"
            if not rows and (in_thead or all(c.name.lower() == "th" for c in cells)):
                header_rows = 1
            rows.append(row)
        if not rows:
            return ""
        width = max(len(r) for r in rows)
        rows = [r + [""] * (width - len(r)) for r in rows]
        header = rows[0] if header_rows else [f"Column {i + 1}" for i in range(width)]
        body = rows[1:] if header_rows else rows
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * width) + "|"]
        lines.extend("| " + " | ".join(r) + " |" for r in body)
        return "\n".join(lines)
