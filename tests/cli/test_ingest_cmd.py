"""`python -m rag_core ingest`: per-file status, errors that do not stop the others, totals, JSON."""

from __future__ import annotations

import json

from rag_core.cli import main


def run_json(capsys, *argv):
    code = main(["ingest", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_ingest_reports_each_file_and_keeps_going(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\nAlpha widgets spin clockwise.\n")
    (folder / "b.txt").write_text("Beta gadgets are blue.\n")
    (folder / "empty.md").write_text("")
    code, out = run_json(capsys, str(folder), "--collection", "cli-test", "--embedder", "hash")
    assert code == 1
    status = {row["path"].rsplit("/", 1)[-1]: row["status"] for row in out["files"]}
    assert status == {"a.md": "indexed", "b.txt": "indexed", "empty.md": "error"}
    errors = [row["error"] for row in out["files"] if row["status"] == "error"]
    assert len(errors) == 1 and "empty" in errors[0]
    assert out["embedder"] == "hash-384"
    assert out["totals"]["indexed"] == 2 and out["totals"]["errors"] == 1
    assert out["totals"]["chunks"]["document"] == 2
    assert out["totals"]["chunks_per_s"] > 0

    # Second run: the collection's embedder is reused without --embedder, nothing is re-indexed.
    code, again = run_json(capsys, str(folder / "a.md"), "--collection", "cli-test")
    assert code == 0
    assert main(["ingest", str(folder / "a.md"), "--collection", "cli-test"]) == 0
    assert f"unchanged {folder / 'a.md'}" in capsys.readouterr().out  # status and path stay apart
    assert [row["status"] for row in again["files"]] == ["unchanged"]
    assert again["embedder"] == "hash-384" and again["totals"]["chunks"] == {}


def test_ingest_text_mode_and_bad_arguments(tmp_path, capsys):
    doc = tmp_path / "guide.md"
    doc.write_text("# Guide\n\nRotate the key every 90 days.\n")
    assert main(["ingest", str(doc), "--collection", "cli-text", "--embedder", "hash"]) == 0
    out = capsys.readouterr().out
    assert f"indexed  {doc}" in out
    assert "cli-text: 1 indexed, 0 unchanged, 0 failed" in out
    assert main(["ingest", str(doc), "--collection", "../bad", "--embedder", "hash"]) == 2
    assert "invalid collection name" in capsys.readouterr().err
    assert main(["ingest", str(doc), "--collection", "cli-text", "--max-tokens", "128"]) == 2
    assert "each chunking configuration has its own collection" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "missing.md"), "--collection", "cli-text"]) == 2
    assert "no such file or folder" in capsys.readouterr().err


def test_same_named_files_in_different_folders_stay_distinct(tmp_path, capsys):
    for folder, text in (("tutorial", "# Tutorial\n\nFirst steps with widgets.\n"),
                         ("advanced", "# Advanced\n\nTuning widget caches.\n")):
        (tmp_path / "docs" / folder).mkdir(parents=True)
        (tmp_path / "docs" / folder / "index.md").write_text(text)
    code, out = run_json(capsys, str(tmp_path / "docs"), "--collection", "cli-names", "--embedder", "hash")
    assert code == 0
    assert sorted(row["name"] for row in out["files"]) == ["advanced/index.md", "tutorial/index.md"]
    assert [row["status"] for row in out["files"]] == ["indexed", "indexed"]
    assert out["totals"]["chunks"]["document"] == 2


def test_errors_go_to_stderr_and_stdout_stays_clean(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Alpha\n\nAlpha widgets spin clockwise.\n")
    (folder / "empty.md").write_text("")
    missing = tmp_path / "missing.md"
    assert main(["ingest", str(folder), str(missing), "--collection", "cli-err", "--embedder", "hash", "--json"]) == 1
    captured = capsys.readouterr()
    out = json.loads(captured.out)  # nothing but the JSON object on stdout
    status = {row["path"].rsplit("/", 1)[-1]: row["status"] for row in out["files"]}
    assert status == {"a.md": "indexed", "empty.md": "error", "missing.md": "error"}
    err_lines = captured.err.splitlines()
    assert len(err_lines) == 2 and all(line.startswith("error: ") for line in err_lines)
    assert any("empty.md" in line and "empty" in line for line in err_lines)
    assert any("missing.md" in line and "no such file" in line for line in err_lines)

    assert main(["ingest", str(folder), "--collection", "cli-err2", "--embedder", "hash"]) == 1
    captured = capsys.readouterr()
    assert not any(line.startswith("error") for line in captured.out.splitlines())
    assert "empty.md" in captured.err


def test_missing_paths_do_not_create_the_collection(tmp_path, capsys):
    assert main(["ingest", str(tmp_path / "missing.md"), "--collection", "cli-none", "--embedder", "minilm"]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    assert main(["search", "anything", "--collection", "cli-none"]) == 2
    assert "no collection 'cli-none'" in capsys.readouterr().err
    doc = tmp_path / "a.md"
    doc.write_text("# Alpha\n\nAlpha widgets.\n")
    # The failed run did not pin the collection to minilm: another embedder is accepted.
    assert main(["ingest", str(doc), "--collection", "cli-none", "--embedder", "hash"]) == 0


def test_json_names_the_folder_files_it_skips(tmp_path, capsys):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nText about apples.\n")
    (folder / "talk.mp3").write_bytes(b"ID3 not a document")
    code, out = run_json(capsys, str(folder), "--collection", "cli-skips", "--embedder", "hash")
    assert code == 0
    assert out["skipped"] == [{"path": str(folder / "talk.mp3"), "reason": "skipped: unsupported type (.mp3)"}]
    assert [row["name"] for row in out["files"]] == ["a.md"]
