"""A seeded split of a question set by document: the search tunes on one part and never sees the other.

Questions about the same document go to the same part, so a configuration cannot win on validation by having
tuned on near-copies of its questions. A question's document is its first evidence place's file, else its
``doc``, else its first relevant id; a question with none (an unanswerable one) is its own group.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from rag_core.evaluation.questions import Question

VALIDATION_SHARE = 0.3


def document_of(question: Question) -> str:
    """The document a question is about (its own id when it names none)."""
    for place in question.evidence:
        if place.get("file"):
            return str(place["file"])
    if question.doc:
        return question.doc
    if question.relevant_ids:
        return next(iter(question.relevant_ids))
    return f"question:{question.id}"


def split_by_document(questions: Sequence[Question], seed: int = 0, validation_share: float = VALIDATION_SHARE
                      ) -> tuple[list[Question], list[Question]]:
    """(tuning, validation): whole documents shuffled with ``seed`` go to validation until it holds about
    ``validation_share`` of the questions; both parts keep the set's order."""
    if not 0.0 < validation_share < 1.0:
        raise ValueError(f"validation share must be between 0 and 1 (got {validation_share})")
    groups: dict[str, list[Question]] = {}
    for question in questions:
        groups.setdefault(document_of(question), []).append(question)
    if len(groups) < 2:
        raise ValueError(f"the questions are about {len(groups)} document(s); a split by document needs at least "
                         "two, so that validation questions come from documents the search never tuned on")
    names = sorted(groups)
    random.Random(seed).shuffle(names)
    wanted = validation_share * len(questions)
    held: set[str] = set()
    count = 0
    for name in names:
        if count >= wanted or len(held) == len(names) - 1:
            break
        held.add(name)
        count += len(groups[name])
    validation = [q for q in questions if document_of(q) in held]
    tuning = [q for q in questions if document_of(q) not in held]
    return tuning, validation
