"""The log of external agents' tool calls, where the deployment keeps its records.

In a folder (the embedded backend) it is JSONL in ``RAG_DATA_DIR/mcp_calls.jsonl``, one line per call, appended
under a file lock; past ``MAX_BYTES`` the older half is dropped (rewritten atomically). In server mode
(``stores.backends.server_mode``: ``RAG_CHROMA_HOST``) each call is one record of kind ``mcp_call`` on the Chroma
server (``rag_core.stores.records``), so a studio with another data dir, on another machine, sees the calls of every
MCP server sharing that Chroma server; past ``MAX_CALLS`` records the oldest are deleted.

Each call keeps what the agent's own step timeline draws of a search (route, relevance, threshold, granularity, one
row per chunk), every field cut to a bound.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock

from rag_core.config import Settings
from rag_core.stores.backends import server_mode
from rag_core.stores.records import RecordStore, open_records

MAX_BYTES = 5_000_000
MAX_ARG_CHARS = 2_000
MAX_CHUNKS = 50
MAX_CALLS = 2_000  # on a Chroma server: the calls kept
TRIM_EVERY = 50  # a server log trims on its first call and every TRIM_EVERY-th after (listing its keys costs)
KIND = "mcp_call"


class CallLog(Protocol):
    def append(self, call: dict[str, Any]) -> None:
        """Add one call (an ``entry``)."""
        ...

    def read(self, limit: int) -> list[dict[str, Any]]:
        """The latest ``limit`` calls, oldest first (a damaged one left out)."""
        ...


def log_path(data_dir: Path) -> Path:
    return Path(data_dir) / "mcp_calls.jsonl"


class FileCallLog:
    """``mcp_calls.jsonl`` in a data dir."""

    def __init__(self, data_dir: Path | str) -> None:
        self.path = log_path(Path(data_dir))

    def append(self, call: dict[str, Any]) -> None:
        path = self.path
        path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(call, ensure_ascii=False) + "\n"
        with FileLock(str(path) + ".lock", timeout=10):
            with path.open("a", encoding="utf-8") as f:
                f.write(line)
            if path.stat().st_size > MAX_BYTES:
                lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
                tmp = path.with_suffix(".tmp")
                tmp.write_text("".join(lines[len(lines) // 2:]), encoding="utf-8")
                os.replace(tmp, path)

    def read(self, limit: int) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return _parsed(self.path.read_text(encoding="utf-8").splitlines()[-limit:])


class RecordCallLog:
    """One record per call in a ``RecordStore``, keyed by its time in nanoseconds and a random part (keys sort by
    time); past ``cap`` records the oldest are deleted."""

    def __init__(self, records: RecordStore, cap: int = MAX_CALLS, trim_every: int = TRIM_EVERY) -> None:
        self.records = records
        self.cap = cap
        self.trim_every = trim_every
        self._appended = 0
        self._lock = threading.Lock()

    def append(self, call: dict[str, Any]) -> None:
        self.records.put(f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}", json.dumps(call, ensure_ascii=False))
        with self._lock:
            due = self._appended % self.trim_every == 0
            self._appended += 1
        if due:
            self.trim()

    def trim(self) -> None:
        keys = self.records.keys()
        if len(keys) > self.cap:
            self.records.delete_many(keys[: len(keys) - self.cap])

    def read(self, limit: int) -> list[dict[str, Any]]:
        keys = self.records.keys()[-limit:] if limit > 0 else []
        texts = self.records.get_many(keys)
        return _parsed(texts[key] for key in keys if key in texts)


def _parsed(texts) -> list[dict[str, Any]]:
    calls = []
    for raw in texts:
        try:
            call = json.loads(raw)
        except ValueError:
            continue
        if isinstance(call, dict):
            calls.append(call)
    return calls


_server_logs: dict[str, RecordCallLog] = {}


def open_call_log(where: Settings | Path | str | CallLog) -> CallLog:
    """The call log of ``where``: settings with a Chroma server, its records (one log per server in a process, so
    trimming is counted across calls); other settings or a data dir, its JSONL file; a log, itself."""
    if isinstance(where, Settings):
        if not server_mode(where):
            return FileCallLog(where.data_dir)
        key = where.model_dump_json(include={"chroma_host", "chroma_port", "chroma_ssl", "chroma_token"})
        if key not in _server_logs:
            _server_logs[key] = RecordCallLog(open_records(where, "mcp_calls", KIND))
        return _server_logs[key]
    if isinstance(where, (Path, str)):
        return FileCallLog(where)
    return where


def _cut(value: Any, limit: int) -> str | None:
    return str(value)[:limit] if value not in (None, "") else None


def _number(value: Any) -> float | None:
    try:
        return round(float(value), 6) if value is not None else None
    except (TypeError, ValueError):
        return None


def _hit_row(hit: dict[str, Any]) -> dict[str, Any]:
    """One chunk of a search as the agent's step records it, each field bounded."""
    return {"chunk_id": _cut(hit.get("chunk_id"), 100), "doc_id": _cut(hit.get("doc_id"), 100),
            "source": _cut(hit.get("source"), 200) or "", "heading": _cut(hit.get("heading"), 300) or "",
            "granularity": _cut(hit.get("granularity"), 20), "chunk_type": _cut(hit.get("chunk_type"), 20),
            "tokens": int(hit.get("tokens") or 0), "score": _number(hit.get("score")),
            "confidence": _number(hit.get("confidence"))}


def retrieval_fields(found: dict[str, Any] | None) -> dict[str, Any]:
    """A search's route, relevance, threshold, granularity, results asked per iteration and hits, bounded."""
    if not found:
        return {}
    return {"route": _cut(found.get("route"), 40), "route_reason": _cut(found.get("route_reason"), 300),
            "confidence": _number(found.get("confidence")), "threshold": _number(found.get("threshold")),
            "granularity": _cut(found.get("granularity"), 20),
            "k_by_iteration": [int(k) for k in (found.get("k_by_iteration") or [])[:10]],
            "hits": [_hit_row(h) for h in (found.get("hits") or [])[:MAX_CHUNKS]]}


def entry(*, client: str, tool: str, arguments: dict, chunk_ids: list[str], latency_ms: float, ok: bool,
          error: str | None = None, result_chars: int = 0, doc_ids: list[str] | None = None,
          retrieval: dict[str, Any] | None = None) -> dict[str, Any]:
    """One call as it is logged: every field cut to its bound."""
    return {"time": time.time(), "client": client[:200], "tool": tool[:100],
            "arguments": json.dumps(arguments, ensure_ascii=False, default=str)[:MAX_ARG_CHARS],
            "chunk_ids": chunk_ids[:MAX_CHUNKS], "doc_ids": (doc_ids or [])[:MAX_CHUNKS],
            "latency_ms": round(latency_ms, 2), "ok": ok, "error": (error or "")[:500] or None,
            "result_chars": result_chars, **retrieval_fields(retrieval)}


def record(where: Settings | Path | str | CallLog, **call: Any) -> None:
    """Log one call (``entry``'s fields) where ``where`` keeps them (``open_call_log``); ``doc_ids`` (parallel to
    ``chunk_ids``) let the studio open each chunk in the Explorer."""
    open_call_log(where).append(entry(**call))


def read_calls(where: Settings | Path | str | CallLog, limit: int = 200) -> list[dict[str, Any]]:
    """The latest ``limit`` calls, oldest first."""
    return open_call_log(where).read(limit)
