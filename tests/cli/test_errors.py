"""Every CLI failure is one line on stderr (no usage block, no pydantic dump, no traceback) with exit 2."""

from __future__ import annotations

import pytest

from rag_core.cli import main


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse exits itself
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, needle", [
    (["chunk", "x.md", "--strategy", "bogus"], "invalid choice: 'bogus'"),
    (["chunk", "x.md", "--granularity", "bogus"], "invalid choice: 'bogus'"),
    (["lint", "x.md", "--max-tokens", "abc"], "invalid int value: 'abc'"),
    (["search", "q"], "--collection"),
    (["nosuchcommand"], "invalid choice"),
    (["eval"], "required"),
])
def test_argument_errors_are_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and needle in err, err


def test_validation_errors_are_one_line(capsys, tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nAlpha.\n")
    code, out, err = run(capsys, "ingest", str(doc), "--collection", "cli-big", "--embedder", "hash",
                         "--max-tokens", "99999")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "max_tokens" in err and "8192" in err and "pydantic.dev" not in err, err


def test_bad_data_dir_is_one_line_not_a_traceback(capsys, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("RAG_DATA_DIR", str(blocker / "data"))
    code, out, err = run(capsys, "search", "hello", "--collection", "abc")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err


def test_print_json_writes_non_finite_scores_as_null(capsys):
    import json as _json

    from rag_core.cli import print_json

    print_json({"hits": [{"score": float("nan"), "confidence": float("inf")}, {"score": -float("inf")}], "n": 1.5})
    out = capsys.readouterr().out
    assert "NaN" not in out and "Infinity" not in out
    assert _json.loads(out) == {"hits": [{"score": None, "confidence": None}, {"score": None}], "n": 1.5}


@pytest.mark.parametrize("command, what", [("search", "query"), ("ask", "question")])
def test_a_query_with_a_lone_surrogate_is_one_line(capsys, tmp_path, command, what):
    """Issue 39 item 9 at the CLI: a query with a lone surrogate (bytes that were not UTF-8) crashed the MiniLM path
    as 'unexpected TypeError: TextEncodeInput must be …'; it is refused with its position."""
    doc = tmp_path / "a.md"
    doc.write_text("# Keys\n\nRotate the key in Settings.\n")
    assert run(capsys, "ingest", str(doc), "--collection", "cli-surrogate", "--embedder", "hash")[0] == 0
    code, out, err = run(capsys, command, "rotate\udcff key", "--collection", "cli-surrogate")
    assert code == 2 and out == ""
    assert err == f"error: the {what} is not valid text: a lone surrogate (U+DCFF) at character 7 (bytes that are " \
                  "not UTF-8?); retype it\n", err
