"""A real HTTP server on loopback speaking ``POST /v1/chat/completions`` that replays scripted responses.

Each scripted item is a dict: ``{"status": 200, "body": {...}, "headers": {...}, "delay": 0.0}``; helper
functions build the common bodies (a tool call, a final answer). Requests are recorded for assertions.
When the script runs out the server answers 500 so a test notices.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


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


def error(status: int, message: str = "scripted failure", headers: dict | None = None) -> dict[str, Any]:
    return {"status": status, "body": {"error": {"message": message, "type": "server_error"}}, "headers": headers or {}}


class ScriptedOpenAIServer:
    """Start with ``with ScriptedOpenAIServer([...]) as server:``; ``server.base_url`` ends in ``/v1``."""

    def __init__(self, script: list[dict[str, Any]] | None = None) -> None:
        self.script: list[dict[str, Any]] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw)
                except json.JSONDecodeError:
                    payload = {"_raw": raw.decode("utf-8", "replace")}
                with owner._lock:
                    owner.requests.append({"path": self.path, "json": payload, "time": time.monotonic()})
                    item = owner.script.pop(0) if owner.script else error(500, "script exhausted")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    item = error(404, f"unknown path {self.path}")
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

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
