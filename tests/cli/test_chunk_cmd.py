import json

from rag_core.cli import main

GUIDE = "# Auth\n\nTokens expire.\n\n## Rows\n\n| k | v |\n|---|---|\n| a | 1 |\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_chunk_json_lines_have_the_contract_fields(tmp_path, capsys):
    path = write(tmp_path, "guide.md", GUIDE)
    assert main(["chunk", str(path), "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["granularity"], r["heading_path"]) for r in records] == [
        ("document", []), ("section", ["Auth"]), ("section", ["Auth", "Rows"]), ("paragraph", ["Auth"]),
        ("paragraph", ["Auth", "Rows"]), ("row", ["Auth", "Rows"]),
    ]
    for r in records:
        assert {"id", "doc_id", "granularity", "chunk_type", "language", "start", "end", "tokens", "heading_path",
                "parent_id", "child_ids", "verbatim", "text"} <= set(r)
        assert r["verbatim"] == (GUIDE[r["start"] : r["end"]] == r["text"])
    assert records[-1]["text"] == "| k | v |\n|---|---|\n| a | 1 |" and records[-1]["verbatim"] is False


def test_chunk_granularity_and_fixed_strategy(tmp_path, capsys):
    path = write(tmp_path, "guide.md", GUIDE)
    assert main(["chunk", str(path), "--granularity", "row", "--json"]) == 0
    assert [json.loads(x)["granularity"] for x in capsys.readouterr().out.splitlines()] == ["row"]
    assert main(["chunk", str(path), "--strategy", "fixed", "--max-tokens", "32", "--overlap", "4", "--json"]) == 0
    records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["text"] for r in records] == [GUIDE[:-1] if records[0]["end"] == len(GUIDE) - 1 else GUIDE]


def test_chunk_bad_file_and_bad_options_exit_2(tmp_path, capsys):
    good = write(tmp_path, "ok.md", "Fine text.\n")
    assert main(["chunk", str(tmp_path / "missing.md"), str(good), "--json"]) == 2
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2  # the good file was still chunked (document + paragraph)
    assert "missing.md" in captured.err
    assert main(["chunk", str(good), "--max-tokens", "10"]) == 2
    assert "max_tokens" in capsys.readouterr().err


def test_lint_counts_folder_recursively(tmp_path, capsys):
    sub = tmp_path / "docs" / "deep"
    sub.mkdir(parents=True)
    write(sub, "a.md", "# A\n\n```python\n" + "\n".join(f"x{i} = {i}" for i in range(60)) + "\n```\n")
    write(tmp_path / "docs", "b.md", "Para one. Para two.\n")
    assert main(["lint", str(tmp_path / "docs"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["files"] == 2 and summary["total"] == 0
    assert summary["counts"]["code_fence_cut"] == 0
    fixed_args = ["lint", str(tmp_path / "docs"), "--strategy", "fixed", "--max-tokens", "64", "--overlap", "0"]
    assert main([*fixed_args, "--json"]) == 0
    fixed = json.loads(capsys.readouterr().out)
    # 6 windows over a.md: 5 boundaries fall inside the fence, each cuts the chunks on both sides.
    assert fixed["counts"]["code_fence_cut"] == 10
    assert fixed["total"] == sum(n for k, n in fixed["counts"].items() if k != "oversized_atomic")
    assert main([*fixed_args, "--strict"]) == 1


def test_default_overlap_fits_a_small_max_tokens(tmp_path, capsys):
    """Without --overlap, a small --max-tokens must not fail on the default overlap (32 structure, 50 fixed)."""
    path = write(tmp_path, "guide.md", GUIDE)
    for strategy, max_tokens in (("structure", "32"), ("fixed", "40"), ("fixed", "50")):
        assert main(["chunk", str(path), "--strategy", strategy, "--max-tokens", max_tokens, "--json"]) == 0, \
            capsys.readouterr().err
        records = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert records and all(r["verbatim"] == (GUIDE[r["start"]:r["end"]] == r["text"]) for r in records)
    assert main(["lint", str(path), "--max-tokens", "32", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == 1
    # An explicit overlap that does not fit is still refused.
    assert main(["chunk", str(path), "--max-tokens", "32", "--overlap", "32"]) == 2
    assert "overlap" in capsys.readouterr().err


def test_lint_missing_path_is_reported_and_the_others_still_linted(tmp_path, capsys):
    good = write(tmp_path, "ok.md", "# Ok\n\nFine text.\n")
    assert main(["lint", str(good), str(tmp_path / "missing"), "--json"]) == 2
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["files"] == 1 and summary["failed"] == 1 and summary["chunks"] > 0
    assert captured.err.count("\n") == 1 and "missing" in captured.err


def test_lint_file_named_twice_is_linted_once(tmp_path, capsys):
    write(tmp_path, "ok.md", "# Ok\n\nFine text.\n")
    assert main(["lint", str(tmp_path), str(tmp_path / "ok.md"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == 1


def test_chunk_and_ingest_default_the_same_overlap_for_a_small_max_tokens():
    """One rule for an overlap nobody chose: at most a quarter of --max-tokens (64 → 16), the same for both."""
    import argparse

    from rag_core.cli.chunk_cmd import _config
    from rag_core.cli.ingest_cmd import _chunking
    from rag_core.config import ChunkingConfig

    chunked = _config(argparse.Namespace(overlap=None, strategy="structure", max_tokens=64))
    assert chunked.overlap == _chunking(64).overlap == 16
    assert ChunkingConfig.default_overlap("structure") == 32 and ChunkingConfig.default_overlap("fixed") == 50
    assert ChunkingConfig.default_overlap("fixed", 512) == 50 and ChunkingConfig.default_overlap("structure", 100) == 25


def test_chunk_json_offsets_index_a_file_with_front_matter(tmp_path, capsys):
    text = "---\ntitle: Auth guide\nowner: platform\n---\n\n" + GUIDE
    path = write(tmp_path, "guide.md", text)
    for strategy in ("structure", "fixed"):
        assert main(["chunk", str(path), "--strategy", strategy, "--max-tokens", "32", "--overlap", "4",
                     "--json"]) == 0
        records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert records and all("title:" not in r["text"] for r in records)
        for r in records:
            assert r["verbatim"] == (text[r["start"] : r["end"]] == r["text"])
        assert sum(r["verbatim"] for r in records) >= len(records) - 1  # only the re-headed table row is not
