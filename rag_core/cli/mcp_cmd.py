"""``python -m rag_core serve-mcp --collection NAME [--config SAVED]``: the retrieval tools over MCP (stdio)."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve-mcp", help="serve the retrieval tools to MCP clients (stdio)")
    parser.add_argument("--collection", required=True, help="index (collection) name, as given to ingest")
    parser.add_argument("--config", metavar="NAME", help="saved configuration to serve (default: the active one)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import anyio

    from rag_core.mcp_server.server import Backend, serve_stdio

    anyio.run(serve_stdio, Backend(args.collection, args.config))
    return 0
