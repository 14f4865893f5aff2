"""Sniffing what a file is: magic bytes, binary detection, text decoding, and safe display names.

Content decides first (a PDF named ``notes.md`` is a PDF; a PNG named ``notes.md`` is refused as binary);
the extension decides only between text formats (Markdown, plain text, CSV, code in a given language). Which
formats there are, and what claims a file for each, is ``format_table``'s rows.
"""

from __future__ import annotations

import codecs
import io
import re
import unicodedata
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from charset_normalizer import from_bytes

import rag_core.loaders.format_table as format_table
from rag_core.errors import LoadError
from rag_core.loaders.format_table import Format
from rag_core.loaders.zipread import entries_at_most

# Magic numbers of common binary formats, to name what was uploaded instead of just "binary".
BINARY_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"), (b"\xff\xd8\xff", "a JPEG image"), (b"GIF8", "a GIF image"),
    (b"RIFF", "a RIFF media file"), (b"\x7fELF", "an executable (ELF)"), (b"MZ", "a Windows executable"),
    (b"\x1f\x8b", "a gzip archive"), (b"BZh", "a bzip2 archive"), (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (b"Rar!", "a RAR archive"), (b"\xfd7zXZ\x00", "an xz archive"), (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
     "a legacy or password-protected Office file (save it as an unprotected .docx)"),
    (b"SQLite format 3\x00", "an SQLite database"), (b"OggS", "an Ogg media file"), (b"fLaC", "a FLAC audio file"),
    (b"ID3", "an MP3 audio file"), (b"\x00\x00\x01\x00", "an icon file"), (b"wOFF", "a web font"),
)

# A ZIP with more central-directory entries than this is not sniffed for being a document such as a DOCX (a DOCX has
# a few dozen parts; a folder's ZIP meets its own limit of files next).
MAX_SNIFFED_ENTRIES = 20_000
# Share of control characters (other than tab, newline, CR, form feed, escape) above which text is binary.
MAX_CONTROL_RATIO = 0.05
SNIFF_BYTES = 8192
WESTERN_TIE_CHAOS = 0.1

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_ALLOWED_CONTROLS = frozenset("\t\n\r\f\x1b")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f\x7f]")
_MAX_NAME_CHARS = 120


@dataclass(frozen=True, slots=True)
class Decoded:
    """Text decoded from bytes, with the encoding that worked."""

    text: str
    encoding: str
    warning: str | None = None


def safe_name(name: str, keep_folders: bool = False) -> str:
    """A readable base name with no path separators, ``..``, or control characters (``"document"`` if none left).

    With ``keep_folders`` a relative path such as ``tutorial/index.md`` keeps its folders (joined by ``/``, never
    ``..`` or a leading ``/``), so files of the same name from different folders stay distinct documents.
    """
    name = str(name).replace("\\", "/")
    parts = [p for p in name.split("/") if p.strip() not in ("", ".", "..")]
    if keep_folders and len(parts) > 1:
        folders = [safe_name(part) for part in parts[:-1]]
        return "/".join([*folders, safe_name(parts[-1])])
    base = parts[-1] if parts else ""
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C")
    base = re.sub(r"\s+", " ", base).strip().lstrip(".") or ""
    base = re.sub(r"\.{2,}", ".", base)
    if not base:
        return "document"
    if len(base) > _MAX_NAME_CHARS:
        suffix = PurePosixPath(base).suffix[:16]
        base = base[: _MAX_NAME_CHARS - len(suffix)] + suffix
    return base


def extension(name: str) -> str:
    return PurePosixPath(name).suffix.lower()


def binary_signature(data: bytes) -> str | None:
    """What a known binary format is (e.g. "a PNG image"), or None."""
    for magic, what in BINARY_SIGNATURES:
        if data.startswith(magic):
            return what
    return None


def is_zip(data: bytes) -> bool:
    return data.startswith(b"PK\x03\x04")


def zip_kind(data: bytes) -> str | None:
    """The name of the format a ZIP is a document of (``"docx"`` for a Word document, by the member its row names),
    ``"zip"`` for any other ZIP archive, None when not a ZIP."""
    if not is_zip(data):
        return None
    if entries_at_most(data) > MAX_SNIFFED_ENTRIES:  # no document has that many parts: not parsed to tell
        return "zip"
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
    except (zipfile.BadZipFile, OSError, ValueError):
        return "zip"
    for fmt in format_table.FORMATS:
        if fmt.zip_member is not None and fmt.zip_member in names:
            return fmt.name
    return "zip"


def sniffed_format(data: bytes) -> Format | None:
    """The binary format whose content ``data`` is (its row's ``sniff``, then a ZIP its row's member claims), None
    for anything else (text, a ZIP no row claims, binary no row knows)."""
    for fmt in format_table.FORMATS:
        if fmt.sniff is not None and fmt.sniff(data):
            return fmt
    kind = zip_kind(data)
    return None if kind in (None, "zip") else format_table.format_named(kind)


def accepted_name(name: str) -> bool:
    """A file a folder or a ZIP is loaded for by its name: a row's extension, or an extension-less name a row
    knows (``Makefile``)."""
    ext = extension(name)
    return ext in format_table.supported_extensions() or (
        ext == "" and PurePosixPath(name).name.lower() in format_table.known_filenames())


