"""``python -m rag_core``: one sub-command per module, registered here; heavy imports stay in handlers.

Every failure is one line on stderr (``error: ...``) with exit code 2: bad arguments (no usage block),
validation errors (one ``field: problem`` list, no pydantic dump) and unexpected errors (no traceback unless
``RAG_DEBUG=1``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys

from rag_core.errors import RagError, field_problems

# Sub-command modules, each with ``register(subparsers)`` that sets ``func`` on its parser.
COMMAND_MODULES = ("chunk_cmd", "ingest_cmd", "search_cmd", "ask_cmd", "eval_cmd", "config_cmd", "mcp_cmd", "tune_cmd")


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (exit 2), naming the ``--help`` to read."""

    def error(self, message: str):
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m rag_core", description="Agentic RAG Studio command line.")
    subparsers = parser.add_subparsers(dest="command", required=True)  # sub-parsers inherit the class
    for module_name in COMMAND_MODULES:
        importlib.import_module(f"rag_core.cli.{module_name}").register(subparsers)
    return parser


def print_json(obj) -> None:
    """Write one JSON value to stdout (UTF-8, no ASCII escaping); NaN and ±Infinity become null (not JSON)."""
    sys.stdout.write(json.dumps(_finite(obj), ensure_ascii=False, default=str, allow_nan=False) + "\n")


def _finite(value):
    """``value`` with every non-finite float replaced by None (json has no hook for floats, hence this walk)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def one_line(error: BaseException) -> str:
    """A one-line message for ``error``: pydantic validation errors as ``field: problem; ...``."""
    errors = getattr(error, "errors", None)
    if callable(errors) and type(error).__name__ == "ValidationError":
        try:
            message = field_problems(error)
        except Exception:  # noqa: BLE001 - fall back to the plain text
            message = str(error)
    else:
        message = str(error) or type(error).__name__
    return " ".join(message.split())


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (RagError, ValueError) as e:
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
    except OSError as e:  # unreadable files, a data folder that cannot be created ...
        print(f"error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a command line shows one line, not a traceback
        if os.environ.get("RAG_DEBUG"):
            raise
        print(f"error: unexpected {type(e).__name__}: {one_line(e)} (set RAG_DEBUG=1 for the traceback)",
              file=sys.stderr)
        return 2
