"""The one formatter of pydantic validation errors (``rag_core.errors.field_problems``)."""

import pytest
from pydantic import ValidationError

from rag_core.config import RAGConfig, RetrievalConfig
from rag_core.errors import field_problems, readable_problem, stated_problem


def _error(model, data) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return caught.value


def test_fields_are_dotted_paths_and_problems_are_pydantic_messages():
    error = _error(RAGConfig, {"retrieval": {"initial_k": 0}})
    assert field_problems(error) == "retrieval.initial_k: Input should be greater than or equal to 1"


def test_readable_problems_and_labels():
    error = _error(RAGConfig, {"retrieval": {"initial_k": 0}, "colour": 1})
    assert field_problems(error, problem=readable_problem) == (
        "retrieval.initial_k: must be ≥ 1; colour: unknown field (remove it)")
    assert field_problems(error, labels={"retrieval.initial_k": "--k"}, limit=1) == (
        "--k: Input should be greater than or equal to 1; and 1 more problem(s)")


def test_an_error_without_a_field_is_named_or_left_bare():
    error = _error(RetrievalConfig, {"initial_k": 9, "max_k": 3})
    assert field_problems(error, unnamed="options", problem=stated_problem) == (
        "options: initial_k (9) must not exceed max_k (3)")
    assert field_problems(error, unnamed=None).startswith("Value error, initial_k (9)")
