"""Issue 35 item 7: every ZIP member left out is named with its reason (none dropped silently)."""

import io
import zipfile

from rag_core.loaders.archives import expand_zip, skipped_members


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for n in names:
            z.writestr(n, "# Title\n\nSome text.\n")
    return buf.getvalue()


def test_every_left_out_member_is_named_with_a_reason():
    names = ["docs/guide.md", ".vitepress/config.ts", "_headers", "_redirects", "talk.mp3", "design.fig",
             "../escape.md", ".env", "node_modules/x/readme.md"]
    data = _zip(names)
    members, _ = expand_zip("site.zip", data)
    skipped = dict(skipped_members(data))
    kept = {m for m, _ in members}
    assert kept | set(skipped) == set(names)  # nothing vanishes: loaded or named
    assert not kept & set(skipped)
    assert skipped["../escape.md"] == "refused: its path escapes the archive"
    assert "hidden folder .vitepress/" in skipped[".vitepress/config.ts"]
    assert "unsupported type (.mp3)" in skipped["talk.mp3"]
    assert "unsupported type (.fig)" in skipped["design.fig"]
    assert "unsupported type" in skipped["_headers"]
    assert "node_modules/" in skipped["node_modules/x/readme.md"]


def test_corrupt_archive_has_no_skips_to_name():
    assert skipped_members(b"PK\x03\x04 not a zip") == []


def test_add_files_reports_the_skipped_members(tmp_path):
    from rag_core.loaders.document_store import DocumentStore, add_files
    from ui.documents.documents_view import report_added

    report = add_files(DocumentStore(tmp_path), [("site.zip", _zip(["guide.md", "../escape.md", "talk.mp3"]))])
    assert [d.name for d in report.added] == ["guide.md"]
    assert dict(report.skipped_files) == {"../escape.md": "refused: its path escapes the archive",
                                          "talk.mp3": "skipped: unsupported type (.mp3)"}
    messages: list = []
    report_added(report, messages)
    text = " ".join(m for _, m in messages)
    assert "2 file(s) of the archive skipped" in text and r"\.\./escape\.md (refused" in text and r"talk\.mp3" in text
