"""OpenAI-compatible chat client: one ``chat`` call with timeouts, retries and clear errors.

Used by the agent's ``llm`` policy and by the retrieval LLM router. The ``openai`` client's own
retries are turned off (``max_retries=0``) so that each retry is decided and recorded here: the
agent trace shows why a step took long (``ChatResult.retries``).
"""

from __future__ import annotations

import email.utils
import logging
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rag_core.config import Settings
from rag_core.errors import LLMError

log = logging.getLogger(__name__)

# A server asking us to wait longer than this is treated as unavailable rather than slept on.
MAX_RETRY_AFTER_S = 30.0


@dataclass(slots=True)
class ToolCall:
    """One tool call requested by the model; ``arguments`` is the raw JSON text as sent."""

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

    @property
    def total_tokens(self) -> int:
        return int(self.usage.get("total_tokens", 0))

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
        }


def _nobody_there(error: BaseException) -> bool:
    """A refused connection or an unknown host: nothing listens there, so retrying only makes the user wait
    (3.5 s with the default retries). Resets and other network blips are still retried."""
    seen: BaseException | None = error
    for _ in range(8):  # the cause chain: openai → httpx → httpcore → OSError
        if seen is None:
            return False
        if isinstance(seen, ConnectionRefusedError | socket.gaierror):
            return True
        text = str(seen)
        if "Connection refused" in text or "Name or service not known" in text or "nodename nor servname" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None when absent/invalid."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


class LLMClient:
    """Chat completions against ``settings.llm_base_url`` with ``settings.llm_model``.

    Retries 429 (honouring ``Retry-After``), 5xx, timeouts and dropped connections with exponential
    backoff, up to ``settings.llm_max_retries`` times; anything else, or running out of retries,
    raises :class:`LLMError` with a message saying what failed and what to check.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        backoff_base_s: float = 0.5,
        max_backoff_s: float = 8.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not settings.llm_configured:
            raise LLMError("no LLM is configured: set RAG_LLM_BASE_URL and RAG_LLM_MODEL (and RAG_LLM_API_KEY)")
        try:
            import openai
        except ImportError as e:  # pragma: no cover - install problem
            raise ImportError("the openai package is missing: pip install openai") from e
        self._openai = openai
        self.base_url = settings.llm_base_url.rstrip("/")
        self.model = settings.llm_model
        self.timeout_s = float(settings.llm_timeout_s)
        self.max_retries = max(0, int(settings.llm_max_retries))
        self.backoff_base_s = backoff_base_s
        self.max_backoff_s = max_backoff_s
        self._sleep = sleep
        # Local servers (Ollama, vLLM, LM Studio) accept any key; the client insists on a non-empty one.
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=settings.llm_api_key or "not-needed",
            timeout=self.timeout_s,
            max_retries=0,
        )

    def describe(self) -> str:
        return f"{self.model} at {self.base_url}"

    def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float = 0.0,
    ) -> ChatResult:
        """One chat completion; returns the assistant's content and tool calls, or raises LLMError."""
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": temperature}
        if tools:
            kwargs["tools"] = list(tools)
            kwargs["tool_choice"] = "auto"
        retries: list[str] = []
        started = time.perf_counter()
        attempt = 0
        while True:
            try:
                response = self._client.chat.completions.create(**kwargs)
                break
            except openai.RateLimitError as e:
                wait = parse_retry_after(e.response.headers.get("retry-after"))
                reason = f"429 rate limited (Retry-After: {e.response.headers.get('retry-after', 'none')})"
                if wait is not None and wait > MAX_RETRY_AFTER_S:
                    raise LLMError(
                        f"the LLM at {self.base_url} is rate limiting and asks to wait {wait:.0f} s; try again later"
                    ) from e
            except openai.APITimeoutError as e:
                wait, reason = None, f"timed out after {self.timeout_s:g} s"
                if attempt >= self.max_retries:
                    raise LLMError(
                        f"the LLM at {self.base_url} did not answer within {self.timeout_s:g} s "
                        f"({attempt + 1} attempts); raise RAG_LLM_TIMEOUT_S or check the server"
                    ) from e
            except openai.APIConnectionError as e:
                wait, reason = None, f"connection failed ({e.__cause__ or e})"
                if attempt >= self.max_retries or _nobody_there(e):
                    raise LLMError(
                        f"the LLM endpoint {self.base_url} is unreachable ({e.__cause__ or e}); "
                        "check RAG_LLM_BASE_URL and that the server is running"
                    ) from e
            except openai.APIStatusError as e:
                if e.status_code < 500:
                    raise LLMError(self._status_message(e)) from e
                wait, reason = None, f"server error {e.status_code}"
            if attempt >= self.max_retries:
                raise LLMError(f"the LLM at {self.base_url} kept failing: {reason} after {attempt + 1} attempts")
            delay = wait if wait is not None else min(self.max_backoff_s, self.backoff_base_s * 2**attempt)
            retries.append(f"attempt {attempt + 1}: {reason}; retrying in {delay:.2f} s")
            log.warning("LLM call failed (%s); retrying in %.2f s", reason, delay)
            self._sleep(delay)
            attempt += 1
        return self._parse(response, retries, (time.perf_counter() - started) * 1000)

    def _status_message(self, error: Any) -> str:
        status = error.status_code
        detail = getattr(error, "message", "") or str(error)
        hint = {
            401: "check RAG_LLM_API_KEY",
            403: "the key may lack access to this model",
            404: "check RAG_LLM_BASE_URL (it usually ends in /v1) and RAG_LLM_MODEL",
        }.get(status, "check the model name and the request")
        return f"the LLM at {self.base_url} refused the request ({status}: {detail}); {hint}"

    def _parse(self, response: Any, retries: list[str], elapsed_ms: float) -> ChatResult:
        choices = getattr(response, "choices", None) or []
        if not choices or getattr(choices[0], "message", None) is None:
            raise LLMError(f"the LLM at {self.base_url} returned a response without a message")
        message = choices[0].message
        calls = []
        for i, call in enumerate(message.tool_calls or []):
            function = getattr(call, "function", None)
            if function is None:
                continue
            calls.append(
                ToolCall(
                    id=call.id or f"call_{i}",
                    name=function.name or "",
                    arguments=function.arguments if function.arguments is not None else "",
                )
            )
        usage = {}
        if response.usage is not None:
            usage = {
                "prompt_tokens": int(response.usage.prompt_tokens or 0),
                "completion_tokens": int(response.usage.completion_tokens or 0),
                "total_tokens": int(response.usage.total_tokens or 0),
            }
        return ChatResult(
            content=message.content,
            tool_calls=calls,
            usage=usage,
            finish_reason=choices[0].finish_reason,
            model=getattr(response, "model", "") or self.model,
            retries=retries,
            elapsed_ms=elapsed_ms,
        )


def llm_from_settings(settings: Settings) -> LLMClient | None:
    """An ``LLMClient`` when an LLM is configured in ``settings``, else None."""
    if not settings.llm_configured:
        return None
    return LLMClient(settings)
