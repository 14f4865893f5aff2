"""A tiny literal corpus (six documents on made-up topics) and its evidence-span questions, for the tuner's tests."""

from __future__ import annotations

import json

from rag_core.evaluation.questions import Question, QuestionSet

TOPICS = {
    "kettles.md": ("Kettles", "The copper kettle boils water in ninety seconds.",
                   "Descale the kettle monthly with citric acid."),
    "bicycles.md": ("Bicycles", "A bicycle chain needs oil every two hundred kilometres.",
                    "Tyre pressure for road bikes is six bar."),
    "gardens.md": ("Gardens", "Tomatoes want six hours of sun each day.",
                   "Compost heaps are turned every three weeks."),
    "lighthouses.md": ("Lighthouses", "The Fresnel lens focuses the lamp into a beam.",
                       "Keepers logged the weather every four hours."),
    "pottery.md": ("Pottery", "Stoneware is fired at twelve hundred degrees.",
                   "Glaze is applied after the bisque firing."),
    "telescopes.md": ("Telescopes", "A refractor uses an objective lens to gather light.",
                      "Collimation aligns the mirrors of a reflector."),
}


def corpus_text(title: str, first: str, second: str) -> str:
    filler = " ".join(f"{title} notes line {i} about general care and history." for i in range(12))
    return f"# {title}\n\n## Basics\n\n{first}\n\n{filler}\n\n## Care\n\n{second}\n\n{filler}\n"


def tiny_questions() -> list[Question]:
    questions = []
    for number, (name, (title, first, second)) in enumerate(TOPICS.items()):
        for part, span in enumerate((first, second)):
            words = span.split()
            questions.append(Question(
                id=f"q{number}-{part}", question=f"{title}: {' '.join(words[1:6])}?",
                evidence=[{"file": name, "heading_path": [], "spans": [span]}]))
    return questions


def write_tiny_corpus(tmp_path):
    """(folder of the six documents, questions JSONL path, QuestionSet)."""
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, parts in TOPICS.items():
        (folder / name).write_text(corpus_text(*parts), encoding="utf-8")
    questions = tiny_questions()
    path = tmp_path / "questions.jsonl"
    path.write_text("".join(json.dumps({"id": q.id, "question": q.question, "evidence": q.evidence}) + "\n"
                            for q in questions), encoding="utf-8")
    return folder, path, QuestionSet(name="tiny", kind="upload", questions=questions)


def ingest_tiny_collection(tmp_path):
    """The tiny corpus ingested as collection ``tiny`` (hash embedder): (name, questions path, QuestionSet)."""
    from rag_core.cli import main

    folder, path, question_set = write_tiny_corpus(tmp_path)
    assert main(["ingest", str(folder), "--collection", "tiny", "--embedder", "hash", "--json"]) == 0
    return "tiny", path, question_set
