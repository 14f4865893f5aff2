import json

import pytest

from rag_core.evaluation.questions import (
    Question,
    chunk_matches,
    load_beir,
    load_golden,
    normalise,
    parse_jsonl,
    parse_upload,
    ranked_targets,
)
from rag_core.types import Chunk


def make_chunk(text, doc_id="d1", heading_path=None, cid="c"):
    return Chunk(id=cid, doc_id=doc_id, granularity="paragraph", chunk_type="prose", text=text, start=0,
                 end=len(text), tokens=len(text.split()), heading_path=heading_path or [])


def test_normalise_drops_markup_case_and_spacing():
    assert normalise("Set **`max_tokens`**\n  to 512") == "set max_tokens to 512"


def test_answer_text_matching_ignores_chunk_boundaries_formatting():
    q = Question(id="q", question="?", answer_texts=["port 8443", "TLS 1.3"])
    assert chunk_matches(q, make_chunk("The server listens on **port\n8443**.")) == ["answer:0"]
    assert chunk_matches(q, make_chunk("nothing here")) == []


def test_doc_and_heading_matching():
    q = Question(id="q", question="?", doc="auth.md", heading="JWT flow")
    hit = make_chunk("x", heading_path=["Auth", "JWT flow"])
    assert chunk_matches(q, hit, source_name="auth.md") == ["section"]
    assert chunk_matches(q, hit, source_name="other.md") == []
    assert chunk_matches(q, make_chunk("x", heading_path=["Auth"]), source_name="auth.md") == []


def test_ranked_targets_credit_each_answer_once():
    q = Question(id="q", question="?", answer_texts=["alpha", "beta"])
    hits = [(make_chunk("zzz"), ""), (make_chunk("alpha"), ""), (make_chunk("alpha again"), ""),
            (make_chunk("alpha and beta"), "")]
    assert ranked_targets(q, hits) == ["miss:0", "answer:0", "miss:2", "answer:1"]
    assert q.targets() == ["answer:0", "answer:1"]


def test_parse_csv_upload():
    data = b"question,answer_text,intent,doc\nHow to rotate keys?,rotate-keys,procedure,ops.md\nWhat port?,8443,,\n"
    qs = parse_upload("mine.csv", data)
    assert qs.name == "mine" and qs.kind == "upload"
    assert [q.id for q in qs.questions] == ["q1", "q2"]
    assert qs.questions[0].intent == "procedure" and qs.questions[0].doc == "ops.md"
    assert qs.questions[1].answer_texts == ["8443"] and qs.questions[1].intent is None


def test_parse_jsonl_upload_with_answer_list():
    line = {"id": "a", "question": "Q?", "answer_texts": ["x", "y"], "heading": "Setup"}
    qs = parse_upload("set.jsonl", (json.dumps(line) + "\n\n").encode())
    assert qs.questions[0].answer_texts == ["x", "y"] and qs.questions[0].heading == "Setup"


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("a.csv", b"question,colour\nQ?,red\n", "a.csv row 2: unknown field 'colour'"),
        ("a.csv", b"question,answer_text\n,x\n", "a.csv row 2: field 'question' is missing or empty"),
        ("a.csv", b"question\nQ?\n", "a.csv row 2: give 'answer_text'"),
        ("a.csv", b"question,answer_text,intent\nQ?,x,weather\n", "field 'intent' is 'weather'; allowed: fact"),
        ("a.jsonl", b'{"question": "Q?", "answer_text": "x"}\n{oops\n', "a.jsonl line 2: not valid JSON"),
        ("a.jsonl", b'["Q?"]\n', "a.jsonl line 1: expected a JSON object"),
        ("a.jsonl", b'{"question": "Q?", "answer_text": ["x"]}\n', "field 'answer_text' must be text"),
        ("a.jsonl", b'{"id": "1", "question": "Q", "answer": "x"}\n{"id": "1", "question": "R", "answer": "y"}\n',
         "line 2: duplicate id '1'"),
        ("a.csv", b"", "the file is empty"),
        ("a.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01", "binary file"),
    ],
)
def test_bad_uploads_name_the_row_and_field(name, data, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse_upload(name, data)


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1", "cp1252", "utf-8-sig"])
def test_question_files_in_other_encodings_load(encoding):
    """Spreadsheets export UTF-16 or Windows code pages; the documents' decoder reads them here too."""
    text = "question,answer_text\nQuelle est la durée de rétention ?,trente jours\n"
    qs = parse_upload("fr.csv", text.encode(encoding))
    assert [(q.question, q.answer_texts) for q in qs.questions] == [
        ("Quelle est la durée de rétention ?", ["trente jours"])]


def test_load_golden_reports_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="golden question set .* is missing"):
        load_golden(tmp_path / "nope.jsonl")
    path = tmp_path / "golden.jsonl"
    path.write_text('{"id": "g1", "question": "Q?", "intent": "fact", "answer_text": "x", "doc": "a.md"}\n')
    golden = load_golden(path)
    assert golden.kind == "golden" and golden.questions[0].id == "g1"


