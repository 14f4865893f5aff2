"""Structure recovered from PDFs, against the Markdown they were printed from.

A sample of the shared corpora (pydantic and FastAPI docs) is rendered to HTML with markdown-it-py and
printed to PDF by Debian's Chromium (``--print-to-pdf --generate-pdf-document-outline``; tables get a 1px
border and code a grey background, as documentation sites style them). Each PDF is loaded by
``rag_core.loaders`` and its Markdown compared with the source's:

- headings: recall and precision of heading titles (letters and digits compared, in order), and how many
  matched headings sit under the same parent heading as in the source (the nesting sections follow);
- tables kept whole: a source table found as one Markdown table with the same header and row count;
- code kept whole: a source code block whose text (white space ignored) sits inside one fenced block;
- junk lines: Chromium's own header and footer (date, title, file URL, "page/pages") left in the text.

Three prints of each file: with the outline; the same PDF with the outline stripped by pypdf (so headings
come from fonts and numbering alone); and printed with Chromium's header and footer on (junk to remove). The
last row scores the loader before structure recovery (pypdf's text page by page) on the first print, and
its junk lines on the print with header and footer.
With ``--qa N``: the first N questions of ``../shared/datasets/fastapi_docs_qa`` whose evidence files are under
20 KB, answered by BM25 (paragraph and section chunks, top 5) over those files as Markdown and as printed PDFs;
a question is answered when a retrieved chunk holds the start of an evidence span (Markdown marks, link targets
and punctuation ignored on both sides).
Run: ``python -m bench.pdfstructure [--files 24] [--qa 30]``; writes ``bench/results/pdfstructure.md``.
"""

from __future__ import annotations

import argparse
import html
import io
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it import MarkdownIt
from pypdf import PdfReader

from bench.results_file import publish
from rag_core.chunking.markdown_blocks import parse_markdown
from rag_core.loaders import load_bytes
from rag_core.loaders.pdf import _plain_text

REPO = Path(__file__).resolve().parent.parent
CORPORA = REPO / ".." / "shared" / "corpora"
CORPUS_NAMES = ("pydantic_docs", "fastapi_docs")
QA_FILE = REPO / ".." / "shared" / "datasets" / "fastapi_docs_qa" / "questions.jsonl"
QA_K = 5
CHROMIUM = "/usr/bin/chromium"
CSS = ("body{font-family:serif} table{border-collapse:collapse} th,td{border:1px solid #999;padding:2px 6px}"
       "pre{background:#f4f4f4;padding:6px;white-space:pre-wrap}")
_DATE_RE = re.compile(r"\b\d{1,2}/\d{1,2}/\d{2,4},? \d{1,2}:\d{2}")


@dataclass
class Score:
    gold_headings: int = 0
    found_headings: int = 0
    matched_headings: int = 0
    same_parent: int = 0
    tables: int = 0
    tables_whole: int = 0
    code: int = 0
    code_whole: int = 0
    junk_lines: int = 0
    pages: int = 0
    seconds: float = 0.0
    misses: list[str] = field(default_factory=list)

    def add(self, other: Score) -> None:
        for name in ("gold_headings", "found_headings", "matched_headings", "same_parent", "tables", "tables_whole",
                     "code", "code_whole", "junk_lines", "pages", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.misses.extend(other.misses)


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _md() -> MarkdownIt:
    return MarkdownIt("commonmark").enable("table")


def sample(files: int) -> list[Path]:
    """Evenly spaced files of 1.5–20 KB from each corpus, plus the first ones with a table (tables are rare)."""
    chosen: list[Path] = []
    per_corpus = max(files // len(CORPUS_NAMES), 1)
    for corpus in CORPUS_NAMES:
        root = CORPORA / corpus
        if not root.exists():
            raise FileNotFoundError(f"corpus {corpus} is not at {root.resolve()}; the benchmark reads ../shared")
        paths = [p for p in sorted(root.rglob("*.md")) if 1500 <= p.stat().st_size <= 20000]
        table_re = re.compile(r"^\|.*\|\s*$\n^\|?\s*:?-{3,}", re.M)
        with_tables = [p for p in paths if table_re.search(p.read_text(errors="replace"))]
        picked = with_tables[:4]
        step = max(len(paths) / max(per_corpus - len(picked), 1), 1)
        picked += [paths[int(i * step)] for i in range(per_corpus - len(picked)) if int(i * step) < len(paths)]
        chosen.extend(dict.fromkeys(picked))
    return chosen


def print_pdf(source: Path, workdir: Path, header_footer: bool) -> bytes:
    page = workdir / "page.html"
    body = _md().render(source.read_text(encoding="utf-8", errors="replace"))
    page.write_text(f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(source.name)}</title>"
                    f"<style>{CSS}</style></head><body>{body}</body></html>", encoding="utf-8")
    out = workdir / "page.pdf"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={workdir / 'profile'}",
             "--generate-pdf-document-outline", f"--print-to-pdf={out}"]
    if not header_footer:
        flags.append("--no-pdf-header-footer")
    subprocess.run([CHROMIUM, *flags, page.as_uri()], check=True, capture_output=True, timeout=120)
    return out.read_bytes()


