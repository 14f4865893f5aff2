"""Reading ZIP members with a byte cap: what a member really inflates to, never what its header says.

A ZIP's sizes are claims. An 894-byte archive declared a 100-byte member that inflated to 1 GB, and ``zipfile``
inflates a whole bzip2 (or, reading a member at once, deflate) stream before cutting it to the declared size: 2 GB
of memory for one upload. Here a member is inflated at most ``STEP`` bytes at a time and reading stops as soon as
``limit`` is passed, so a lie costs at most the limit in time and one step in memory. ``zipfile`` still reads the
central directory; the member data is read from the archive's bytes here.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zipfile
import zlib
from collections.abc import Iterator

STEP = 1024 * 1024  # most bytes of output (and of compressed input) handled in one decompressor call
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature, ..., file name length, extra field length
_ENCRYPTED = 0x1


class InflateLimit(Exception):
    """A member inflates past the byte limit it was read with (``inflated`` bytes seen when reading stopped)."""

    def __init__(self, member: str, limit: int, inflated: int):
        super().__init__(f"{member}: inflates past {limit:,} bytes")
        self.member, self.limit, self.inflated = member, limit, inflated


def entries_at_most(data: bytes) -> int:
    """An upper bound on the entries of a ZIP's central directory, found without parsing it: ``zipfile`` makes an
    object of every entry (a 17 MB archive of 200,000 empty entries took 111 MB), so a count is checked first. Member
    data can hold the signature too, so this may count more than there are, never fewer."""
    return data.count(b"PK\x01\x02")


def human_bytes(n: int) -> str:
    """``322 bytes``, ``64 KB``, ``12 MB``: the sizes messages about archives name."""
    if n < 1024:
        return f"{n} bytes"
    return f"{n / 1024:.0f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.0f} MB"


def expansion_budget(archive_bytes: int, max_total: int, max_ratio: float) -> int:
    """Most bytes an archive of ``archive_bytes`` may inflate to in all: ``max_total``, and past 10 MB no more than
    ``max_ratio`` times its own size (the rule ``formats.zip_expansion`` applies to the declared sizes)."""
    return min(max_total, max(10 * 1024 * 1024, int(max_ratio * archive_bytes)))


def _member_data(data: bytes, info: zipfile.ZipInfo) -> memoryview:
    """The compressed bytes of ``info``, located through its local header (no copy)."""
    if info.flag_bits & _ENCRYPTED:
        raise NotImplementedError("the file is encrypted")
    start = info.header_offset
    header = data[start : start + _LOCAL_HEADER.size]
    if len(header) != _LOCAL_HEADER.size:
        raise zipfile.BadZipFile("truncated local file header")
    signature, name_length, extra_length = _LOCAL_HEADER.unpack(header)
    if signature != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    begin = start + _LOCAL_HEADER.size + name_length + extra_length
    raw = memoryview(data)[begin : begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise zipfile.BadZipFile("truncated member data")
    return raw


def _inflate_deflate(raw: memoryview) -> Iterator[bytes]:
    decompressor = zlib.decompressobj(-15)
    for start in range(0, len(raw), STEP):
        pending: bytes | memoryview = raw[start : start + STEP]
        while True:
            out = decompressor.decompress(pending, STEP)
            if out:
                yield out
            pending = decompressor.unconsumed_tail
            if decompressor.eof or (not pending and len(out) < STEP):
                break
        if decompressor.eof:
            return
    tail = decompressor.flush()  # all input was taken in, so whatever is left is short; a cut stream fails the CRC
    if tail:
        yield tail


def _inflate_stream(raw: memoryview, decompressor) -> Iterator[bytes]:
    """bz2 / lzma decompressors: ``decompress(data, max_length)`` and ``needs_input``."""
    for start in range(0, len(raw), STEP):
        out = decompressor.decompress(raw[start : start + STEP], STEP)
        if out:
            yield out
        while not decompressor.eof and not decompressor.needs_input:
            out = decompressor.decompress(b"", STEP)
            if out:
                yield out
        if decompressor.eof:
            return


def _inflate_lzma(raw: memoryview) -> Iterator[bytes]:
    """ZIP's LZMA: a 2-byte version, a 2-byte properties size and the properties, then raw LZMA1 data."""
    if len(raw) < 4:
        raise zipfile.BadZipFile("truncated LZMA header")
    (size,) = struct.unpack("<H", raw[2:4])
    if len(raw) < 4 + size:
        raise zipfile.BadZipFile("truncated LZMA header")
    try:
        filters = [lzma._decode_filter_properties(lzma.FILTER_LZMA1, bytes(raw[4 : 4 + size]))]
    except lzma.LZMAError as e:
        raise zipfile.BadZipFile(f"bad LZMA properties ({e})") from e
    yield from _inflate_stream(raw[4 + size :], lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=filters))


def _inflate(raw: memoryview, method: int) -> Iterator[bytes]:
    if method == zipfile.ZIP_STORED:
        for start in range(0, len(raw), STEP):
            yield bytes(raw[start : start + STEP])
    elif method == zipfile.ZIP_DEFLATED:
        yield from _inflate_deflate(raw)
    elif method == zipfile.ZIP_BZIP2:
        yield from _inflate_stream(raw, bz2.BZ2Decompressor())
    elif method == zipfile.ZIP_LZMA:
        yield from _inflate_lzma(raw)
    else:
        raise NotImplementedError(f"compression method {method} is not supported (use deflate)")


def iter_member(data: bytes, info: zipfile.ZipInfo, limit: int) -> Iterator[bytes]:
    """The inflated bytes of member ``info`` of archive ``data``, in pieces of at most ``STEP`` bytes.

    Raises ``InflateLimit`` before yielding more than ``limit`` bytes in all; ``zipfile.BadZipFile`` for damaged
    data, a wrong CRC or a size other than the header declares; ``NotImplementedError`` for encryption or an
    unknown compression method.
    """
    seen = 0
    crc = 0
    try:
        for piece in _inflate(_member_data(data, info), info.compress_type):
            seen += len(piece)
            if seen > limit:
                raise InflateLimit(info.filename, limit, seen)
            crc = zlib.crc32(piece, crc)
            yield piece
    except (zlib.error, OSError, EOFError, lzma.LZMAError) as e:
        raise zipfile.BadZipFile(f"damaged compressed data ({e})") from e
    if seen != info.file_size:
        raise zipfile.BadZipFile(f"inflates to {seen:,} bytes, its header says {info.file_size:,}")
    if crc != info.CRC:
        raise zipfile.BadZipFile("bad CRC-32")


def read_member(data: bytes, info: zipfile.ZipInfo, limit: int) -> bytes:
    """``iter_member`` joined: the member's bytes, never more than ``limit`` of them in memory."""
    return b"".join(iter_member(data, info, limit))
