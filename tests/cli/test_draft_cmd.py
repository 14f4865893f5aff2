"""``eval draft``: one drafted question per line (the evidence-span JSONL ``eval questions`` reads), the summary on
stderr, errors as one line; ``eval questions`` scores the drafted file on the same collection."""

from __future__ import annotations

import json

from rag_core.cli import main
from rag_core.evaluation.questions import parse_jsonl

QUEUES = """# Wrenfall queues

A delivery queue is a durable list of jobs that workers take in order of arrival.

## Retry behaviour

Every job is retried when a worker crashes, up to the value of `retry_limit` set on the queue.
The retries wait longer each time, doubling the pause between two attempts of one job.
"""
LIMITS = """# Service limits

A support ticket can raise the `retry_limit` ceiling of a queue beyond the default of ten attempts.
Requests are answered within two working days by the platform operations team.

## Payloads

Payloads larger than 256 KB must be stored in the object store and referenced by their address.
"""


def _collection(tmp_path, capsys, name="draft-cli"):
    for file, text in (("queues.md", QUEUES), ("limits.md", LIMITS)):
        (tmp_path / file).write_text(text)
    assert main(["ingest", str(tmp_path / "queues.md"), str(tmp_path / "limits.md"), "--collection", name,
                 "--embedder", "hash"]) == 0
    capsys.readouterr()


def test_draft_prints_one_question_per_line_in_the_evidence_span_format(tmp_path, capsys):
    _collection(tmp_path, capsys)
    assert main(["eval", "draft", "--collection", "draft-cli", "--n", "6", "--json-lines", "--seed", "4"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 6
    records = [json.loads(line) for line in lines]
    texts = {"queues.md": QUEUES, "limits.md": LIMITS}
    for record in records:
        for place in record["evidence"]:
            assert all(span in texts[place["file"]] for span in place["spans"])
    assert {r["type"] for r in records} == {"single", "multi-part", "null"}
    assert "keyword-leaning" in err and "6 questions" in err
    assert len(parse_jsonl(out)) == 6

    file = tmp_path / "drafted.jsonl"
    file.write_text(out)
    assert main(["eval", "questions", str(file), "--collection", "draft-cli", "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["questions"] == 6 and scored["status"] == "complete"


def test_draft_writes_a_file_and_prints_text_without_json_lines(tmp_path, capsys):
    _collection(tmp_path, capsys)
    out_file = tmp_path / "set.jsonl"
    assert main(["eval", "draft", "--collection", "draft-cli", "--n", "3", "--kind", "single", "--out",
                 str(out_file)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("d001 [single] ") and len(parse_jsonl(out_file.read_text())) == 3


def test_draft_errors_are_one_line(tmp_path, capsys):
    assert main(["eval", "draft", "--collection", "no-such-collection"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no collection 'no-such-collection'") and len(err.splitlines()) == 1
    _collection(tmp_path, capsys)
    assert main(["eval", "draft", "--collection", "draft-cli", "--n", "0"]) == 2
    assert "n must be between 1 and" in capsys.readouterr().err
    assert main(["eval", "draft", "--collection", "draft-cli", "--llm"]) == 2
    assert "RAG_LLM_BASE_URL" in capsys.readouterr().err


def test_draft_style_area_is_labelled_and_keeps_the_format(tmp_path, capsys):
    _collection(tmp_path, capsys)
    assert main(["eval", "draft", "--collection", "draft-cli", "--n", "4", "--kind", "single", "--style", "area",
                 "--json-lines", "--seed", "4"]) == 0
    out, err = capsys.readouterr()
    assert "user wording" in err and "keyword-leaning" not in err
    assert len(parse_jsonl(out)) == 4
