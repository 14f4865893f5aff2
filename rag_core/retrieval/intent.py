"""Intent classification of a query (fact / code / procedure / data) and the chunk-type filter each implies.

Rules rather than a model: they are instant, deterministic and explainable (the matched cue is returned as the
reason), and a query that matches nothing is a plain ``fact`` question with no filter, so a wrong guess can
only narrow the search, which dynamic retrieval relaxes when confidence stays low.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

INTENTS: tuple[str, ...] = ("fact", "code", "procedure", "data")

# Chunk types searched first for each intent (None: no chunk-type filter).
INTENT_CHUNK_TYPES: dict[str, list[str] | None] = {
    "fact": None,
    "code": ["code"],
    "procedure": ["list", "code"],
    "data": ["table"],
}

_CODE_CUES = re.compile(
    r"\b(code|snippet|function|method|class|decorator|signature|implement\w*|syntax|import statement|"
    r"return type|kwargs?)\b"
    r"|`[^`]+`|\w+\(\)|\w+\.\w+\(|\bdef\s+\w+|=>|->|::",
    re.IGNORECASE,
)
_PROCEDURE_CUES = re.compile(
    r"\b(how (?:do|can|should|would) (?:i|we|you)|how to|steps?|step[- ]by[- ]step|procedure|instructions?|"
    r"install\w*|set ?up|configure|deploy\w*|guide|walk me through|in what order)\b",
    re.IGNORECASE,
)
_DATA_CUES = re.compile(
    r"\b(table|rows?|columns?|statistics?|stats|figures?|how (?:many|much)|count of|total|average|"
    r"percent(?:age)?|ratio|price|cost|which (?:version|year)s?)\b|%",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Intent:
    """The classified intent, the chunk types it maps to, and the cue that decided it."""

    name: str
    chunk_types: list[str] | None
    reason: str


def classify_intent(query: str) -> Intent:
    """Classify ``query``; the strongest cue wins (code > data > procedure > fact).

    Code cues win over procedure ("how do I call `foo()`" wants the code block) and data cues over procedure
    ("how many steps") because they are the more specific need.
    """
    text = query.strip()
    if not text:
        raise ValueError("the query is empty: type what you are looking for")
    for name, pattern in (("code", _CODE_CUES), ("data", _DATA_CUES), ("procedure", _PROCEDURE_CUES)):
        match = pattern.search(text)
        if match:
            cue = match.group(0).strip()
            return Intent(name, INTENT_CHUNK_TYPES[name], f"{name} cue {cue!r}")
    return Intent("fact", None, "no code, data or procedure cue: a fact question")