def strip_outline(data: bytes) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(data)), import_outline=False)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def gold(source: str) -> tuple[list[tuple[str, int]], list[tuple[str, int]], list[str]]:
    """Headings (title, level), tables (header, body rows) and code blocks of the source Markdown."""
    tokens = _md().parse(source)
    headings, tables, code = [], [], []
    for i, token in enumerate(tokens):
        if token.type == "heading_open":
            inline = tokens[i + 1].children or []  # the text a reader sees: inline HTML tags left out
            title = "".join(t.content for t in inline if t.type in ("text", "code_inline")) or tokens[i + 1].content
            headings.append((title, int(token.tag[1])))
        elif token.type == "table_open":
            j, rows, header = i, 0, ""
            while tokens[j].type != "table_close":
                if tokens[j].type == "tr_open":
                    rows += 1
                if tokens[j].type == "thead_close":
                    header = "".join(t.content for t in tokens[i:j] if t.type == "inline")
                j += 1
            tables.append((_norm(header), rows - 1))
        elif token.type in ("fence", "code_block") and token.content.strip():
            code.append(_norm(token.content))
    return headings, tables, code


def parents(headings: list[tuple[str, int]]) -> list[str]:
    """Each heading's parent section title (normalised; "" at the top): the nesting sections follow."""
    stack: list[tuple[str, int]] = []
    out = []
    for title, level in headings:
        while stack and stack[-1][1] >= level:
            stack.pop()
        out.append(stack[-1][0] if stack else "")
        stack.append((_norm(title), level))
    return out


def score(source: str, text: str) -> Score:
    gold_headings, gold_tables, gold_code = gold(source)
    parsed = parse_markdown(text)
    found = [(b.title, b.level) for b in parsed.blocks if b.kind == "heading"]
    result = Score(gold_headings=len(gold_headings), found_headings=len(found))
    position = 0
    gold_parents, found_parents = parents(gold_headings), parents(found)
    for i, (title, _) in enumerate(gold_headings):  # in order: each matches the next found one with its title
        for j in range(position, len(found)):
            if _norm(found[j][0]) == _norm(title):
                result.matched_headings += 1
                result.same_parent += gold_parents[i] == found_parents[j]
                position = j + 1
                break
        else:
            result.misses.append(title)
    found_tables = [(_norm(text[b.header[0]:b.header[1]]), len(b.items)) for b in parsed.blocks
                    if b.kind == "table" and b.header]
    result.tables = len(gold_tables)
    result.tables_whole = sum(1 for table in gold_tables if table in found_tables)
    fences = [_norm(text[b.fence_body[0]:b.fence_body[1]]) for b in parsed.blocks if b.kind == "fence" and b.fence_body]
    result.code = len(gold_code)
    result.code_whole = sum(1 for code in gold_code if any(code in fence for fence in fences))
    return result


def junk_lines(text: str, source: Path) -> int:
    """Lines still holding Chromium's header/footer: the file URL, the print date, or the title line."""
    return sum(1 for line in text.splitlines()
               if "file://" in line or _DATE_RE.search(line) or line.strip() == source.name)


def run(files: int) -> tuple[dict[str, Score], list[str]]:
    if shutil.which(CHROMIUM) is None:
        raise FileNotFoundError(f"{CHROMIUM} is missing; install Debian's chromium (apt-get install chromium)")
    variants = ("outline", "no outline", "header/footer", "before (pypdf text)")
    totals = {variant: Score() for variant in variants}
    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="pdfbench-") as tmp:
        workdir = Path(tmp)
        for source in sample(files):
            markdown = source.read_text(encoding="utf-8", errors="replace")
            printed = print_pdf(source, workdir, header_footer=False)
            decorated = print_pdf(source, workdir, header_footer=True)
            for variant, data in (("outline", printed), ("no outline", strip_outline(printed)),
                                  ("header/footer", decorated)):
                started = time.perf_counter()
                doc = load_bytes(source.stem + ".pdf", data, max_bytes=len(data) + 1)
                seconds = time.perf_counter() - started
                result = score(markdown, doc.text)
                result.seconds, result.pages = seconds, doc.metadata.get("page_count", 0)
                result.junk_lines = junk_lines(doc.text, source)
                totals[variant].add(result)
                if variant == "outline":
                    rows.append(f"| {source.relative_to(CORPORA)} | {result.pages} | {result.gold_headings} | "
                                f"{result.matched_headings} | {result.found_headings} | {result.tables_whole}/"
                                f"{result.tables} | {result.code_whole}/{result.code} |")
            started = time.perf_counter()  # the loader before structure: pypdf's text page by page
            reader = PdfReader(io.BytesIO(printed))
            before = _plain_text(source.name, reader).text
            result = score(markdown, before)
            result.seconds, result.pages = time.perf_counter() - started, len(reader.pages)
            # Junk the old loader left: its text of the print with Chromium's header and footer.
            result.junk_lines = junk_lines(_plain_text(source.name, PdfReader(io.BytesIO(decorated))).text, source)
            totals["before (pypdf text)"].add(result)
    return totals, rows


