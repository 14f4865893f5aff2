import pytest

from rag_core.retrieval.intent import classify_intent


@pytest.mark.parametrize(
    ("query", "intent", "chunk_types"),
    [
        ("What is a dead-letter queue?", "fact", None),
        ("Show me the code for a retry decorator", "code", ["code"]),
        ("what does `Client.fetch` return", "code", ["code"]),
        ("How do I install the CLI?", "procedure", ["list", "code"]),
        ("steps to rotate the API key", "procedure", ["list", "code"]),
        ("How many jobs does the pro plan allow?", "data", ["table"]),
        ("average latency per region", "data", ["table"]),
    ],
)
def test_intents_map_to_chunk_type_filters(query, intent, chunk_types):
    result = classify_intent(query)
    assert (result.name, result.chunk_types) == (intent, chunk_types)


def test_code_cue_beats_procedure_and_reason_names_the_cue():
    result = classify_intent("How do I call fetch_jobs()?")
    assert result.name == "code"
    assert "fetch_jobs()" in result.reason


def test_empty_query_is_refused():
    with pytest.raises(ValueError, match="empty"):
        classify_intent("   ")
