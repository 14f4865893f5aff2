"""``python -m rag_core serve-mcp [--collection NAME] [--config SAVED] [--http [--host H] [--port N]]
[--max-calls N]``: the retrieval tools over MCP (stdio by default, streamable HTTP with ``--http``; a non-local host
needs ``RAG_MCP_TOKEN``), and ``python -m rag_core tools --json``: the same tools as OpenAI function definitions."""

from __future__ import annotations

import argparse


def register(subparsers) -> None:
    parser = subparsers.add_parser("serve-mcp", help="serve the retrieval tools to MCP clients (stdio or HTTP)")
    parser.add_argument("--collection", help="index (collection) name, as given to ingest (default: the index "
                                             "serving the active configuration, followed across re-indexes)")
    parser.add_argument("--config", metavar="NAME", help="saved configuration to serve (default: the active one)")
    parser.add_argument("--http", action="store_true", help="streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1; any other needs "
                                                            "RAG_MCP_TOKEN)")
    parser.add_argument("--port", type=int, default=8765, help="HTTP port (default 8765)")
    parser.add_argument("--max-calls", type=int, default=4, metavar="N",
                        help="tool calls run at once, 1-64 (default 4); one more is refused with 'busy, retry'")
    parser.set_defaults(func=run)
    tools = subparsers.add_parser("tools", help="the served tools as OpenAI function-calling definitions")
    tools.add_argument("--json", action="store_true", help="print one JSON list")
    tools.set_defaults(func=run_tools)


def run(args: argparse.Namespace) -> int:
    import os

    import anyio

    from rag_core.mcp_server.server import Backend, serve_http, serve_stdio

    if not 1 <= args.max_calls <= 64:
        raise ValueError(f"--max-calls must be between 1 and 64 (got {args.max_calls})")
    if args.config:
        from rag_core.cli.config_cmd import saved_config

        saved_config(args.config)  # an unknown name is refused now, not at the first tool call
    backend = Backend(args.collection, args.config)
    if args.http:
        if not 1 <= args.port <= 65535:
            raise ValueError(f"--port must be between 1 and 65535 (got {args.port})")
        serve_http(backend, args.host, args.port, os.environ.get("RAG_MCP_TOKEN") or None, args.max_calls)
    else:
        anyio.run(serve_stdio, backend, args.max_calls)
    return 0


def run_tools(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json
    from rag_core.mcp_server.server import openai_tools

    tools = openai_tools()
    if args.json:
        print_json(tools)
    else:
        for tool in tools:
            print(f"{tool['function']['name']}: {tool['function']['description']}")
    return 0
