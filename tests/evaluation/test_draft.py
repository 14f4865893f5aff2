"""Drafting a question set from documents: verbatim spans, the three kinds, the format read back, bounds, seeds."""

from __future__ import annotations

import pytest

from rag_core.evaluation.draft import (
    KINDS,
    check_spans,
    draft_questions,
    kind_counts,
    question_record,
    to_jsonl,
)
from rag_core.evaluation.draft_text import definition_subject, headings, normalize_ws, sections
from rag_core.evaluation.questions import chunk_matches, parse_jsonl
from rag_core.loaders import load_bytes
from rag_core.types import Chunk

QUEUES = """# Wrenfall queues { #queues }

A delivery queue is a durable list of jobs that workers take in order of arrival.

## Retry behaviour { #retry }

Every job is retried when a worker crashes, up to the value of `retry_limit` set on the queue.
The retries wait longer each time, doubling the pause between two attempts of one job.

```python
# not a heading: a comment inside a fence
queue = Queue(name="mail", retry_limit=5, backoff_seconds=2)
```

## Creating a queue

1. Open the console and choose Queues, then press the New queue button at the top.
2. Give the queue a name of lowercase letters and pick the region it lives in.
3. Set `retry_limit` and confirm with Create; the queue accepts jobs right away.
"""

LIMITS = """# Service limits

The limits below hold for every account on the standard plan of the service.

| Limit | Value | Notes |
|-------|-------|-------|
| Jobs per queue | 1,000,000 | Older finished jobs are pruned after seven days |
| Payload size per job | 256 KB | Larger payloads must be stored elsewhere first |

## Raising limits

A support ticket can raise the `retry_limit` ceiling of a queue beyond the default of ten attempts.
Requests are answered within two working days by the platform operations team.
"""

WORKERS = """# Workers

A worker is a process that pulls jobs from one queue and acknowledges each when it is done.

## Scaling workers

Autoscaling adds workers when the backlog of a queue stays above the threshold for five minutes.
Each new worker registers with the scheduler before it takes its first job from the queue.
"""


@pytest.fixture
def docs():
    return [load_bytes(name, text.encode()) for name, text in
            (("queues.md", QUEUES), ("limits.md", LIMITS), ("workers.md", WORKERS))]


def test_every_span_is_verbatim_in_its_document_and_the_kinds_are_all_there(docs):
    result = draft_questions(docs, 8, seed=3)
    assert len(result.questions) == 8
    assert check_spans(result.questions, docs) == []
    texts = {d.name: d.text for d in docs}
    for question in result.questions:
        for place in question.evidence:
            assert all(span in texts[place["file"]] and len(span) >= 40 for span in place["spans"])
    assert set(result.counts()) == set(KINDS)
    assert result.method == "offline" and "keyword-leaning" in result.label
    assert len({q.id for q in result.questions}) == 8


def test_multi_part_places_are_in_two_documents_sharing_an_identifier(docs):
    result = draft_questions(docs, 10, seed=1, kinds=["multi-part"])
    assert result.questions
    for question in result.questions:
        files = [place["file"] for place in question.evidence]
        assert question.type == "multi-part" and question.intent == "multi" and len(files) == 2
        assert files[0] != files[1]


def test_unanswerable_names_occur_in_no_document(docs):
    result = draft_questions(docs, 4, seed=2, kinds=["null"])
    assert len(result.questions) == 4
    everything = " ".join(d.text for d in docs).casefold()
    for question in result.questions:
        assert question.type == "null" and question.evidence == []
        name = question.question.split("`")[1]
        assert name.casefold() not in everything


def test_the_jsonl_is_the_evidence_span_format_the_evaluate_page_reads(docs):
    result = draft_questions(docs, 8, seed=0)
    parsed = parse_jsonl(to_jsonl(result.questions), "drafted.jsonl")
    assert [q.question for q in parsed] == [q.question for q in result.questions]
    assert [q.evidence for q in parsed] == [q.evidence for q in result.questions]
    assert {q.type for q in parsed} == {q.type for q in result.questions}
    record = question_record(result.questions[0])
    assert set(record) <= {"id", "question", "intent", "type", "answer", "evidence"}


def test_a_span_matches_the_chunk_holding_it_after_whitespace_is_collapsed(docs):
    question = next(q for q in draft_questions(docs, 6, seed=0).questions if q.evidence)
    place = question.evidence[0]
    doc = next(d for d in docs if d.name == place["file"])
    start = doc.text.index(place["spans"][0])
    text = doc.text[max(0, start - 20): start + len(place["spans"][0]) + 20].replace(" ", "  ")
    chunk = Chunk(id="c", doc_id=doc.id, granularity="paragraph", chunk_type="prose", text=text, start=0,
                  end=len(text), tokens=10)
    assert "place:0" in chunk_matches(question, chunk, doc.name)


def test_same_seed_same_set_and_another_seed_another(docs):
    first = [q.question for q in draft_questions(docs, 8, seed=7).questions]
    assert first == [q.question for q in draft_questions(docs, 8, seed=7).questions]
    assert first != [q.question for q in draft_questions(docs, 8, seed=8).questions]


