"""Trimming the agent's final context to each chunk's most relevant units (``rag_core.agent.compress``)."""

from __future__ import annotations

import numpy as np

from rag_core.agent.compress import ELISION, compress_hits, units_of
from rag_core.tokens import count_tokens
from rag_core.types import Chunk, Hit

ROTATION = """## Rotating keys

Keys are stored in the vault. Rotation replaces the signing key without downtime. The old key keeps \
verifying tokens for one day. Operators get an email when it happens. Nothing else changes for the clients.
"""
TABLE = """## Limits

| plan | requests per minute |
| --- | --- |
| free | 60 |
| team | 600 |
| enterprise | 6000 |
"""
CODE = """## Example

```python
client.rotate(key_id="k1")
client.verify(token)
```
"""


def _hit(cid: str, text: str, chunk_type: str = "prose") -> Hit:
    chunk = Chunk(id=cid, doc_id=cid, granularity="section", chunk_type=chunk_type, text=text, start=0,
                  end=len(text), tokens=count_tokens(text), heading_path=[text.splitlines()[0].lstrip("# ")])
    return Hit(chunk=chunk, score=1.0, confidence=0.5)


def _relevance(wanted: dict[str, float]):
    """A fake relevance: a text scores the weight of the first ``wanted`` word it holds (else 0.1)."""
    def relevance(queries, texts):
        row = [next((w for word, w in wanted.items() if word in t), 0.1) for t in texts]
        return np.array([row for _ in queries], dtype=np.float32)
    return relevance


def test_everything_that_fits_is_kept_whole():
    hits = [_hit("a", ROTATION), _hit("b", TABLE)]
    assert compress_hits(hits, ["q"], 10_000, _relevance({})) == hits


def test_units_are_sentences_rows_with_their_header_and_whole_code():
    spans, headings = units_of(TABLE)
    assert [TABLE[s:e] for s, e in headings] == ["## Limits"]
    assert [TABLE[s:e] for s, e, _ in spans] == ["| free | 60 |", "| team | 600 |", "| enterprise | 6000 |"]
    assert [TABLE[s:e] for s, e in spans[0][2]] == ["| plan | requests per minute |", "| --- | --- |"]
    code_spans, _ = units_of(CODE)
    assert len(code_spans) == 1 and "client.verify(token)" in CODE[code_spans[0][0]:code_spans[0][1]]
    prose, _ = units_of(ROTATION)
    assert ROTATION[prose[1][0]:prose[1][1]] == "Rotation replaces the signing key without downtime."


def test_over_budget_each_chunk_keeps_its_most_relevant_units_verbatim():
    hits = [_hit("a", ROTATION), _hit("b", TABLE), _hit("c", CODE, chunk_type="code")]
    relevance = _relevance({"Rotation replaces": 0.9, "old key": 0.8, "| team": 0.7})
    budget = 45
    out = compress_hits(hits, ["how does rotation work", "team limit"], budget, relevance)
    assert sum(h.chunk.tokens for h in out) <= budget
    by_id = {h.chunk.id: h.chunk for h in out}
    rotation = by_id["a"].text
    # The two best sentences are neighbours: the text between them is kept as written (a span over both matches).
    assert "Rotation replaces the signing key without downtime. The old key keeps verifying tokens" in rotation
    assert "Keys are stored in the vault." not in rotation
    assert "## Rotating keys" not in rotation  # the source line of the context names the heading
    assert by_id["a"].metadata["trimmed_from"] == hits[0].chunk.tokens and not by_id["a"].verbatim
    table = by_id["b"].text
    assert "| plan | requests per minute |\n| --- | --- |" in table and "| team | 600 |" in table
    # The code chunk cannot be cut: it is in whole or not at all.
    assert "c" not in by_id or by_id["c"].text == CODE
    assert [h.chunk.id for h in out] == [i for i in ("a", "b", "c") if i in by_id]  # the caller's order


def test_units_left_out_between_kept_ones_are_marked():
    hits = [_hit("a", ROTATION), _hit("b", TABLE)]
    out = compress_hits(hits, ["q"], 40, _relevance({"Keys are stored": 0.9, "Operators get": 0.8}))
    text = out[0].chunk.text
    assert text == "Keys are stored in the vault." + ELISION + "Operators get an email when it happens."


def test_a_higher_ranked_chunk_gets_its_next_unit_before_a_much_lower_one_gets_its_first():
    many = [_hit(f"d{i}", ROTATION.replace("Rotating keys", f"Part {i}")) for i in range(6)]
    out = compress_hits(many, ["q"], 120, _relevance({"Rotation replaces": 0.9, "old key": 0.8}))
    kept = [h.chunk.id for h in out]
    assert kept[0] == "d0" and "d5" not in kept
    assert "The old key keeps" in out[0].chunk.text  # the first chunk's second-best unit made it in
