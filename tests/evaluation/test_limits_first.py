"""Issue 39 item 8: ``RAG_MAX_QUESTIONS`` is checked while reading, before the work it limits: a question file is
refused at the first row past the limit (the rest is never parsed), a BEIR folder at its first judged query past
it (before the corpus is read), an in-code BEIR dataset before any indexing."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from rag_core.evaluation.beir import evaluate_beir
from rag_core.evaluation.questions import BeirDataset, load_beir, parse_upload


def _jsonl(n: int) -> bytes:
    return b"".join(b'{"question": "What is item %d?", "answer_text": "item %d"}\n' % (i, i) for i in range(n))


def test_a_question_file_stops_at_the_first_row_past_the_limit(monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTIONS", "2")
    data = _jsonl(3) + b"{not json, never read\n"
    with pytest.raises(ValueError, match=r"more than 2 questions \(stopped reading at line 3\).*RAG_MAX_QUESTIONS"):
        parse_upload("q.jsonl", data)
    rows = b"question,answer_text\na?,x\nb?,y\nc?,z\n\"unterminated\n"
    with pytest.raises(ValueError, match=r"more than 2 questions \(stopped reading at row 4\)"):
        parse_upload("q.csv", rows)


def test_a_question_file_at_the_limit_still_loads(monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTIONS", "3")
    assert len(parse_upload("q.jsonl", _jsonl(3)).questions) == 3
    crlf = b"question,answer_text\r\na?,x\r\nb?,\"two\r\nlines\"\r\n"
    questions = parse_upload("q.csv", crlf).questions
    assert [q.answer_texts for q in questions] == [["x"], ["two\nlines"]]


def test_a_huge_question_file_is_refused_in_bounded_memory():
    data = _jsonl(200_000)  # 13 MB; the default limit is 5,000
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"more than 5,000 questions"):
            parse_upload("big.jsonl", data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * len(data), f"peak {peak / 1e6:.0f} MB for a {len(data) / 1e6:.0f} MB file"


def _beir(folder, queries: int, corpus: str) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(corpus)
    (folder / "queries.jsonl").write_text("".join(json.dumps({"_id": f"q{i}", "text": f"query {i}"}) + "\n"
                                                  for i in range(queries)))
    (folder / "qrels" / "test.tsv").write_text("".join(f"q{i}\td1\t1\n" for i in range(queries)))


def test_a_beir_folder_is_refused_at_its_first_judged_query_past_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTIONS", "2")
    _beir(tmp_path / "big", 3, "{not json: the corpus is never read\n")
    with pytest.raises(ValueError, match=r"queries.jsonl line 3: more than 2 judged queries.*RAG_MAX_QUESTIONS"):
        load_beir(tmp_path / "big")
    _beir(tmp_path / "ok", 2, json.dumps({"_id": "d1", "title": "t", "text": "x"}) + "\n")
    assert len(load_beir(tmp_path / "ok").queries) == 2


def test_an_in_code_beir_dataset_past_the_limit_indexes_nothing(monkeypatch):
    monkeypatch.setenv("RAG_MAX_QUESTIONS", "2")
    dataset = BeirDataset(name="big", corpus={"d1": ("t", "x")}, queries={f"q{i}": "q" for i in range(3)},
                          qrels={f"q{i}": {"d1": 1} for i in range(3)})

    def must_not_open(*args, **kwargs):
        raise AssertionError("the corpus was indexed before the limit was checked")

    with pytest.raises(ValueError, match=r"3 judged queries; at most 2 per evaluation \(RAG_MAX_QUESTIONS\)"):
        evaluate_beir(dataset, "bm25", open_index=must_not_open)



@pytest.mark.parametrize("unit", ["x", "\r", "\r\n", "a\rb\n", " \n"])
def test_reading_lines_is_linear_on_any_shape(unit):
    """Four times the text takes about four times as long (a quadratic reader would take sixteen)."""
    import time

    from rag_core.evaluation.questions import _lines

    def seconds(repeat: int) -> float:  # CPU time: other work on the machine does not count
        text = unit * repeat
        expected = len(text.splitlines())
        started = time.process_time()
        count = sum(1 for _ in _lines(text))
        elapsed = time.process_time() - started
        assert count == expected
        return elapsed

    small, large = min(seconds(50_000) for _ in range(3)), min(seconds(200_000) for _ in range(3))
    assert large < 8 * small + 0.1, f"{small:.3f} s -> {large:.3f} s"
