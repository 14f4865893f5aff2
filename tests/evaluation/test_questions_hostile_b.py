"""Question files from old tools or hostile hands: a clear message naming the file and line, never 'unexpected'."""

from __future__ import annotations

import pytest

from rag_core.evaluation.questions import parse_upload


def test_a_cr_only_csv_reads_like_any_other():
    data = b"question,answer_text\rHow do I rotate a key?,Settings\rWhat is the default port?,8501\r"
    assert [q.question for q in parse_upload("old.csv", data).questions] == [
        "How do I rotate a key?", "What is the default port?"]


def test_a_csv_field_over_the_csv_limit_names_the_file_and_row():
    data = ("question,answer_text\nq1,a\n\"" + "x" * 140_000 + "\",a\n").encode()
    with pytest.raises(ValueError, match=r"big\.csv row \d+: not readable as CSV"):
        parse_upload("big.csv", data)


def test_a_deeply_nested_jsonl_line_names_the_file_and_line():
    data = b'{"question": "q1"}\n' + b'{"a":' * 100_000 + b"\n"
    with pytest.raises(ValueError, match=r"deep\.jsonl line 2: not valid JSON"):
        parse_upload("deep.jsonl", data)


def test_bad_utf8_in_a_beir_file_names_the_file_and_line(tmp_path):
    from rag_core.evaluation.questions import load_beir

    (tmp_path / "qrels").mkdir()
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "corpus.jsonl").write_bytes(b'{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "\xff"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "ok?"}\n')
    with pytest.raises(ValueError, match=r"corpus\.jsonl line 2: not UTF-8 text"):
        load_beir(tmp_path)
