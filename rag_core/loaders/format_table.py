"""The input formats: one row per format, which every loader reads (no other list of formats or extensions).

A row says how a file is recognised as the format (its extensions; for a binary format, its content; for a text
format, content that claims it whatever its name) and which converter turns it into the text the chunker reads.
``detect`` sniffs by the rows, ``load`` converts with the row it found, ``archives`` keeps a ZIP's members by the
rows' extensions and leaves a ZIP a row claims (a DOCX) whole, the document store accepts the rows' names as
``doc_type``. A new format is its converter module and its row here.

Rows are read at call time from ``FORMATS``, in its order: binary rows sniff first, in order; a text file is
claimed by a row's content test, then by its extension, its file name or its ``#!`` line, then by a ``fallback``
row's extensions (plain text, which a script's shebang overrides).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rag_core.loaders.formats import Converted, convert_csv_file, convert_docx, convert_plain
from rag_core.loaders.front_matter import convert_markdown
from rag_core.loaders.html import convert_html, looks_like_html
from rag_core.loaders.pdf import convert_pdf, is_pdf


@dataclass(frozen=True, slots=True)
class Format:
    """One input format.

    ``convert(name, content)`` gets the file's bytes for a binary format, its decoded text (newlines normalised)
    for a text one. ``converted``: the document's text is what the converter made of the file (its metadata says
    so, and a file that converts to nothing is "no text content after conversion"), not the file's own text.
    """

    name: str  # the Document's doc_type
    label: str  # how messages name the format ("Markdown", "PDF")
    extensions: frozenset[str]  # lower-case, with the dot; "" for files without one
    binary: bool
    convert: Callable[[str, Any], Converted]
    converted: bool = False
    sniff: Callable[[bytes], bool] | None = None  # binary: the content is this format, whatever the file's name
    zip_member: str | None = None  # binary: a ZIP holding this member is this format, not a folder archive
    sniff_text: Callable[[str], bool] | None = None  # text: the content is this format, before any extension
    languages: Mapping[str, str] = field(default_factory=dict)  # extension → the Document's language
    filenames: Mapping[str, str] = field(default_factory=dict)  # an extension-less file name (lower case) → language
    shebangs: Mapping[str, str] = field(default_factory=dict)  # the interpreter of a ``#!`` line → language
    fallback: bool = False  # its extensions are judged last, after every row's names and shebangs


# Extension → language for source code (the chunker splits Python with ``ast``, others at blank lines).
CODE_LANGUAGES: dict[str, str] = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala",
    ".c": "c", ".h": "c", ".cpp": "cpp", ".cc": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".cs": "csharp", ".swift": "swift", ".rb": "ruby", ".php": "php", ".pl": "perl", ".lua": "lua", ".r": "r",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ps1": "powershell",
    ".sql": "sql", ".css": "css", ".scss": "scss",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json", ".ini": "ini", ".cfg": "ini",
    ".xml": "xml", ".proto": "protobuf", ".graphql": "graphql", ".tf": "hcl",
}

FORMATS: tuple[Format, ...] = (
    Format("markdown", "Markdown", frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx"}), binary=False,
           convert=convert_markdown),
    Format("text", "text", frozenset({".txt", ".text", ".log", ".rst", ".adoc", ""}), binary=False,
           convert=convert_plain, fallback=True),
    Format("code", "code", frozenset(CODE_LANGUAGES), binary=False, convert=convert_plain,
           languages=CODE_LANGUAGES,
           filenames={"makefile": "make", "dockerfile": "dockerfile", "justfile": "make"},
           shebangs={"python": "python", "node": "javascript", "bash": "bash", "sh": "bash", "zsh": "bash",
                     "ruby": "ruby", "perl": "perl", "deno": "typescript"}),
    Format("html", "HTML", frozenset({".html", ".htm", ".xhtml"}), binary=False, convert=convert_html,
           converted=True, sniff_text=looks_like_html),
    Format("pdf", "PDF", frozenset({".pdf"}), binary=True, convert=convert_pdf, converted=True, sniff=is_pdf),
    Format("csv", "CSV", frozenset({".csv", ".tsv"}), binary=False, convert=convert_csv_file, converted=True),
    Format("docx", "DOCX", frozenset({".docx"}), binary=True, convert=convert_docx, converted=True,
           zip_member="word/document.xml"),
)


def format_names() -> tuple[str, ...]:
    """Every format's name (a Document's ``doc_type``), in table order."""
    return tuple(f.name for f in FORMATS)


def format_named(name: str) -> Format:
    """The row of format ``name``; ``KeyError`` for a name no row has."""
    for fmt in FORMATS:
        if fmt.name == name:
            return fmt
    raise KeyError(name)


def supported_extensions() -> frozenset[str]:
    """Every extension a row claims (not the empty one: an extension-less file is accepted by name only)."""
    return frozenset().union(*(f.extensions for f in FORMATS)) - {""}


def known_filenames() -> frozenset[str]:
    """Extension-less file names (lower case) a row claims, such as ``makefile``."""
    return frozenset().union(*(f.filenames for f in FORMATS))


def listed_kinds() -> str:
    """The formats as messages list them, in table order: "Markdown, text, code, HTML, PDF, CSV, DOCX"."""
    return ", ".join(f.label for f in FORMATS)


def document_kinds() -> str:
    """What a refused upload is asked to be: the text formats, then the binary ones, "… PDF or DOCX"."""
    labels = [f.label for f in FORMATS if not f.binary] + [f.label for f in FORMATS if f.binary]
    return ", ".join(labels[:-1]) + " or " + labels[-1] if len(labels) > 1 else labels[0]
