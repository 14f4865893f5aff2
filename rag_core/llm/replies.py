"""What a model server replies, as data rather than trusted structure: the assistant turn (``ChatResult``, its
``ToolCall``s) and the checks that turn each untrusted field into text, a tool name, tool arguments the tools can
parse, or a token count; and the JSON object in a reply's prose (``json_object_in``)."""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any

# What a model server sends is data, not trusted structure: a tool name is cut to this many characters, tool
# arguments nested deeper than ``MAX_ARGUMENT_DEPTH`` are refused (no tool takes more than two levels, and deeper
# values would only exhaust the recursion limit of whatever parses them next), and a token count outside
# ``0..MAX_TOKEN_COUNT`` is read as unknown (0).
MAX_TOOL_NAME_CHARS = 200
MAX_ARGUMENT_DEPTH = 32
MAX_TOKEN_COUNT = 10**12
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}()]")
_DIGIT_RUN = re.compile(r"\d+")


@dataclass(slots=True)
class ToolCall:
    """One tool call requested by the model; ``arguments`` is the raw JSON text as sent, or, when no parser
    could read it (see :func:`tool_arguments`), a note in angle brackets that the tools reject as an argument error."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(slots=True)
class ChatResult:
    """The assistant message of one completion, its token usage and the retries it took."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    finish_reason: str | None = None
    model: str = ""
    retries: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0
    max_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return int(self.usage.get("total_tokens", 0))

    @property
    def cut_off(self) -> bool:
        """The model hit ``max_tokens`` (or the context size) before it finished."""
        return self.finish_reason == "length"

    def assistant_message(self) -> dict[str, Any]:
        """The message to append to the conversation so the next call sees this turn."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "usage": dict(self.usage),
            "finish_reason": self.finish_reason,
            "model": self.model,
            "retries": list(self.retries),
            "elapsed_ms": self.elapsed_ms,
            "max_tokens": self.max_tokens,
        }


def _field(value: Any, name: str) -> Any:
    """``value.name``, or ``value[name]`` for a dict (the client keeps parts that fit none of its models as dicts)."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _as_json(value: Any) -> str:
    """``value`` written as JSON text, or its type name when even that fails (too deep, a cycle)."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        return f"<{type(value).__name__}>"


def json_object_in(content: str | None) -> dict[str, Any]:
    """The JSON object in a model's reply: from its first ``{`` to its last ``}``, so prose around it is ignored.

    ValueError says what is wrong: no object, malformed JSON (also nesting too deep to parse) or a value that is
    not an object. The callers check the object's fields.
    """
    text = content or ""
    # str.find/rfind, not a regex: r"\{.*\}" rescanned the rest of the text from every "{" (quadratic)
    first, last = text.find("{"), text.rfind("}")
    if first < 0 or last < first:
        raise ValueError("the reply holds no JSON object")
    try:
        data: Any = json.loads(text[first:last + 1])
    except json.JSONDecodeError as e:
        raise ValueError(f"the reply's JSON is malformed ({e.msg})") from e
    except RecursionError as e:
        raise ValueError("the reply's JSON is malformed (nested too deeply)") from e
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    return data


def message_text(value: Any) -> str | None:
    """Message content as text: a string as sent, content parts (``[{"type": "text", "text": ...}]``) joined,
    anything else written as JSON; None stays None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        parts = [part if isinstance(part, str) else _field(part, "text") for part in value]
        if all(isinstance(part, str) for part in parts):
            return "".join(parts)
    return _as_json(value)


def tool_name(value: Any) -> str:
    """A tool call's name as text of at most ``MAX_TOOL_NAME_CHARS`` (a name that is not a string is written as
    JSON, so the tools report it as an unknown tool)."""
    name = value if isinstance(value, str) else ("" if value is None else _as_json(value))
    return name[:MAX_TOOL_NAME_CHARS]


def tool_arguments(value: Any) -> str:
    """A tool call's arguments as text the tools can parse without failing.

    A string is kept as sent (the tools repair common slips and report the rest); an object is written as JSON.
    Text that no parser could read whatever its syntax, an integer longer than Python converts or nesting deeper
    than ``MAX_ARGUMENT_DEPTH``, becomes a note in angle brackets saying so: not JSON, so the step fails with an
    argument error the model can read instead of ending the run.
    """
    if value is None:
        return ""
    text = value if isinstance(value, str) else _as_json(value)
    bare = _JSON_STRING.sub('""', text)  # brackets and digits inside strings are the strings' business
    digit_limit = sys.get_int_max_str_digits()  # 0: no limit
    longest = max((m.end() - m.start() for m in _DIGIT_RUN.finditer(bare)), default=0)
    if digit_limit and longest > digit_limit:
        return f"<unreadable arguments: a number of {longest} digits (at most {digit_limit} can be read)>"
    depth = deepest = 0
    for match in _BRACKET.finditer(bare):
        depth = depth + 1 if match.group() in "[{(" else max(0, depth - 1)
        deepest = max(deepest, depth)
    if deepest > MAX_ARGUMENT_DEPTH:
        return (f"<unreadable arguments: nested {deepest} levels deep (at most {MAX_ARGUMENT_DEPTH}); send a flat "
                "JSON object>")
    return text


def token_count(value: Any) -> int:
    """A usage count as an int: a non-negative whole number (int, float or digits); anything else 0 (unknown)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, float):
        value = int(value) if math.isfinite(value) else -1
    elif isinstance(value, str):
        value = int(value.strip()) if value.strip().isdigit() and len(value.strip()) <= 13 else -1
    return value if isinstance(value, int) and 0 <= value <= MAX_TOKEN_COUNT else 0


def usage_counts(usage: Any) -> dict[str, int]:
    """The ``usage`` of a response as ``{prompt_tokens, completion_tokens, total_tokens}``; {} when absent."""
    if usage is None:
        return {}
    return {key: token_count(_field(usage, key)) for key in USAGE_KEYS}
