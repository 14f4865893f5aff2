"""OpenAI-compatible chat client: one bounded ``chat`` call with timeouts, retries and clear errors.

Used by the agent's ``llm`` and ``llm-answer`` policies and by the retrieval LLM router. Every request carries
``max_tokens`` for its purpose (a tool step, the router's one-word choice, a final answer), and may carry a
deadline (the question's time budget) that caps each attempt's timeout and stops retries. The ``openai`` client's
own retries are turned off (``max_retries=0``) so that each retry is decided and recorded here: only what a
retry can fix is retried (429, 502/503/504, a 500 that gives no reason, a dropped connection); a failure whose
message says why (a parse error, a context overflow, tools not supported) is raised at once with that message.
"""

from __future__ import annotations

import email.utils
import logging
import re
import socket
import time
from collections.abc import Callable, Sequence
from typing import Any

from rag_core.config import Settings
from rag_core.errors import LLMError
from rag_core.llm.bounded import BoundedLLM
from rag_core.llm.probe import server_context_tokens
from rag_core.llm.replies import (
    ChatResult,
    ToolCall,
    _as_json,
    _field,
    message_text,
    tool_arguments,
    tool_name,
    usage_counts,
)
from rag_core.tokens import count_tokens

log = logging.getLogger(__name__)

# A server asking us to wait longer than this is treated as unavailable rather than slept on.
MAX_RETRY_AFTER_S = 30.0
PURPOSES = ("step", "router", "answer")
# What servers say when the prompt is larger than the model's context (llama.cpp, OpenAI, vLLM, LM Studio).
_CONTEXT_OVERFLOW = re.compile(
    r"exceeds? the (?:available )?context|context (?:size|length|window)|maximum context|context_length_exceeded"
    r"|prompt is too long|too many tokens", re.IGNORECASE)
# What servers say when they cannot take tools (Ollama, vLLM without a tool parser, llama.cpp without --jinja).
_NO_TOOLS = re.compile(
    r"does not support tools|tools? (?:are|is) not supported|tool.choice.{0,40}requires|enable-auto-tool-choice"
    r"|tools param requires|--jinja", re.IGNORECASE)
# A server error whose message names a cause that the same request would hit again.
_DETERMINISTIC = re.compile(
    r"pars(?:e|ing)|invalid|malformed|unsupported|not supported|exceed|must |required|expected|template|schema"
    r"|too (?:long|large|many)", re.IGNORECASE)


class LLMContextOverflow(LLMError):
    """The request is larger than the model's context window; the caller can shorten the conversation."""


class LLMToolsUnsupported(LLMError):
    """The server or model does not take tool definitions; the caller can ask without tools."""