def test_questions_do_not_repeat_a_long_heading_and_near_duplicates_are_dropped(docs):
    result = draft_questions(docs, 12, seed=5)
    for question in result.questions:
        assert "creating a queue" not in question.question.lower()
    words = [set(q.question.lower().split()) for q in result.questions]
    for i, a in enumerate(words):
        for b in words[i + 1:]:
            assert len(a & b) / len(a | b) < 0.75


def test_bounds_n_time_budget_and_cancel(docs):
    with pytest.raises(ValueError, match="n must be between 1 and"):
        draft_questions(docs, 0)
    with pytest.raises(ValueError, match="no documents"):
        draft_questions([], 5)
    assert draft_questions(docs, 3, kinds=["single"]).counts() == {"single": 3}
    late = draft_questions(docs, 10, time_budget_s=1e-9)
    assert late.stopped == "time budget" and len(late.questions) < 10
    seen = []
    stopped = draft_questions(docs, 10, progress=lambda d, t, text: seen.append(d), cancel=lambda: len(seen) >= 2)
    assert stopped.stopped == "cancelled" and len(stopped.questions) == 2 and seen == [1, 2]


def test_kind_counts():
    assert kind_counts(50) == {"single": 35, "multi-part": 10, "null": 5}
    assert kind_counts(4, ["single", "null"]) == {"single": 4, "multi-part": 0, "null": 0}
    assert kind_counts(6, ["null"]) == {"single": 0, "multi-part": 0, "null": 6}
    with pytest.raises(ValueError, match="unknown question kind"):
        kind_counts(5, ["bridge"])


def test_headings_follow_the_datasets_rule():
    marks = headings(QUEUES)
    assert [(level, title) for _, level, title in marks] == [
        (1, "Wrenfall queues"), (2, "Retry behaviour"), (2, "Creating a queue")]
    found = sections(0, "queues.md", QUEUES)
    paths = {tuple(s.heading_path) for s in found}
    assert ("Wrenfall queues", "Retry behaviour") in paths
    kinds = {span.kind for s in found for span in s.spans}
    assert {"sentence", "code", "step"} <= kinds
    rows = [span for s in sections(0, "limits.md", LIMITS) for span in s.spans if span.kind == "row"]
    assert rows and rows[0].text.startswith("| Jobs per queue") and rows[0].context.startswith("| Limit")
    for section in found:
        for span in section.spans:
            assert QUEUES[span.start:span.start + len(span.text)] == span.text


def test_definition_subject():
    assert definition_subject("A worker is a process that pulls jobs.") == "worker"
    assert definition_subject("It is a long story about nothing much.") is None


def test_normalize_ws():
    assert normalize_ws("  a\n\tb  c ") == "a b c"


def test_text_under_no_heading_is_drafted_from_last(docs):
    """A file without headings (a banner, a snippet) gives questions only once the headed sections are used up:
    evidence-span sets such as the FastAPI one require a heading path, and a reviewer finds evidence by heading."""
    banner = ("This page was translated by a machine with people checking the wording afterwards. "
              "Report a translation that reads oddly through the feedback form of the site.\n\n"
              "Every translated page links back to the original English version of the same page.\n")
    corpus = [*docs, load_bytes("banner.md", banner.encode())]
    few = draft_questions(corpus, 4, seed=0, kinds=["single"]).questions
    assert few and all(place["heading_path"] for q in few for place in q.evidence)
    many = draft_questions(corpus, 60, seed=0, kinds=["single"]).questions
    assert any(not place["heading_path"] for q in many for place in q.evidence)


def _rare_terms(docs, question):
    """Words of the question's evidence that no other section of the documents uses, outside its heading path."""
    from collections import Counter

    from rag_core.evaluation.draft_text import keywords

    df: Counter[str] = Counter()
    for position, doc in enumerate(docs):
        for section in sections(position, doc.name, doc.text):
            df.update({w for span in section.spans for w in keywords(span.text)})
    place = question.evidence[0]
    heading = set(keywords(" ".join(place["heading_path"])))
    evidence = {w for span in place["spans"] for w in keywords(span)}
    return {w for w in keywords(question.question) if w in evidence and df[w] == 1 and w not in heading}


def test_area_style_keeps_the_passages_rare_terms_out_of_the_question(docs):
    singles = {style: [q for q in draft_questions(docs, 12, seed=0, kinds=["single"], style=style).questions
                       if q.intent != "data"] for style in ("verbatim", "area")}  # table rows keep their entry
    assert singles["area"] and all(not _rare_terms(docs, q) for q in singles["area"])
    assert any(_rare_terms(docs, q) for q in singles["verbatim"])  # what the area style changes


def test_area_style_spans_stay_verbatim_and_the_label_says_how_it_was_worded(docs):
    result = draft_questions(docs, 10, seed=4, style="area")
    assert len(result.questions) == 10 and check_spans(result.questions, docs) == []
    assert "user wording" in result.label and set(result.counts()) == set(KINDS)
    assert [q.question for q in result.questions] != [q.question for q in draft_questions(docs, 10, seed=4).questions]
    with pytest.raises(ValueError, match="drafting style"):
        draft_questions(docs, 4, style="poetic")
