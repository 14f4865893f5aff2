import pytest

from rag_core.retrieval.rewrite import rewrite_query, strip_framing


def test_framing_is_stripped_and_technical_terms_kept():
    result = rewrite_query("Hi, could you please tell me how `model_config` sets extra='forbid'? Thanks!")
    assert result.query == "how `model_config` sets extra='forbid'?"
    assert result.notes and result.notes[0].startswith("stripped conversational framing")


def test_plain_query_is_unchanged_without_notes():
    result = rewrite_query("retry policy for failed jobs")
    assert result.query == "retry policy for failed jobs"
    assert result.notes == []


def test_query_that_is_only_framing_is_kept():
    assert strip_framing("thanks") == "thanks"


def test_follow_up_borrows_the_previous_subject():
    result = rewrite_query("and its default?", ["What is the request timeout in Wrenfall?"])
    assert result.query == "request timeout Wrenfall and its default?"
    assert result.follow_up_of == "What is the request timeout in Wrenfall?"


def test_self_contained_question_is_not_a_follow_up():
    result = rewrite_query("How are failed jobs retried by the scheduler?", ["What is the request timeout?"])
    assert result.query == "How are failed jobs retried by the scheduler?"
    assert result.follow_up_of is None


def test_repeated_query_is_noted():
    result = rewrite_query("Please, retry policy", ["retry policy"])
    assert result.repeats == "retry policy"
    assert any("repeats an earlier query" in note for note in result.notes)


def test_empty_query_is_refused():
    with pytest.raises(ValueError, match="empty"):
        rewrite_query("")


def test_check_query_strips_and_keeps_a_query_at_the_limit():
    from rag_core.retrieval import MAX_QUERY_CHARS, check_query

    assert check_query("  default port?  ") == "default port?"
    assert len(check_query("a" * MAX_QUERY_CHARS)) == MAX_QUERY_CHARS