class LLMOutOfTime(LLMError):
    """The question's time budget ran out before the model answered."""



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

    Retries 429 (honouring ``Retry-After``), 502/503/504, a 500 without a stated cause and dropped connections
    with exponential backoff, up to ``settings.llm_max_retries`` times and never past the deadline; anything
    else, or running out of retries, raises :class:`LLMError` with a message saying what failed, the server's own
    words, and what to check. A timeout is not retried: the same request would take as long again.
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
            # lazy: the OpenAI SDK is heavy, imported only where it is used
            import openai
        except ImportError as e:  # pragma: no cover - install problem
            raise ImportError("the openai package is missing: pip install openai") from e
        self._openai = openai
        self.base_url = settings.llm_base_url.rstrip("/")
        self.model = settings.llm_model
        self.timeout_s = float(settings.llm_timeout_s)
        self.timeout_per_1k_prompt_s = float(settings.llm_timeout_per_1k_prompt_s)
        self._context_tokens: int | None = settings.llm_context_tokens or None
        self._context_asked = bool(settings.llm_context_tokens)
        self._api_key = settings.llm_api_key or "not-needed"
        self.max_retries = max(0, int(settings.llm_max_retries))
        self.max_tokens = {"step": settings.llm_max_tokens_step, "router": settings.llm_max_tokens_router,
                           "answer": settings.llm_max_tokens_answer}
        self.time_budget_s = float(settings.llm_time_budget_s)
        # Facts learnt about the server, kept for the next questions: whether it takes tools at all (None: not
        # known yet), why not, and whether it wants ``max_completion_tokens`` instead of ``max_tokens``.
        self.tools_usable: bool | None = None
        self.tools_note = ""
        self._limit_key = "max_tokens"
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

    def request_timeout_s(self, prompt_tokens: int) -> float:
        """The timeout of one request: ``RAG_LLM_TIMEOUT_S`` plus ``RAG_LLM_TIMEOUT_PER_1K_PROMPT_S`` per 1,000
        prompt tokens (a long prompt takes a small CPU model long to read before it writes anything)."""
        return self.timeout_s + self.timeout_per_1k_prompt_s * max(0, prompt_tokens) / 1000

    def context_tokens(self) -> int | None:
        """The model's context size: ``RAG_LLM_CONTEXT_TOKENS``, else what the server says (asked once), else None."""
        if not self._context_asked:
            self._context_asked = True
            self._context_tokens = server_context_tokens(self.base_url, self._api_key, self.model)
        return self._context_tokens

    def chat(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        temperature: float = 0.0,
        *,
        purpose: str = "step",
        max_tokens: int | None = None,
        deadline: float | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> ChatResult:
        """One chat completion of at most ``max_tokens`` (default: the ``purpose``'s setting), answered before
        ``deadline`` (a ``time.monotonic()`` value) if given; returns the assistant's turn or raises LLMError.

        With ``on_text`` (for answers, without tools) the reply is streamed: ``on_text`` gets each piece of text as
        it arrives; streaming stops at the deadline (the answer is then marked ``finish_reason="time"``)."""
        openai = self._openai
        if purpose not in PURPOSES:
            raise ValueError(f"unknown purpose {purpose!r}; choose one of {', '.join(PURPOSES)}")
        limit = int(max_tokens or self.max_tokens[purpose])
        kwargs = self._request(messages, tools, temperature, streamed=on_text is not None)
        retries: list[str] = []
        started = time.perf_counter()
        attempt = 0
        prompt_tokens = prompt_size(messages, tools)
        full_timeout = self.request_timeout_s(prompt_tokens)
        while True:
            said = ""
            timeout = full_timeout
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0.05:
                    raise LLMOutOfTime(self._out_of_time(retries))
                timeout = min(timeout, remaining)
            try:
                response = self._client.chat.completions.create(**kwargs, **{self._limit_key: limit}, timeout=timeout)
                break
            except (ValueError, RecursionError) as e:  # the body is not JSON, or JSON that no parser reads
                raise LLMError(self._unreadable(e)) from e
            except openai.RateLimitError as e:
                wait = parse_retry_after(e.response.headers.get("retry-after"))
                reason = f"429 rate limited (Retry-After: {e.response.headers.get('retry-after', 'none')})"
                if wait is not None and wait > MAX_RETRY_AFTER_S:
                    raise LLMError(
                        f"the LLM at {self.base_url} is rate limiting and asks to wait {wait:.0f} s; try again later"
                    ) from e
            except openai.APITimeoutError as e:
                if timeout < full_timeout:
                    raise LLMOutOfTime(self._out_of_time(retries)) from e
                raise LLMError(
                    f"the LLM at {self.base_url} did not answer within {round(full_timeout, 1):g} s (for a prompt of "
                    f"about {prompt_tokens} tokens, asked for at most {limit} tokens); raise RAG_LLM_TIMEOUT_S or "
                    f"RAG_LLM_TIMEOUT_PER_1K_PROMPT_S, lower RAG_LLM_MAX_TOKENS_{purpose.upper()}, or check the server"
                ) from e
            except openai.APIConnectionError as e:
                wait, reason = None, f"connection failed ({e.__cause__ or e})"
                if attempt >= self.max_retries or _nobody_there(e):
                    raise LLMError(
                        f"the LLM endpoint {self.base_url} is unreachable ({e.__cause__ or e}); "
                        "check RAG_LLM_BASE_URL and that the server is running"
                    ) from e
            except openai.APIStatusError as e:
                retry = self._status_retry(e, bool(tools))
                if retry is None:
                    continue  # sent again at once, with the parameter renamed
                wait, (reason, said) = None, retry
            if attempt >= self.max_retries:
                raise LLMError(f"the LLM at {self.base_url} kept failing: {reason} after {attempt + 1} attempts{said}")
            delay = wait if wait is not None else min(self.max_backoff_s, self.backoff_base_s * 2**attempt)
            if deadline is not None and time.monotonic() + delay >= deadline:
                raise LLMOutOfTime(self._out_of_time(retries + [f"attempt {attempt + 1}: {reason}"]))
            retries.append(f"attempt {attempt + 1}: {reason}{said}; retrying in {delay:.2f} s")
            log.warning("LLM call failed (%s); retrying in %.2f s", reason, delay)
            self._sleep(delay)
            attempt += 1
        if on_text is not None:
            result = self._collect(response, on_text, deadline, retries, started)
        else:
            result = self._parse(response, retries, (time.perf_counter() - started) * 1000)
        result.max_tokens = limit
        return result

    def _request(self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                 temperature: float, *, streamed: bool) -> dict[str, Any]:
        """The completion request's arguments (all but the token limit and timeout)."""
        kwargs: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": temperature}
        if tools:
            kwargs["tools"] = list(tools)
            kwargs["tool_choice"] = "auto"
        if streamed:
            if tools:
                raise ValueError("streaming (on_text) is for answers: call chat without tools")
            kwargs["stream"] = True
        return kwargs

    def _status_retry(self, e: Any, tools: bool) -> tuple[str, str] | None:
        """An error status of the server: ``(reason, what the server said)`` when worth retrying; None when the
        request goes again at once (a renamed parameter); else the ``LLMError`` that says why it is not retried."""
        detail = _server_message(e)
        if e.status_code == 400 and "max_completion_tokens" in detail and self._limit_key == "max_tokens":
            self._limit_key = "max_completion_tokens"  # newer OpenAI models renamed the parameter
            return None
        if _CONTEXT_OVERFLOW.search(detail):
            raise LLMContextOverflow(
                f"the conversation is larger than the model's context window ({e.status_code}: {detail}); "
                "shorten the context (a smaller context budget) or serve the model with a larger context"
            ) from e
        if tools and _NO_TOOLS.search(detail):
            raise LLMToolsUnsupported(
                f"the LLM at {self.base_url} does not take tools ({e.status_code}: {detail}); the "
                "llm-answer policy needs none (llama-server needs --jinja; vLLM --enable-auto-tool-choice)"
            ) from e
        if e.status_code < 500:
            raise LLMError(self._status_message(e)) from e
        if e.status_code not in (502, 503, 504) and _DETERMINISTIC.search(detail):
            raise LLMError(
                f"the LLM at {self.base_url} failed ({e.status_code}: {detail}); the same request would "
                "fail again, so it is not retried"
            ) from e
        return f"server error {e.status_code}", f"; the server said: {detail}" if detail else ""

    def _collect(self, stream: Any, on_text: Callable[[str], None], deadline: float | None, retries: list[str],
                 started: float) -> ChatResult:
        """Read a streamed completion, handing each piece of text to ``on_text``."""
        # lazy: httpx is heavy, imported only where it is used
        import httpx  # the openai client's transport

        pieces: list[str] = []
        finish, model, usage = None, "", {}
        chunks = iter(stream)
        try:
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    break
                except (ValueError, RecursionError) as e:  # an event that is not JSON, or JSON no parser reads
                    raise LLMError(self._unreadable(e)) from e
                served = _field(chunk, "model")
                model = served if isinstance(served, str) and served else model
                if _field(chunk, "usage") is not None:
                    usage = usage_counts(_field(chunk, "usage"))
                choices = _field(chunk, "choices")
                for choice in choices if isinstance(choices, list | tuple) else []:
                    text = message_text(_field(_field(choice, "delta"), "content"))
                    if text:
                        pieces.append(text)
                        on_text(text)
                    reason = _field(choice, "finish_reason")
                    finish = reason if isinstance(reason, str) and reason else finish
                if deadline is not None and time.monotonic() >= deadline:
                    finish = "time"
                    break
        except (self._openai.APIError, httpx.HTTPError) as e:
            raise LLMError(f"the LLM at {self.base_url} broke off its streamed answer ({e})") from e
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        return ChatResult(content="".join(pieces), usage=usage, finish_reason=finish, model=model or self.model,
                          retries=retries, elapsed_ms=(time.perf_counter() - started) * 1000)

    def bounded(self, deadline: float) -> BoundedLLM:
        """This client with ``deadline`` applied to every call (for the retrieval router inside one question)."""
        return BoundedLLM(self, deadline)

    def model_note(self, result: ChatResult) -> str | None:
        """A note when the server answered under another model name than the one asked for (llama.cpp and some
        proxies accept any name), since then RAG_LLM_MODEL does not say which model answered."""
        served, asked = (result.model or "").strip(), self.model.strip()
        if not served or served.lower().startswith(asked.lower()) or asked.lower() in served.lower():
            return None
        return (f"the server answered as model {served!r}, not {asked!r}: it ignores RAG_LLM_MODEL, so the name in "
                "the trace is not proof of which model answered")

    def _out_of_time(self, retries: list[str]) -> str:
        tried = f" ({'; '.join(retries)})" if retries else ""
        return (f"the question's time budget (RAG_LLM_TIME_BUDGET_S={self.time_budget_s:g} s) ran out while waiting "
                f"for the LLM at {self.base_url}{tried}")

    def _unreadable(self, error: BaseException) -> str:
        detail = " ".join(str(error).split())[:200]
        return (f"the LLM at {self.base_url} sent a reply that could not be read ({type(error).__name__}: {detail}); "
                "check that RAG_LLM_BASE_URL is an OpenAI-compatible server")

    def _status_message(self, error: Any) -> str:
        status = error.status_code
        detail = _server_message(error)
        hint = {
            401: "check RAG_LLM_API_KEY",
            403: "the key may lack access to this model",
            404: "check RAG_LLM_BASE_URL (it usually ends in /v1) and RAG_LLM_MODEL",
        }.get(status, "check the request and the server's message")
        return f"the LLM at {self.base_url} refused the request ({status}: {detail}); {hint}"

    def _parse(self, response: Any, retries: list[str], elapsed_ms: float) -> ChatResult:
        """The assistant turn of ``response``, every field checked: the ``openai`` client does not validate what
        the server sent, so a name may be a list, the content a number and a count a string."""
        choices = _field(response, "choices")
        first = choices[0] if isinstance(choices, list | tuple) and choices else None
        message = _field(first, "message")
        if isinstance(message, str):  # a bare string where the message object belongs: take it as the text
            message = {"content": message}
        if message is None or isinstance(message, int | float | bool | list | tuple):
            raise LLMError(f"the LLM at {self.base_url} returned a response without a message")
        calls = []
        tool_calls = _field(message, "tool_calls")
        for i, call in enumerate(tool_calls if isinstance(tool_calls, list | tuple) else []):
            function = _field(call, "function")
            if function is None or isinstance(function, str | int | float | bool | list | tuple):
                continue
            call_id = _field(call, "id")
            calls.append(ToolCall(
                id=str(call_id) if isinstance(call_id, str | int) and str(call_id) else f"call_{i}",
                name=tool_name(_field(function, "name")),
                arguments=tool_arguments(_field(function, "arguments")),
            ))
        finish = _field(first, "finish_reason")
        model = _field(response, "model")
        return ChatResult(
            content=message_text(_field(message, "content")),
            tool_calls=calls,
            usage=usage_counts(_field(response, "usage")),
            finish_reason=finish if isinstance(finish, str) else None,
            model=model if isinstance(model, str) and model else self.model,
            retries=retries,
            elapsed_ms=elapsed_ms,
        )


def prompt_size(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> int:
    """About how many tokens a request's prompt holds (cl100k over the messages' text and the tool definitions)."""
    text = "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
    return count_tokens(text) + (count_tokens(_as_json(list(tools))) if tools else 0)


def _server_message(error: Any) -> str:
    """The server's own explanation in an error response (``{"error": {"message": ...}}`` or plain text)."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return " ".join(str(message).split())[:500]
    response = getattr(error, "response", None)
    text = ""
    try:
        text = response.text if response is not None else ""
    except Exception:  # noqa: BLE001 - a streamed or closed body: fall back to the client's text
        text = ""
    return " ".join((text or getattr(error, "message", "") or str(error)).split())[:500]


def llm_from_settings(settings: Settings) -> LLMClient | None:
    """An ``LLMClient`` when an LLM is configured in ``settings``, else None."""
    if not settings.llm_configured:
        return None
    return LLMClient(settings)
