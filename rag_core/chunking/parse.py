"""Parse stage: a document's blocks, each block's token count (counted once) and its heading path."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_core.chunking.code import source_blocks
from rag_core.chunking.markdown_blocks import Block, markdown_block_tokens, parse_markdown
from rag_core.loaders.front_matter import without_front_matter
from rag_core.tokens import count_tokens
from rag_core.types import Document

GAP_TOKENS = 1  # estimate for the blank line joining two blocks ("\n\n" is one cl100k token)


@dataclass(slots=True)
class ParsedDocument:
    """The blocks of one document with what every later stage reads of them."""

    doc: Document
    text: str
    blocks: list[Block] = field(default_factory=list)
    block_tokens: list[int] = field(default_factory=list)
    paths: list[list[str]] = field(default_factory=list)  # heading path of each block
    _row_tokens: dict[int, list[int]] = field(default_factory=dict)

    def row_tokens(self, index: int) -> list[int]:
        """Tokens of each body row of table block ``index`` plus one for its line break (counted once)."""
        if index not in self._row_tokens:
            self._row_tokens[index] = [count_tokens(self.text[s:e]) + GAP_TOKENS for s, e in self.blocks[index].items]
        return self._row_tokens[index]

    def table_header(self, block: Block) -> str:
        """A table's header row and delimiter line, repeated above rows taken out of it."""
        return self.text[block.header[0] : block.delimiter[1]]

    def refence(self, block: Block, start: int, end: int) -> str:
        """``text[start:end]`` of a fence's body between the fence's own opening and closing lines."""
        opening, closing = self._fence_lines(block)
        return f"{opening}\n{self.text[start:end]}\n{closing}"

    def fence_lines_tokens(self, block: Block) -> int:
        """Tokens of a fence's opening and closing lines."""
        opening, closing = self._fence_lines(block)
        return count_tokens(opening) + count_tokens(closing)

    def _fence_lines(self, block: Block) -> tuple[str, str]:
        opening = self.text[block.start : block.fence_body[0]].rstrip("\r\n")
        marker = opening.lstrip()
        fence = marker[: len(marker) - len(marker.lstrip(marker[:1]))] if marker else "```"
        return opening, opening[: len(opening) - len(opening.lstrip())] + fence


def parse_blocks(doc: Document) -> ParsedDocument:
    """The blocks of ``doc``: Markdown-like documents via markdown-it, source code (``doc_type == "code"``) at
    top-level definitions."""
    parsed = ParsedDocument(doc, without_front_matter(doc))
    if doc.doc_type == "code":
        _source(parsed)
    else:
        _markdown(parsed)
    return parsed


def _markdown(parsed: ParsedDocument) -> None:
    # Copies: the parse and the counts are cached per text and shared by every re-chunk.
    parsed.blocks = list(parse_markdown(parsed.text).blocks)
    parsed.block_tokens = list(markdown_block_tokens(parsed.text))
    stack: list[tuple[int, str]] = []
    for block in parsed.blocks:
        if block.kind == "heading":
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
        parsed.paths.append([title for _, title in stack])


def _source(parsed: ParsedDocument) -> None:
    text, language = parsed.text, parsed.doc.language
    for source in source_blocks(text, language):
        parsed.blocks.append(Block("source", "code", source.start, source.end, title=source.name, language=language))
        parsed.paths.append([source.name] if source.name else [])
        parsed.block_tokens.append(count_tokens(text[source.start : source.end]))