def write_beir(folder, qrels="query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n9\td1\t1\n"):
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        '{"_id": "d1", "title": "Cats", "text": "Cats purr."}\n{"_id": "d2", "title": "", "text": "Dogs bark."}\n'
    )
    (folder / "queries.jsonl").write_text('{"_id": "1", "text": "purring"}\n{"_id": "2", "text": "barking"}\n'
                                          '{"_id": "3", "text": "unjudged"}\n')
    (folder / "qrels" / "test.tsv").write_text(qrels)


def test_load_beir_keeps_judged_queries(tmp_path):
    write_beir(tmp_path / "tiny")
    data = load_beir(tmp_path / "tiny")
    assert data.corpus["d1"] == ("Cats", "Cats purr.")
    assert data.queries == {"1": "purring", "2": "barking"}
    assert data.qrels == {"1": {"d1": 1}, "2": {"d2": 1}}
    qs = data.question_set()
    assert qs.kind == "beir" and [q.relevant_ids for q in qs.questions] == [{"d1": 1}, {"d2": 1}]


def test_load_beir_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_beir(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="lacks corpus.jsonl, queries.jsonl, qrels/test.tsv"):
        load_beir(tmp_path / "empty")
    write_beir(tmp_path / "bad", qrels="1\td1\n")
    with pytest.raises(ValueError, match="test.tsv line 1: expected 3 tab-separated columns"):
        load_beir(tmp_path / "bad")


EVIDENCE_ROW = {
    "id": "fa-1", "question": "How do I accept a file path in a URL?", "intent": "procedure",
    "answer": "Use the path convertor.",
    "evidence": [{"file": "docs/en/docs/tutorial/path-params.md", "heading_path": ["Path Parameters"],
                  "spans": ["Using an option directly from Starlette you can declare", "a second span that is absent"]},
                 {"file": "docs/en/docs/tutorial/other.md", "spans": ["the second place of a multi-part question"]}],
}


def test_evidence_places_are_found_by_any_span_in_a_chunk_of_their_file():
    (question,) = parse_jsonl(json.dumps(EVIDENCE_ROW), "qa.jsonl")
    assert question.targets() == ["place:0", "place:1"]
    assert question.answer_texts == [] and question.reference_answer == "Use the path convertor."
    text = "Intro.\n\nUsing an option directly\nfrom Starlette you can declare x"
    chunk = Chunk("c1", "d1", "paragraph", "prose", text, 0, 10, 5)
    assert chunk_matches(question, chunk, "tutorial/path-params.md") == ["place:0"]
    assert chunk_matches(question, chunk, "tutorial/other.md") == []  # the right words in another file
    assert ranked_targets(question, [(chunk, "tutorial/path-params.md")]) == ["place:0"]


@pytest.mark.parametrize(("evidence", "message"), [
    ([], "must be a list of places"),
    ([{"spans": []}], "'spans' must be a non-empty list"),
    ([{"spans": ["x"], "page": 3}], "unknown field"),
    ("[not json", "not a valid JSON list"),
])
def test_bad_evidence_names_the_line_and_the_problem(evidence, message):
    row = {**EVIDENCE_ROW, "evidence": evidence}
    with pytest.raises(ValueError, match=message):
        parse_jsonl(json.dumps(row), "qa.jsonl")
