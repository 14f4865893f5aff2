"""Documents page: an ingest estimated long on this machine waits for the user's choice (issue 35.8), and every
file an upload leaves out is named with its reason, ZIP members and a folder's hidden files alike (issue 35.7)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from rag_core.config import EmbeddingConfig, RAGConfig, get_settings
from rag_core.loaders.document_store import DocumentStore
from rag_core.services import open_index
from rag_core.serving.jobs import runner_for
from rag_core.serving.throughput import record
from tests.app.apptest_helpers import finish_jobs, page_app

PAGE = str(Path(__file__).resolve().parents[2] / "views" / "documents.py")
HASH_CONFIG = RAGConfig(name="hash-test", embedding=EmbeddingConfig(embedder="hash"))
BIG = ("\n\n".join(f"Paragraph {i} of a long text about topic{i % 50} and its details." for i in range(400))
       ).encode()


def _slow_machine(data_dir) -> None:
    """This machine measured 200 bytes a second on earlier ingests with the hash embedder (a slow model's pace)."""
    embedder_id = open_index(HASH_CONFIG, get_settings()).embedder.id
    record(data_dir, embedder_id, 1_000_000, 5_000.0, 1_000)


def _upload_big(at):
    at.file_uploader(key="documents_uploader").set_value([("big.txt", BIG, "text/plain")]).run()
    assert not at.exception, at.exception
    return at


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_a_long_ingest_says_its_estimate_and_is_queued_only_when_confirmed(data_dir):
    _slow_machine(data_dir)
    at = _upload_big(page_app(PAGE, HASH_CONFIG).run())
    [warning] = [w for w in _warnings(at) if w.startswith("**Indexing big")]
    minutes = round(len(BIG) / 200 / 60)
    assert f"will take about {minutes} min** on this machine" in warning
    assert "chunks" in warning and "measured on this machine" in warning and "wait until it ends" in warning
    assert runner_for(data_dir).active() == [] and runner_for(data_dir).jobs() == []  # nothing queued yet
    assert [d.name for d in DocumentStore(data_dir).list()] == ["big.txt"]  # stored either way
    at.button(key="long_ingest_confirm").click().run()
    assert not at.exception, at.exception
    [job] = runner_for(data_dir).jobs()
    assert [f.name for f in job.files] == ["big.txt"]
    finish_jobs(at)
    assert not [w for w in _warnings(at) if w.startswith("**Indexing big")]


def test_dont_index_now_keeps_the_file_stored_and_queues_nothing(data_dir):
    _slow_machine(data_dir)
    at = _upload_big(page_app(PAGE, HASH_CONFIG).run())
    at.button(key="long_ingest_cancel").click().run()
    assert not at.exception, at.exception
    assert runner_for(data_dir).jobs() == []
    assert any(i.value.startswith(r"Stored, not indexed: big\.txt") for i in at.info), [i.value for i in at.info]
    assert list(at.dataframe[-1].value["index"]) == ["not indexed"]
    assert not [w for w in _warnings(at) if w.startswith("**Indexing big")]


def test_a_quick_ingest_is_queued_at_once(data_dir):
    at = _upload_big(page_app(PAGE, HASH_CONFIG).run())  # nothing recorded: measured on a sample, fast
    assert not [w for w in _warnings(at) if w.startswith("**Indexing big")]
    assert len(runner_for(data_dir).jobs()) == 1
    finish_jobs(at)


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in names:
            z.writestr(name, "# Title\n\nSome text.\n")
    return buf.getvalue()


def test_the_zip_members_left_out_are_named_with_their_reasons(data_dir):
    at = page_app(PAGE, HASH_CONFIG).run()
    data = _zip(["docs/guide.md", ".vitepress/config.ts", "_headers", "../escape.md"])
    at.file_uploader(key="documents_uploader").set_value([("site.zip", data, "application/zip")]).run()
    assert not at.exception, at.exception
    [skipped] = [i.value for i in at.info if "skipped" in i.value]
    assert skipped.startswith("3 file(s) of the archive skipped: ")
    # the reasons are escaped too: a folder's name comes from the upload
    assert r"\.vitepress/config\.ts (skipped: inside the tool or hidden folder \.vitepress/)" in skipped
    assert r"\_headers (skipped: unsupported type \(no extension\))" in skipped
    assert r"\.\./escape\.md (refused: its path escapes the archive)" in skipped
    assert [d.name for d in DocumentStore(data_dir).list()] == ["docs/guide.md"]
    finish_jobs(at)


def test_a_folder_uploads_hidden_files_are_named_as_a_zips_would_be(data_dir):
    at = page_app(PAGE, HASH_CONFIG).run()
    at.file_uploader(key="documents_folder_uploader").set_value([
        ("site/guide.md", b"# Guide\n\nText.\n", "text/markdown"),
        ("site/.vitepress/config.ts", b"export default {}\n", "text/plain"),
        ("site/.DS_Store", b"\x00\x01binary", "application/octet-stream")]).run()
    assert not at.exception, at.exception
    [skipped] = [i.value for i in at.info if "skipped" in i.value]
    assert skipped.startswith("2 file(s) of the folder skipped: ")
    assert r"site/\.vitepress/config\.ts (skipped: inside the tool or hidden folder \.vitepress/)" in skipped
    assert r"site/\.DS\_Store (skipped: a hidden file)" in skipped
    assert [d.name for d in DocumentStore(data_dir).list()] == ["site/guide.md"]
    finish_jobs(at)
