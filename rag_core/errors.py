"""Exceptions with messages meant for the person using the app or the command line, and the one formatter of
pydantic validation errors as ``field: problem``."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError


class RagError(Exception):
    """Base class: the message says what went wrong and what to do."""


class LoadError(RagError):
    """A file could not be loaded as a document (unsupported, corrupt, empty, binary, too large)."""


class EmbeddingError(RagError):
    """The embedder failed (model missing, endpoint unreachable, bad key)."""


class IndexError_(RagError):
    """The index is missing, mismatched or its store is unreachable."""


class LLMError(RagError):
    """The LLM endpoint failed (unreachable, timeout, refused, malformed answer)."""


def plain_problem(item: dict[str, Any]) -> str:
    """Pydantic's own message for one error."""
    return str(item["msg"])


def stated_problem(item: dict[str, Any]) -> str:
    """Pydantic's message without the ``Value error, `` it puts before a validator's own text."""
    return str(item["msg"]).removeprefix("Value error, ")


def readable_problem(item: dict[str, Any]) -> str:
    """The problem in words a person editing a configuration file can act on (``must be ≥ 1``)."""
    kind, ctx = item.get("type", ""), item.get("ctx") or {}
    if kind == "greater_than_equal":
        return f"must be ≥ {ctx.get('ge')}"
    if kind == "greater_than":
        return f"must be > {ctx.get('gt')}"
    if kind == "less_than_equal":
        return f"must be ≤ {ctx.get('le')}"
    if kind == "less_than":
        return f"must be < {ctx.get('lt')}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}"
    if kind == "extra_forbidden":
        return "unknown field (remove it)"
    if kind == "missing":
        return "required field is missing"
    if kind == "string_pattern_mismatch":
        return "may hold only letters, digits, spaces, '_', '.' and '-'"
    return stated_problem({"msg": item.get("msg", "invalid value")})


def field_problems(
    error: ValidationError,
    *,
    unnamed: str | None = "value",
    labels: Mapping[str, str] | None = None,
    problem: Callable[[dict[str, Any]], str] = plain_problem,
    limit: int | None = None,
) -> str:
    """A pydantic error as ``field.path: problem`` clauses joined with ``; `` (the input is never echoed).

    Args:
        error: the pydantic ``ValidationError``.
        unnamed: what names an error without a location (a model validator's); None: the problem alone.
        labels: names to show instead of dotted field paths (command-line flags, for instance).
        problem: how one error is put in words.
        limit: report only the first ``limit`` errors, and how many more there are.
    """
    items = error.errors()
    parts = []
    for item in items[:limit]:
        location = ".".join(map(str, item["loc"]))
        if labels is not None:
            location = labels.get(location, location)
        location = location or unnamed
        parts.append(f"{location}: {problem(item)}" if location else problem(item))
    more = len(items) - limit if limit is not None else 0
    return "; ".join(parts) + (f"; and {more} more problem(s)" if more > 0 else "")
