"""ZIPs whose members lie about their size, and uploads of too many files: reading stops at the cap with a message,
memory stays bounded, and what came first is kept."""

from __future__ import annotations

import io
import os
import re
import struct
import tracemalloc
import zipfile
import zlib

import pytest

from rag_core.errors import LoadError
from rag_core.loaders import load_bytes
from rag_core.loaders.archives import expand_archives
from rag_core.loaders.document_store import DocumentStore, add_files
from rag_core.loaders.zipread import InflateLimit, read_member

MB = 1024 * 1024
INFLATES_TO = 64 * MB  # what the lying member really holds; it declares 100 bytes


def _lie(data: bytes, member: str, declared: int) -> bytes:
    """``data`` with ``member``'s uncompressed size set to ``declared`` in its local header and central directory."""
    out = bytearray(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        offset = archive.getinfo(member).header_offset
    struct.pack_into("<I", out, offset + 22, declared)
    encoded, at = member.encode(), out.find(b"PK\x01\x02")
    while at != -1:
        (length,) = struct.unpack_from("<H", out, at + 28)
        if out[at + 46 : at + 46 + length] == encoded:
            struct.pack_into("<I", out, at + 24, declared)
        at = out.find(b"PK\x01\x02", at + 4)
    return bytes(out)


def _zip(members: dict[str, bytes], *, big: str | None = None, head: bytes = b"", method=zipfile.ZIP_DEFLATED,
         ) -> bytes:
    """A ZIP of ``members``, plus (when ``big`` is named) a member of ``head`` and ``INFLATES_TO`` zero bytes that
    claims to hold 100 bytes; the big member is written in 1 MB steps, so building it stays small too."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
        if big is not None:
            info = zipfile.ZipInfo(big)
            info.compress_type = method
            with archive.open(info, "w") as stream:
                stream.write(head)
                for _ in range(INFLATES_TO // MB):
                    stream.write(bytes(MB))
    data = buffer.getvalue()
    return _lie(data, big, 100) if big is not None else data


def _refused_with_peak(call) -> tuple[LoadError, int]:
    """The ``LoadError`` ``call()`` raises, and the peak of memory allocated meanwhile (bytes)."""
    tracemalloc.start()
    try:
        with pytest.raises(LoadError) as refused:
            call()
        return refused.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


BOMB = r"inflates to more than \d+ MB from \d+ (KB|bytes) \(a zip bomb\?\); refusing to open it\."


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2])
def test_a_member_that_lies_about_its_size_is_cut_at_the_budget_as_a_zip_bomb(method):
    bomb = _zip({"ok.md": b"# Fine\n"}, big="big.md", method=method)
    assert len(bomb) < 100_000

    def expand():
        items, errors = expand_archives([("bomb.zip", bomb)], max_member_bytes=50 * MB)
        assert items == [] and [name for name, _ in errors] == ["bomb.zip"]
        raise LoadError(errors[0][1])

    refused, peak = _refused_with_peak(expand)
    assert re.fullmatch("bomb.zip: " + BOMB, str(refused))
    assert peak < 32 * MB  # stopped at the archive's budget (10-13 MB here), not at the 64 MB the member holds


def test_a_lying_member_over_the_per_file_limit_is_refused_and_the_others_kept():
    # 400 KB that do not compress make the archive's budget 80 MB, so the 2 MB limit per file decides
    archive = _zip({"ok.md": b"# Fine\n", "noise.bin": os.urandom(400_000)}, big="docs/big.md")
    items, errors = expand_archives([("docs.zip", archive)], max_member_bytes=2 * MB)
    assert items == [("ok.md", b"# Fine\n")]
    assert errors == [("docs/big.md", "docs/big.md: inflates to more than 2 MB (whatever its header says), over the "
                                      "limit per file (RAG_MAX_UPLOAD_MB); split it or raise the limit.")]


def test_the_reader_stops_at_its_limit_and_checks_the_declared_size():
    data = _zip({}, big="big.md", method=zipfile.ZIP_BZIP2)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo("big.md")
    with pytest.raises(InflateLimit) as stopped:
        read_member(data, info, 3 * MB)
    assert 3 * MB < stopped.value.inflated <= 4 * MB  # one step past the limit at most
    with pytest.raises(zipfile.BadZipFile, match="its header says 100"):
        read_member(data, info, 100 * MB)


def test_honest_members_of_every_method_read_as_zipfile_reads_them():
    text = ("# Guide\n\n" + "Some words, then some more words.\n" * 5000).encode()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
            archive.writestr(f"m{method}.md", text, compress_type=method)
        archive.writestr("empty.md", b"", compress_type=zipfile.ZIP_DEFLATED)
    items, errors = expand_archives([("all.zip", buffer.getvalue())])
    assert errors == []
    assert items == [(f"m{m}.md", text) for m in (0, 8, 12, 14)] + [("empty.md", b"")]


def test_a_docx_whose_part_lies_about_its_size_is_refused_before_parsing(make_docx):
    genuine = make_docx(lambda d: d.add_paragraph("Hello"))
    with zipfile.ZipFile(io.BytesIO(genuine)) as source:
        parts = {info.filename: source.read(info) for info in source.infolist()}
    xml = parts.pop("word/document.xml")
    bomb = _zip(parts, big="word/document.xml", head=xml)  # a real document.xml, then 64 MB of padding
    assert len(bomb) < 200_000
    refused, peak = _refused_with_peak(lambda: load_bytes("report.docx", bomb))
    assert re.fullmatch("report.docx: the DOCX " + BOMB, str(refused))
    assert peak < 32 * MB


def test_a_docx_part_bigger_than_declared_but_within_the_budget_is_refused_as_corrupt(make_docx):
    genuine = make_docx(lambda d: d.add_paragraph("Hello"))
    data = _lie(genuine, "word/document.xml", 10)
    with pytest.raises(LoadError, match=r"report.docx: the DOCX is corrupt \(part word/document.xml: inflates to "
                                        r"[\d,]+ bytes, its header says 10\); open it in Word and save it again."):
        load_bytes("report.docx", data)
    assert "Hello" in load_bytes("report.docx", genuine).text


def test_running_out_of_memory_unpacking_is_a_message_not_a_traceback(data_dir, monkeypatch):
    archive = _zip({"a.md": b"# A\n", "b.md": b"# B\n"})

    class Exhausted:
        unconsumed_tail, eof = b"", False

        def decompress(self, *args):
            raise MemoryError

    monkeypatch.setattr(zlib, "decompressobj", lambda *args: Exhausted())
    report = add_files(DocumentStore(data_dir), [("docs.zip", archive), ("c.md", b"# C\n")])
    assert [d.name for d in report.added] == ["c.md"]
    assert report.errors == [("docs.zip", "docs.zip: too large to unpack in the memory this server has; "
                                          "upload it in smaller parts.")]


# ------------------------------------------------------------------------------------ files per upload


def test_an_upload_past_the_file_limit_keeps_the_first_files_and_names_the_rest(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_MAX_UPLOAD_FILES", "3")
    store = DocumentStore(data_dir)
    folder = [(f"docs/d{i}.md", f"# Doc {i}\n".encode()) for i in range(5)]
    report = add_files(store, folder)
    assert [d.name for d in report.added] == ["docs/d0.md", "docs/d1.md", "docs/d2.md"]
    assert report.errors == [("2 more files", "Only the first 3 of 5 files of this upload were loaded: one upload "
                                              "takes at most 3 files (RAG_MAX_UPLOAD_FILES). The other 2, from "
                                              "docs/d3.md on, were not loaded; upload them in another batch.")]
    report = add_files(store, folder[3:])  # the rest, in another batch: nothing was lost
    assert [d.name for d in report.added] == ["docs/d3.md", "docs/d4.md"] and len(store.list()) == 5


def test_zip_members_count_towards_the_file_limit(data_dir, monkeypatch):
    monkeypatch.setenv("RAG_MAX_UPLOAD_FILES", "3")
    store = DocumentStore(data_dir)
    members = {f"z{i}.md": f"# Z {i}\n".encode() for i in range(2)}
    report = add_files(store, [("a.md", b"# A\n"), ("b.md", b"# B\n"), ("more.zip", _zip(members))])
    assert [d.name for d in report.added] == ["a.md", "b.md", "z0.md"]
    [(_, message)] = report.errors
    assert message.startswith("Only the first 3 of 4 files of this upload were loaded") and "from z1.md on" in message
    many = {f"m{i}.md": b"# M\n" for i in range(4)}
    report = add_files(store, [("many.zip", _zip(many))])
    assert report.errors == [("many.zip", "many.zip: holds more than 3 files, over the limit of 3 per upload "
                                          "(RAG_MAX_UPLOAD_FILES); upload it in smaller parts.")]


def test_a_zip_of_too_many_entries_is_refused_before_zipfile_parses_them(data_dir, monkeypatch):
    """zipfile makes an object of every central-directory entry: 200,000 empty entries took 111 MB."""
    from rag_core.loaders import detect

    many = _zip({f"m{i}.md": b"# M\n" for i in range(6)})
    monkeypatch.setenv("RAG_MAX_UPLOAD_FILES", "5")
    monkeypatch.setattr(detect, "MAX_SNIFFED_ENTRIES", 5)

    def never(*args, **kwargs):
        raise AssertionError("the central directory was parsed")

    monkeypatch.setattr(zipfile, "ZipFile", never)
    report = add_files(DocumentStore(data_dir), [("many.zip", many)])
    assert report.errors == [("many.zip", "many.zip: holds more than 5 files, over the limit of 5 per upload "
                                          "(RAG_MAX_UPLOAD_FILES); upload it in smaller parts.")]
