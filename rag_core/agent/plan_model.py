"""The question's plan written by the model, when an LLM is configured (the rules of ``plan.py`` otherwise).

Rules read a question's structure ("X or Y", "and", lists, a symptom then a question); a model also reads its
meaning: a comparison asked without "or", a second lookup the first one implies, and search words in the
documentation's vocabulary rather than the user's. The model is asked once, before the first step, for the
question's kind and parts as JSON; what it returns is checked before it is used, because small local models
invent, repeat and ramble:

- the reply must be one JSON object with a known ``kind`` and 1 to ``MAX_PARTS`` parts (a text and a query each,
  at most ``MAX_PART_CHARS`` characters);
- every part's text must share a content word with the question (a part the question does not ask for is an
  invention), and parts with the same words are one part;
- anything else (no JSON, an unknown kind, a server error, the time budget) keeps the rules' plan, with a note.

The question is the user's own text, not a document's, so it is sent as the user message. The plan's ``why``
says who made it; the Playground shows it and ``ask --json`` returns it (``plan.by``).
"""

from __future__ import annotations

from typing import Any, get_args

from rag_core.agent.plan import MAX_PARTS, Part, PartRole, PlanKind, QuestionPlan
from rag_core.errors import LLMError
from rag_core.llm import json_object_in
from rag_core.retrieval.terms import content_terms

MAX_PART_CHARS = 300
MAX_REPLY_TOKENS = 400
SYSTEM_PROMPT = (
    "You plan searches over a team's documentation. Split the user's question into the parts a complete answer "
    "needs: each side of a comparison, each item of 'all the ways to', each step of a procedure spread over pages, "
    "a symptom and the fix it leads to, or each question of several in one. A question with one need is one part.\n"
    "For each part give its text (the user's words) and a search query in the words the documentation would use "
    "(names of options, functions, errors, headings).\n"
    'Reply with JSON only: {"kind": "single|comparison|bridge|enumeration|procedure|multi-part", '
    '"parts": [{"text": "...", "query": "...", "role": "question|side|item|context"}]}'
)
KINDS: tuple[str, ...] = get_args(PlanKind)
ROLES: tuple[str, ...] = get_args(PartRole)


def parse_plan(question: str, content: str, model: str = "the model") -> QuestionPlan:
    """The plan in the model's reply, checked (see the module docstring); ValueError says what is wrong."""
    data = json_object_in(content)
    kind = data.get("kind")
    if kind not in KINDS:
        raise ValueError(f"unknown kind {str(kind)[:40]!r}")
    raw = data.get("parts")
    if not isinstance(raw, list) or not raw:
        raise ValueError("the reply has no 'parts' list")
    asked = set(content_terms(question))
    parts: list[Part] = []
    for item in raw[: MAX_PARTS * 2]:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str):
            raise ValueError("a part has no 'text'")
        text = " ".join(item["text"].split())
        query = " ".join(str(item.get("query") or text).split())
        if not text or len(text) > MAX_PART_CHARS or len(query) > MAX_PART_CHARS:
            raise ValueError(f"a part is empty or longer than {MAX_PART_CHARS} characters")
        if asked and not asked & set(content_terms(text)):
            raise ValueError(f"the part {text[:60]!r} shares no word with the question")
        role = item.get("role") if item.get("role") in ROLES else "question"
        if any(set(content_terms(query)) <= set(content_terms(p.query)) for p in parts):
            continue  # the same words as a part already planned
        parts.append(Part(text, query, role))
    if len(parts) > MAX_PARTS:
        raise ValueError(f"{len(parts)} parts (at most {MAX_PARTS})")
    if len(parts) < 2:
        text = " ".join(question.split())
        query = parts[0].query if parts else text
        return QuestionPlan(question, "single", [Part(text, query)], f"planned by {model}: one question", by="model")
    if kind == "single":
        kind = "multi-part"
    return QuestionPlan(question, kind, parts, f"planned by {model}: {len(parts)} parts", by="model")


def plan_with_model(question: str, client: Any, deadline: float | None = None) -> tuple[QuestionPlan | None, str]:
    """The model's plan for ``question``, or None with the reason the rules' plan is kept instead."""
    model = getattr(client, "model", "the model")
    messages = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}]
    try:
        reply = client.chat(messages, purpose="step", max_tokens=MAX_REPLY_TOKENS, deadline=deadline)
    except LLMError as e:
        return None, f"the model could not plan the question ({e}); planned by rules"
    try:
        return parse_plan(question, reply.content or "", model), ""
    except ValueError as e:
        return None, f"the model's plan was not usable ({e}); planned by rules"
