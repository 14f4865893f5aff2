"""An answer citing the same chunk twice shows one citation chip."""

from __future__ import annotations

from types import SimpleNamespace

from ui.agent.agent_grounding_view import split_citations


def _hit(chunk_id: str):
    return SimpleNamespace(chunk=SimpleNamespace(id=chunk_id))


def test_a_chunk_cited_twice_gives_one_chip_in_first_cited_order():
    result = SimpleNamespace(context_hits=[_hit("a"), _hit("b"), _hit("c")], citations=["b", "a", "b", "a", "zz"],
                             citation_sources=[{"chunk_id": "c", "attributed": True},
                                               {"chunk_id": "c", "attributed": True}])
    assert split_citations(result) == (["b", "a"], ["c"])