def _utf16_without_bom(data: bytes) -> str | None:
    """Spot BOM-less UTF-16 (every other byte NUL in mostly-ASCII text), which would otherwise look binary.

    Only for an even number of bytes (at least 8) whose other half is mostly printable ASCII, so a short
    binary blob or UTF-8 text with a stray NUL is not misread as UTF-16.
    """
    if len(data) < 8 or len(data) % 2:
        return None
    sample = data[:SNIFF_BYTES]
    even, odd = sample[0::2], sample[1::2]
    for encoding, zeros, chars in (("utf-16-le", odd, even), ("utf-16-be", even, odd)):
        printable = sum(1 for b in chars if 32 <= b < 127 or b in (9, 10, 13))
        if zeros.count(0) > 0.4 * len(zeros) and chars.count(0) < 0.05 * len(chars) and printable > 0.9 * len(chars):
            return encoding
    return None


def control_ratio(text: str) -> float:
    sample = text[:SNIFF_BYTES]
    if not sample:
        return 0.0
    return len(_CONTROL_RE.findall(sample)) / len(sample)


def decode_text(name: str, data: bytes, expected: str | None = None) -> Decoded:
    """Decode bytes to text: BOM first, then strict UTF-8, then charset-normalizer; refuse binary data
    (the message asks for ``expected`` instead, by default every format of the table)."""
    expected = format_table.document_kinds() if expected is None else expected
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return Decoded(data[len(bom):].decode(encoding), encoding + ("-sig" if encoding == "utf-8" else ""))
            except UnicodeDecodeError as e:
                raise LoadError(f"{name}: starts with a {encoding} byte-order mark but is not valid {encoding}.") from e
    sample = data[:SNIFF_BYTES]
    if b"\x00" in sample:
        encoding = _utf16_without_bom(data)
        if encoding is None:
            raise LoadError(f"{name}: looks like a binary file (it contains NUL bytes), not text; "
                            f"upload {expected}.")
        try:
            return Decoded(data.decode(encoding), encoding)
        except UnicodeDecodeError as e:
            raise LoadError(f"{name}: looks like a binary file, not text.") from e
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        pass
    mostly_utf8 = _mostly_utf8(data)
    if mostly_utf8 is not None:
        return mostly_utf8
    matches = from_bytes(data)
    best = matches.best()
    if best is None or best.encoding is None:
        raise LoadError(f"{name}: is not text in any encoding we can detect (it looks binary); "
                        f"upload {expected}.")
    # On short text charset-normalizer ranks sibling single-byte code pages (cp1250/1252/1257 ...) almost
    # equally; Windows-1252 is by far the most common legacy encoding of uploads, so it wins near-ties.
    for match in matches:
        if "cp1252" in match.could_be_from_charset and match.chaos <= best.chaos + WESTERN_TIE_CHAOS:
            try:
                return Decoded(data.decode("cp1252"), "cp1252")
            except UnicodeDecodeError:
                break
    return Decoded(str(best), best.encoding)


def _mostly_utf8(data: bytes) -> Decoded | None:
    """UTF-8 with a few damaged bytes (a truncated download, one bad paste) stays UTF-8, damage replaced.

    Guessing a legacy code page instead would garble every valid multi-byte character in the file.
    """
    text = data.decode("utf-8", errors="replace")
    damaged = text.count("\ufffd") - data.count("\ufffd".encode())
    valid_multibyte = sum(1 for ch in text if ord(ch) > 127 and ch != "\ufffd")
    if valid_multibyte >= 2 * damaged and damaged <= 2 + len(data) // 1000:
        return Decoded(text, "utf-8", f"{damaged} invalid UTF-8 byte sequence(s) replaced with U+FFFD")
    return None


def normalise_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def shebang_language(text: str, languages: Mapping[str, str]) -> str | None:
    """The language ``languages`` gives the interpreter of ``text``'s ``#!`` line (``/usr/bin/env python3``)."""
    if not text.startswith("#!"):
        return None
    first = text.split("\n", 1)[0]
    words = re.split(r"[\s/]+", first[2:].strip())
    for word in reversed(words):
        lang = languages.get(re.sub(r"[\d.]+$", "", word))
        if lang:
            return lang
    return None


def text_format(name: str, text: str) -> tuple[Format, str | None]:
    """(format, language) of decoded text: a row's content test, then extension, file name, shebang, and last a
    fallback row's extension (plain text); an extension no row claims is refused, naming the supported ones."""
    rows = [fmt for fmt in format_table.FORMATS if not fmt.binary]
    ext = extension(name)
    for fmt in rows:
        if fmt.sniff_text is not None and fmt.sniff_text(text):
            return fmt, None
    for fmt in rows:
        if not fmt.fallback and ext in fmt.extensions:
            return fmt, fmt.languages.get(ext)
    stem = PurePosixPath(name).name.lower()
    for fmt in rows:
        if stem in fmt.filenames:
            return fmt, fmt.filenames[stem]
    for fmt in rows:
        language = shebang_language(text, fmt.shebangs) if fmt.shebangs else None
        if language:
            return fmt, language
    for fmt in rows:
        if fmt.fallback and ext in fmt.extensions:
            return fmt, None
    supported = ", ".join(sorted(format_table.supported_extensions()))
    raise LoadError(f"{name}: unsupported file type '{ext}'. Supported: {supported}.")
