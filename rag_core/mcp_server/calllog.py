"""The log of external agents' tool calls: JSONL in ``RAG_DATA_DIR/mcp_calls.jsonl``, one line per call, appended
under a file lock; past ``MAX_BYTES`` the older half is dropped (rewritten atomically)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from filelock import FileLock

MAX_BYTES = 5_000_000
MAX_ARG_CHARS = 2_000


def log_path(data_dir: Path) -> Path:
    return Path(data_dir) / "mcp_calls.jsonl"


def record(data_dir: Path, *, client: str, tool: str, arguments: dict, chunk_ids: list[str], latency_ms: float,
           ok: bool, error: str | None = None, result_chars: int = 0, doc_ids: list[str] | None = None) -> None:
    """Append one call; ``doc_ids`` (parallel to ``chunk_ids``) let the studio open each chunk in the Explorer."""
    path = log_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    args_text = json.dumps(arguments, ensure_ascii=False, default=str)[:MAX_ARG_CHARS]
    line = json.dumps({"time": time.time(), "client": client[:200], "tool": tool[:100], "arguments": args_text,
                       "chunk_ids": chunk_ids[:50], "doc_ids": (doc_ids or [])[:50],
                       "latency_ms": round(latency_ms, 2), "ok": ok,
                       "error": (error or "")[:500] or None,
                       "result_chars": result_chars}, ensure_ascii=False) + "\n"
    with FileLock(str(path) + ".lock", timeout=10):
        with path.open("a", encoding="utf-8") as f:
            f.write(line)
        if path.stat().st_size > MAX_BYTES:
            lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text("".join(lines[len(lines) // 2:]), encoding="utf-8")
            os.replace(tmp, path)


def read_calls(data_dir: Path, limit: int = 200) -> list[dict]:
    path = log_path(data_dir)
    if not path.exists():
        return []
    calls = []
    for raw in path.read_text(encoding="utf-8").splitlines()[-limit:]:
        try:
            calls.append(json.loads(raw))
        except ValueError:
            continue
    return calls
