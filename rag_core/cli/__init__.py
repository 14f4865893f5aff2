"""``python -m rag_core``: one sub-command per module, registered here; heavy imports stay in handlers."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from rag_core.errors import RagError

# Sub-command modules, each with ``register(subparsers)`` that sets ``func`` on its parser.
COMMAND_MODULES = ("chunk_cmd", "ingest_cmd", "search_cmd", "ask_cmd", "eval_cmd", "config_cmd")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m rag_core", description="Agentic RAG Studio command line.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(f"rag_core.cli.{module_name}").register(subparsers)
    return parser


def print_json(obj) -> None:
    """Write one JSON value to stdout (UTF-8, no ASCII escaping)."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except RagError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. piped into `head`
        return 0