def _plain(text: str) -> str:
    """Text to compare evidence by: link targets, HTML tags, Markdown marks and punctuation dropped."""
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"<[^>]{1,200}>", " ", text)
    return " ".join(re.sub(r"[\W_]+", " ", text.lower()).split())


def qa(questions: int) -> tuple[dict[str, float], int, int]:
    """Share of questions answered in the top QA_K paragraphs and sections, Markdown vs PDF (same files, same
    budget)."""
    import json

    from rag_core.chunking import chunk_document
    from rag_core.config import ChunkingConfig
    from rag_core.stores.keyword import KeywordIndex

    root = CORPORA / "fastapi_docs"
    chosen = []
    for line in QA_FILE.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        if all((root / e["file"]).stat().st_size <= 20000 for e in item["evidence"]):
            chosen.append(item)
        if len(chosen) == questions:
            break
    files = sorted({e["file"] for q in chosen for e in q["evidence"]})
    config = ChunkingConfig()
    answered: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="pdfbench-qa-") as tmp:
        for variant in ("markdown", "pdf"):
            chunks, name_of = {}, {}
            for file in files:
                path = root / file
                if variant == "markdown":
                    doc = load_bytes(path.name, path.read_bytes())
                else:
                    data = print_pdf(path, Path(tmp), header_footer=False)
                    doc = load_bytes(path.stem + ".pdf", data, max_bytes=len(data) + 1)
                for chunk in chunk_document(doc, config, "all"):
                    chunks[chunk.id] = chunk
                    name_of[chunk.id] = file
            index = KeywordIndex.build(chunks)
            found = 0
            for item in chosen:
                spans = [_plain(span)[:60] for e in item["evidence"] for span in e["spans"]]
                ranked = index.search(item["question"], QA_K, ["paragraph", "section"])
                hits = [_plain(chunks[i].text) for i, _ in ranked]
                found += any(span and span in hit for span in spans for hit in hits)
            answered[variant] = found / len(chosen) if chosen else 0.0
    return answered, len(chosen), len(files)


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "n/a"


def report(totals: dict[str, Score], rows: list[str], files: int) -> str:
    lines = [
        "# PDF structure recovery (Chromium-printed shared corpora)",
        "",
        f"{files} Markdown files of ../shared/corpora rendered with markdown-it-py and printed by {CHROMIUM}; "
        "each PDF loaded by `rag_core.loaders` and its Markdown compared with the source. Run "
        "`python -m bench pdfstructure`.",
        "",
        "| variant | heading recall | heading precision | same parent section | tables whole | code whole "
        "| junk lines | pages | s/page |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for variant, s in totals.items():
        lines.append(f"| {variant} | {_ratio(s.matched_headings, s.gold_headings)} | "
                     f"{_ratio(s.matched_headings, s.found_headings)} | {_ratio(s.same_parent, s.matched_headings)} | "
                     f"{s.tables_whole}/{s.tables} | {s.code_whole}/{s.code} | {s.junk_lines} | {s.pages} | "
                     f"{s.seconds / max(s.pages, 1):.3f} |")
    lines += ["", f"Headings: {totals['outline'].gold_headings} in the sources. Missed with the outline: "
              + (", ".join(repr(m) for m in totals["outline"].misses[:15]) or "none") + ".",
              "Missed without it: " + (", ".join(repr(m) for m in totals["no outline"].misses[:15]) or "none") + ".",
              "", "Per file (with the outline):", "",
              "| file | pages | headings | matched | found | tables whole | code whole |",
              "|---|---|---|---|---|---|---|",
              *rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=24, help="how many corpus files to print (default 24)")
    parser.add_argument("--qa", type=int, default=0, help="also answer N FastAPI docs-QA questions (default 0)")
    args = parser.parse_args(argv)
    totals, rows = run(args.files)
    text = report(totals, rows, len(rows))
    if args.qa:
        answered, n, files = qa(args.qa)
        text += (f"\nFastAPI docs QA: {n} questions over their {files} evidence files, BM25 top {QA_K} paragraphs "
                 f"and sections: "
                 f"answered {answered['markdown']:.3f} from the Markdown, {answered['pdf']:.3f} from the PDFs "
                 f"(difference {answered['pdf'] - answered['markdown']:+.3f}).\n")
    print(text)
    print(f"written to {publish('pdfstructure', text)}")


if __name__ == "__main__":
    main()
