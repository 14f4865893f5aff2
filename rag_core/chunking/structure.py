"""Structure-aware multi-granularity chunker: document → section → paragraph → row with parent/child links.

Pipeline: parse blocks (``markdown_blocks`` or ``code``) → count each block's tokens once → split oversized
blocks into pieces (sentences with overlap, code at blank lines re-fenced, tables by rows with the header,
lists between items) → pack the blocks between two headings into passages of up to ``max_tokens`` (the
paragraph granularity: a heading or a lead-in always with what it introduces, never across a heading) →
pack passages into sections (nested by heading level; sections and documents hold up to ``PART_SCALE`` times
``max_tokens``, larger ones as consecutive parts) and the document → table rows with the header repeated →
stable ids and links.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field

from rag_core.chunking.code import code_units, split_code
from rag_core.chunking.ids import chunk_id, pages_for_span
from rag_core.chunking.markdown_blocks import Block, markdown_block_tokens, parse_markdown
from rag_core.chunking.sentences import pack_sentences, sentence_spans
from rag_core.config import ChunkingConfig
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Document

LEAD_IN_MAX_TOKENS = 64  # a paragraph ending with ":" up to this size is a lead-in kept with the next block
GAP_TOKENS = 1  # estimate for the blank line joining two blocks ("\n\n" is one cl100k token)
# Sections and documents are context around passages: a part holds up to this many passages' worth of tokens.
PART_SCALE = 4


def size_limit(granularity: str, max_tokens: int) -> int:
    """The most tokens a chunk of ``granularity`` holds (unless one atomic block is larger)."""
    return max_tokens * PART_SCALE if granularity in ("section", "document") else max_tokens


@dataclass(slots=True)
class Unit:
    """A paragraph-level piece: a whole block or one piece of an oversized block."""

    block: int
    start: int
    end: int
    text: str
    tokens: int
    verbatim: bool = True
    oversized: bool = False
    continued: bool = False
    piece: int = 0
    pieces: int = 1


@dataclass(slots=True)
class Node:
    """A chunk under construction (ids are assigned once the whole tree is known)."""

    granularity: str
    start: int
    end: int
    text: str
    tokens: int
    chunk_type: str
    verbatim: bool = True
    language: str | None = None
    heading_path: list[str] = field(default_factory=list)
    oversized: bool = False
    continued: bool = False
    contains_types: list[str] = field(default_factory=list)
    metadata: dict = field(default_factory=dict)
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)
    units: list[Unit] = field(default_factory=list)
    by_type: dict[str, int] = field(default_factory=dict)  # tokens per block chunk type, in order of first unit
    units_verbatim: bool = True  # every unit is a verbatim span (not the same as ``verbatim``)
    units_end: int = 0  # the largest unit end


class _Builder:
    """Builds the chunk tree of one document for one configuration."""

    def __init__(self, doc: Document, config: ChunkingConfig):
        self.doc = doc
        self.text = doc.text
        self.max_tokens = config.max_tokens
        self.overlap = config.overlap
        self.params = f"structure:{config.max_tokens}:{config.overlap}"
        self.blocks: list[Block] = []
        self.block_tokens: list[int] = []
        self.paths: list[list[str]] = []
        self._row_tokens: dict[int, list[int]] = {}

    # ---- blocks -------------------------------------------------------------------------------------------

    def markdown_blocks(self) -> None:
        # Copies: the parse and the counts are cached per text and shared by every re-chunk.
        self.blocks = list(parse_markdown(self.text).blocks)
        self.block_tokens = list(markdown_block_tokens(self.text))
        stack: list[tuple[int, str]] = []
        for block in self.blocks:
            if block.kind == "heading":
                while stack and stack[-1][0] >= block.level:
                    stack.pop()
                stack.append((block.level, block.title))
            self.paths.append([title for _, title in stack])

    def code_blocks(self) -> None:
        language = self.doc.language
        for unit in code_units(self.text, language):
            block = Block("source", "code", unit.start, unit.end, title=unit.name, language=language)
            self.blocks.append(block)
            self.paths.append([unit.name] if unit.name else [])
            self.block_tokens.append(count_tokens(self.text[unit.start : unit.end]))

    # ---- splitting oversized blocks ----------------------------------------------------------------------

    def units_of(self, index: int) -> list[Unit]:
        block, tokens = self.blocks[index], self.block_tokens[index]
        text = self.text[block.start : block.end]
        if tokens <= self.max_tokens:
            return [Unit(index, block.start, block.end, text, tokens)]
        if block.kind == "fence" and block.fence_body:
            units = self._split_fence(index)
        elif block.kind in ("code_block", "source"):
            pieces = split_code(self.text, block.start, block.end, self.max_tokens, count_tokens)
            units = [Unit(index, s, e, self.text[s:e], t, oversized=t > self.max_tokens) for s, e, t in pieces]
        elif block.kind == "table" and block.items:
            units = self._split_rows(index)
        elif block.kind == "list" or (block.kind in ("blockquote", "admonition") and len(block.items) > 1):
            units = self._split_items(index)
        else:
            sentences = sentence_spans(self.text, block.start, block.end, block.no_cut)
            pieces = pack_sentences(self.text, sentences, self.max_tokens, self.overlap, count_tokens)
            units = [Unit(index, p.start, p.end, self.text[p.start : p.end], p.tokens, oversized=p.oversized)
                     for p in pieces]
        if len(units) <= 1:
            return [Unit(index, block.start, block.end, text, tokens, oversized=True)]
        for i, unit in enumerate(units):
            unit.piece, unit.pieces = i, len(units)
            unit.continued = unit.continued or i > 0
        return units

    def _fence_lines(self, block: Block) -> tuple[str, str]:
        opening = self.text[block.start : block.fence_body[0]].rstrip("\r\n")
        marker = opening.lstrip()
        fence = marker[: len(marker) - len(marker.lstrip(marker[:1]))] if marker else "```"
        return opening, opening[: len(opening) - len(opening.lstrip())] + fence

    def refence(self, block: Block, start: int, end: int) -> str:
        opening, closing = self._fence_lines(block)
        return f"{opening}\n{self.text[start:end]}\n{closing}"

    def _split_fence(self, index: int) -> list[Unit]:
        block = self.blocks[index]
        opening, closing = self._fence_lines(block)
        budget = max(self.max_tokens - count_tokens(opening) - count_tokens(closing) - 2, 1)
        body_start, body_end = block.fence_body
        units = []
        for s, e, _ in split_code(self.text, body_start, body_end, budget, count_tokens):
            piece_text = self.refence(block, s, e)
            tokens = count_tokens(piece_text)
            units.append(Unit(index, s, e, piece_text, tokens, verbatim=False, oversized=tokens > self.max_tokens,
                              continued=True))
        return units

    def table_header(self, block: Block) -> str:
        return self.text[block.header[0] : block.delimiter[1]]

    def _split_rows(self, index: int) -> list[Unit]:
        block = self.blocks[index]
        header = self.table_header(block)
        header_tokens = count_tokens(header) + GAP_TOKENS
        row_tokens = self.row_tokens(index)
        units: list[Unit] = []
        i = 0
        while i < len(block.items):
            j, total = i, header_tokens
            while j < len(block.items) and (j == i or total + row_tokens[j] <= self.max_tokens):
                total += row_tokens[j]
                j += 1
            last_end = block.items[j - 1][1]
            if not units:
                units.append(Unit(index, block.start, last_end, self.text[block.start : last_end], total))
            else:
                start = block.items[i][0]
                units.append(Unit(index, start, last_end, f"{header}\n{self.text[start:last_end]}", total,
                                  verbatim=False))
            units[-1].oversized = total > self.max_tokens
            i = j
        return units

    def _split_items(self, index: int) -> list[Unit]:
        block = self.blocks[index]
        sizes = [count_tokens(self.text[s:e]) + GAP_TOKENS for s, e in block.items]
        units: list[Unit] = []
        i = 0
        while i < len(block.items):
            j, total = i, 0
            while j < len(block.items) and (j == i or total + sizes[j] <= self.max_tokens):
                total += sizes[j]
                j += 1
            start = block.start if i == 0 else block.items[i][0]
            end = block.items[j - 1][1]
            units.append(Unit(index, start, end, self.text[start:end], total, oversized=total > self.max_tokens))
            i = j
        return units

    # ---- assembling text from units -----------------------------------------------------------------------

    def assemble(self, units: list[Unit]) -> tuple[str, bool, int, int]:
        """Text of consecutive units, some synthesised: verbatim source spans where possible (a whole split
        block is its source again), a partial run of re-fenced code pieces re-fenced once, table pieces with one
        header. Callers take the plain source span themselves when every unit is verbatim."""
        segments: list[tuple[int, int, str, bool]] = []
        i = 0
        while i < len(units):
            j = i
            while j + 1 < len(units) and units[j + 1].block == units[i].block:
                j += 1
            run = units[i : j + 1]
            block = self.blocks[run[0].block]
            start, end = run[0].start, run[-1].end
            if all(u.verbatim for u in run):
                segments.append((start, end, self.text[start:end], True))
            elif run[0].piece == 0 and run[-1].piece == run[-1].pieces - 1:
                segments.append((block.start, block.end, self.text[block.start : block.end], True))
            elif block.kind == "fence":
                # The re-fenced text carries the fence lines, so the span it stands for reaches them too.
                outer_start = block.start if run[0].piece == 0 else start
                outer_end = block.end if run[-1].piece == run[-1].pieces - 1 else end
                segments.append((outer_start, outer_end, self.refence(block, start, end), False))
            elif block.kind == "table":
                if run[0].verbatim:  # starts with the verbatim first piece
                    segments.append((block.start, end, self.text[block.start : end], True))
                else:
                    segments.append((start, end, f"{self.table_header(block)}\n{self.text[start:end]}", False))
            else:
                segments.append((start, end, "\n\n".join(u.text for u in run), False))
            i = j + 1
        pieces: list[str] = []
        verbatim = True
        prev_end = None
        for start, end, text, is_verbatim in segments:
            if prev_end is not None:
                pieces.append(self.text[prev_end:start] if start >= prev_end else "\n\n")
            pieces.append(text)
            verbatim = verbatim and is_verbatim
            prev_end = end
        return "".join(pieces), verbatim, segments[0][0], segments[-1][1]

    def node(self, granularity: str, units: list[Unit], heading_path: list[str]) -> Node:
        """A chunk over ``units``; its token count is the sum of the units' counts plus one per joining gap
        (each block is counted once; cl100k merges at most the gap into a neighbour, so the sum never
        undercounts in practice and keeps re-chunking cheap)."""
        blocks = self.blocks
        tokens = GAP_TOKENS * (len(units) - 1)
        by_type: dict[str, int] = {}
        language = None
        oversized = continued = False
        units_verbatim = True
        units_end = units[0].end
        for u in units:
            tokens += u.tokens
            block = blocks[u.block]
            by_type[block.chunk_type] = by_type.get(block.chunk_type, 0) + u.tokens
            if language is None and block.language:
                language = block.language
            oversized = oversized or u.oversized
            continued = continued or u.continued
            units_verbatim = units_verbatim and u.verbatim
            if u.end > units_end:
                units_end = u.end
        node = self._node(granularity, units, heading_path, tokens, by_type, language, units_verbatim, units_end)
        node.oversized = oversized and tokens > self.max_tokens
        node.continued = continued
        return node

    def _node(self, granularity: str, units: list[Unit], heading_path: list[str], tokens: int,
              by_type: dict[str, int], language: str | None, units_verbatim: bool, units_end: int) -> Node:
        """The chunk over ``units`` from their summary (what ``node`` and ``node_of_paragraphs`` share)."""
        if units_verbatim:  # the common case: one source span
            start, end = units[0].start, units_end
            text, verbatim = self.text[start:end], True
        else:
            text, verbatim, start, end = self.assemble(units)
        # The main type: the non-heading type with the most tokens, the first seen on a tie.
        main, most = "heading", -1
        for chunk_type, count in by_type.items():
            if chunk_type != "heading" and count > most:
                main, most = chunk_type, count
        node = Node(granularity, start, end, text, tokens, main, verbatim, language=language,
                    heading_path=list(heading_path), contains_types=sorted(by_type), units=units, by_type=by_type,
                    units_verbatim=units_verbatim, units_end=units_end)
        if len(units) == 1 and units[0].pieces > 1:
            node.metadata.update(piece=units[0].piece + 1, pieces=units[0].pieces)
        return node

    def node_of_paragraphs(self, granularity: str, paragraphs: list[Node], heading_path: list[str]) -> Node:
        """A chunk over consecutive paragraph chunks, from their summaries (same result as ``node`` over
        all their units, without walking the units again at every section level)."""
        units = [u for para in paragraphs for u in para.units]
        by_type: dict[str, int] = {}
        language = None
        units_verbatim = True
        units_end = paragraphs[0].units_end
        for para in paragraphs:
            for chunk_type, count in para.by_type.items():
                by_type[chunk_type] = by_type.get(chunk_type, 0) + count
            if language is None and para.language:
                language = para.language
            units_verbatim = units_verbatim and para.units_verbatim
            if para.units_end > units_end:
                units_end = para.units_end
        tokens = sum(p.tokens for p in paragraphs) + GAP_TOKENS * (len(paragraphs) - 1)
        return self._node(granularity, units, heading_path, tokens, by_type, language, units_verbatim, units_end)

    # ---- paragraphs ------------------------------------------------------------------------------------------

    def _is_lead_in(self, index: int) -> bool:
        block = self.blocks[index]
        return (block.kind == "paragraph" and self.block_tokens[index] <= LEAD_IN_MAX_TOKENS
                and self.text[block.start : block.end].rstrip().endswith(":"))

    def paragraphs(self) -> list[Node]:
        """Passages: the blocks between two headings (a heading with what follows it) packed in order up to
        ``max_tokens``, in balanced parts when they do not fit in one; a block that does not fit alone is
        split first (``units_of``). A passage never reaches across a heading, and never ends with a heading or
        a lead-in, which belong to what they introduce."""
        groups: list[list[Unit]] = []
        run: list[Unit] = []
        for index, block in enumerate(self.blocks):
            if block.kind == "heading" and run:
                groups.extend(self._pack_run(run))
                run = []
            run.extend(self.units_of(index))
        if run:
            groups.extend(self._pack_run(run))
        return [self.node("paragraph", units, self._path_of(units)) for units in groups]

    def _path_of(self, units: list[Unit]) -> list[str]:
        """A passage's heading path: its heading's (it holds at most one, at its start); in source code, the
        first named unit's."""
        if self.doc.doc_type != "code":
            return self.paths[units[-1].block]
        return next((self.paths[u.block] for u in units if self.paths[u.block]), [])

    def _introduces(self, unit: Unit) -> bool:
        """A heading or a lead-in: it belongs with the unit that follows it."""
        return self.blocks[unit.block].kind == "heading" or (unit.pieces == 1 and self._is_lead_in(unit.block))

    def _pack_run(self, units: list[Unit]) -> list[list[Unit]]:
        """Consecutive ``units`` in passages of at most ``max_tokens``, balanced: ``n`` passages for a run that
        needs ``n``, each cut once it reaches the run's size ÷ ``n``."""
        total = sum(u.tokens for u in units) + GAP_TOKENS * (len(units) - 1)
        if total <= self.max_tokens:
            return [units]
        target = total / -(-total // self.max_tokens)
        groups: list[list[Unit]] = []
        current: list[Unit] = []
        size = 0
        for unit in units:
            if current and (size + GAP_TOKENS + unit.tokens > self.max_tokens or size >= target):
                carry: list[Unit] = []
                while current and self._introduces(current[-1]):
                    carry.insert(0, current.pop())
                carry_size = sum(u.tokens for u in carry) + GAP_TOKENS * len(carry)
                if carry and carry_size + unit.tokens > self.max_tokens:
                    current, carry = current + carry, []  # it cannot join the next unit: it stays behind
                if current:
                    groups.append(current)
                current = carry
                size = sum(u.tokens for u in current) + GAP_TOKENS * max(len(current) - 1, 0)
            size += unit.tokens + (GAP_TOKENS if current else 0)
            current.append(unit)
        if current:
            groups.append(current)
        return groups

    # ---- sections and document ------------------------------------------------------------------------------

    def pack(self, granularity: str, paragraphs: list[Node], heading_path: list[str]) -> list[Node]:
        """One chunk over ``paragraphs`` when it fits ``size_limit``, else consecutive parts cut at paragraph
        boundaries (preferring a cut before a heading once a part is half full)."""
        if not paragraphs:
            return []
        limit = size_limit(granularity, self.max_tokens)
        groups: list[list[Node]] = [[]]
        total = 0
        for para in paragraphs:
            current = groups[-1]
            starts_heading = self.blocks[para.units[0].block].kind == "heading"
            over = total + para.tokens + GAP_TOKENS > limit
            if current and (over or (starts_heading and total >= limit // 2)):
                groups.append([])
                total = 0
            groups[-1].append(para)
            total += para.tokens + GAP_TOKENS
        parts: list[Node] = []
        span = (paragraphs[0].start, paragraphs[-1].end)
        for i, group in enumerate(groups):
            node = self.node_of_paragraphs(granularity, group, heading_path)
            node.children = list(group)
            node.continued = i > 0
            node.oversized = node.tokens > limit and len(group) == 1 and group[0].oversized
            if len(groups) > 1:
                node.metadata.update(part=i + 1, parts=len(groups), section_start=span[0], section_end=span[1])
            parts.append(node)
        return parts

    def sections(self, paragraphs: list[Node]) -> tuple[list[Node], list[list[Node]]]:
        """Section parts (nested by heading level) and, per paragraph, the parts of every enclosing section."""
        sections: list[Node] = []
        enclosing: list[list[Node]] = [[] for _ in paragraphs]
        first_block = [p.units[0].block for p in paragraphs]
        headings = [i for i, b in enumerate(self.blocks) if b.kind == "heading"]
        # End block of each section: the next heading of the same or a higher level (one pass with a stack).
        section_end = dict.fromkeys(headings, len(self.blocks))
        open_sections: list[int] = []
        for h in headings:
            while open_sections and self.blocks[open_sections[-1]].level >= self.blocks[h].level:
                section_end[open_sections.pop()] = h
            open_sections.append(h)
        for h in headings:
            members = range(bisect_left(first_block, h), bisect_left(first_block, section_end[h]))
            parts = self.pack("section", [paragraphs[i] for i in members], self.paths[h])
            sections.extend(parts)
            part_of = {id(c): part for part in parts for c in part.children}
            for i in members:
                enclosing[i].append(part_of[id(paragraphs[i])])
        return sections, enclosing

    # ---- whole document ---------------------------------------------------------------------------------

    def build(self) -> list[Node]:
        paragraphs = self.paragraphs()
        if not paragraphs:
            return []
        documents = self.pack("document", paragraphs, [])
        if self.doc.doc_type == "code":
            sections = self.pack("section", paragraphs, [])
            for part in sections:
                names = [self.blocks[p.units[0].block].title for p in part.children]
                part.heading_path = [next((n for n in names if n), self.doc.name)]
            enclosing = [[next(s for s in sections if any(c is p for c in s.children))] for p in paragraphs]
        else:
            sections, enclosing = self.sections(paragraphs)
        doc_part = {id(c): d for d in documents for c in d.children}
        index_of = {id(p): i for i, p in enumerate(paragraphs)}
        first_paragraph = {id(part): index_of[id(part.children[0])] for part in sections}
        for part in sections + documents:
            part.children = []
        # Parent of a paragraph: the innermost enclosing section part, else the document part.
        for i, para in enumerate(paragraphs):
            para.parent = enclosing[i][-1] if enclosing[i] else doc_part[id(para)]
        # Parent of a section part: the enclosing section's part holding its first paragraph, else the document.
        for part in sections:
            first = first_paragraph[id(part)]
            chain = enclosing[first]
            depth = next(k for k, s in enumerate(chain) if s is part)
            part.parent = chain[depth - 1] if depth > 0 else doc_part[id(paragraphs[first])]
        rows = self.rows(paragraphs)
        nodes = documents + sections + paragraphs + rows
        for node in nodes:
            if node.parent is not None:
                node.parent.children.append(node)
        return nodes

    def rows(self, paragraphs: list[Node]) -> list[Node]:
        """Each table body row with the header row and delimiter repeated (synthesised, not verbatim)."""
        rows: list[Node] = []
        for para in paragraphs:
            for unit in para.units:
                block = self.blocks[unit.block]
                if block.kind != "table" or not block.items:
                    continue
                header = self.table_header(block)
                header_tokens = count_tokens(header) + GAP_TOKENS
                sizes = self.row_tokens(unit.block)
                first = bisect_left(block.items, (unit.start, -1)) if unit.piece else 0
                for number in range(first + 1, len(block.items) + 1):
                    s, e = block.items[number - 1]
                    if e > unit.end:
                        break
                    tokens = header_tokens + sizes[number - 1] - GAP_TOKENS
                    node = Node("row", s, e, f"{header}\n{self.text[s:e]}", tokens, "table", verbatim=False,
                                heading_path=list(self.paths[unit.block]), oversized=tokens > self.max_tokens,
                                contains_types=["table"], metadata={"row": number, "rows": len(block.items)})
                    node.parent = para
                    rows.append(node)
        return rows

    def row_tokens(self, index: int) -> list[int]:
        """Tokens of each body row of table block ``index`` plus one for its line break (counted once)."""
        if index not in self._row_tokens:
            self._row_tokens[index] = [count_tokens(self.text[s:e]) + GAP_TOKENS for s, e in self.blocks[index].items]
        return self._row_tokens[index]


def _to_chunks(doc: Document, nodes: list[Node], params: str) -> list[Chunk]:
    def span_key(node: Node) -> tuple[int, int]:
        return node.start, node.end

    for node in nodes:
        if len(node.children) > 1:
            node.children.sort(key=span_key)
    positions = {id(c): i for node in nodes for i, c in enumerate(node.children)}
    order = {"document": 0, "section": 1, "paragraph": 2, "row": 3}
    nodes = sorted(nodes, key=lambda n: (order[n.granularity], n.start, n.end))
    ids: dict[int, str] = {}
    position_of: dict[int, int] = {}
    top = 0
    for node in nodes:
        key = id(node)
        position = positions.get(key)
        if position is None:
            position, top = top, top + 1
        position_of[key] = position
        scope = "\0".join(node.heading_path) if node.granularity == "section" else ""
        ids[key] = chunk_id(doc.id, node.granularity, node.start, node.end, position, params, scope)
    has_pages = bool(doc.metadata and doc.metadata.get("pages"))
    chunks = []
    for node in nodes:
        metadata = dict(node.metadata)
        metadata["strategy"] = "structure"
        if has_pages:
            pages = pages_for_span(doc.metadata, node.start, node.end)
            if pages is not None:
                metadata["pages"] = pages
        granularity = node.granularity
        chunks.append(Chunk(
            id=ids[id(node)], doc_id=doc.id, granularity=granularity, chunk_type=node.chunk_type,
            text=node.text, start=node.start, end=node.end, tokens=node.tokens, heading_path=node.heading_path,
            parent_id=ids[id(node.parent)] if node.parent is not None else None,
            child_ids=[ids[id(c)] for c in node.children], language=node.language, verbatim=node.verbatim,
            oversized=node.oversized, continued=node.continued, position=position_of[id(node)],
            contains_types=node.contains_types if granularity in ("document", "section") else [],
            metadata=metadata,
        ))
    return chunks


def structure_chunks(doc: Document, config: ChunkingConfig) -> list[Chunk]:
    """All granularities of ``doc`` (Markdown-like documents via markdown-it, source code via ``code``)."""
    builder = _Builder(doc, config)
    if doc.doc_type == "code":
        builder.code_blocks()
    else:
        builder.markdown_blocks()
    return _to_chunks(doc, builder.build(), builder.params)
