
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_core.retrieval.formatting import format_context
from rag_core.tokens import count_tokens


def test_blocks_are_numbered_with_sources_best_score_first(make_chunk, make_hit):
    low = make_hit(make_chunk("low", "Second fact.", heading_path=["Guide", "B"]), score=0.2)
    high = make_hit(make_chunk("high", "First fact.", heading_path=["Guide", "A"]), score=0.9)
    context = format_context([low, high], budget=4000)
    assert context.text == (
        "--- Document 1 ---\n[Source: guide.md › Guide › A]\nFirst fact.\n\n"
        "--- Document 2 ---\n[Source: guide.md › Guide › B]\nSecond fact."
    )
    assert context.tokens == count_tokens(context.text)
    assert [e["chunk_id"] for e in context.included] == ["high", "low"]
    assert context.truncated == [] and context.dropped == []


def test_source_without_heading_path(make_chunk, make_hit):
    context = format_context([make_hit(make_chunk("a", "Text."), 1.0, source="notes.txt")])
    assert "[Source: notes.txt]\nText." in context.text


def test_budget_truncates_the_first_block_that_does_not_fit_and_drops_the_rest(make_chunk, make_hit):
    long_text = " ".join(f"word{i}" for i in range(300))
    hits = [make_hit(make_chunk("a", "Short first."), 3), make_hit(make_chunk("b", long_text), 2),
            make_hit(make_chunk("c", "Short last."), 1)]
    context = format_context(hits, budget=120)
    assert context.tokens <= 120
    assert [e["chunk_id"] for e in context.included] == ["a", "b"]
    assert context.truncated[0]["chunk_id"] == "b"
    shown, total = context.truncated[0]["shown_tokens"], context.truncated[0]["total_tokens"]
    assert 40 <= shown < total == count_tokens(long_text)
    assert f"[… truncated: {shown} of {total} tokens shown]" in context.text
    assert context.dropped == [{"chunk_id": "c", "tokens": hits[2].chunk.tokens,
                                "reason": "token budget of 120 exhausted"}]


def test_too_little_room_drops_instead_of_truncating(make_chunk, make_hit):
    hits = [make_hit(make_chunk("a", "x " * 30), 2), make_hit(make_chunk("b", "y " * 200), 1)]
    context = format_context(hits, budget=60)
    assert [e["chunk_id"] for e in context.included] == ["a"]
    assert context.dropped[0]["chunk_id"] == "b"
    assert context.dropped[0]["reason"].startswith("token budget: only")


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(min_size=1, max_size=400), min_size=1, max_size=6), budget=st.integers(100, 400))
def test_context_never_exceeds_the_budget_and_accounts_for_every_hit(texts, budget):
    from rag_core.types import Chunk, Hit

    hits = [Hit(Chunk(f"c{i}", "d", "paragraph", "prose", t, 0, len(t), count_tokens(t)), score=float(-i),
                source_name="s.md") for i, t in enumerate(texts)]
    context = format_context(hits, budget=budget)
    assert context.tokens <= budget
    included = [e["chunk_id"] for e in context.included]
    dropped = [e["chunk_id"] for e in context.dropped]
    assert included + dropped == [f"c{i}" for i in range(len(texts))]
