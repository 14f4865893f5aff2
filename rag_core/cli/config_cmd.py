"""``python -m rag_core config list|show|export|import|delete``: saved configurations on the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("config", help="list, show, export, import or delete saved configurations")
    actions = parser.add_subparsers(dest="config_action", required=True)

    actions.add_parser("list", help="names of the saved configurations (JSON list)").set_defaults(func=_list)
    show = actions.add_parser("show", help="one saved configuration as JSON")
    show.add_argument("name")
    show.set_defaults(func=_export)
    export = actions.add_parser("export", help="one saved configuration as JSON on stdout")
    export.add_argument("name")
    export.set_defaults(func=_export)
    imp = actions.add_parser("import", help="validate a JSON file and save it as a configuration")
    imp.add_argument("file", help="JSON file ('-' reads stdin)")
    imp.add_argument("--name", help="save under this name instead of the one in the file")
    imp.set_defaults(func=_import)
    delete = actions.add_parser("delete", help="delete a saved configuration")
    delete.add_argument("name")
    delete.set_defaults(func=_delete)


def _store():
    from rag_core.config import get_settings
    from rag_core.serving.configstore import ConfigStore

    return ConfigStore.for_settings(get_settings())


def add_saved_config_flag(parser, settings: str) -> None:
    """``--config NAME`` of ``search`` and ``ask``: a saved configuration whose ``settings`` (what the command uses
    of it) replace the defaults; read with ``saved_config``."""
    parser.add_argument("--config", metavar="NAME",
                        help=f"a saved configuration (see: config list): its {settings} replace the defaults below, "
                             "and each flag given still overrides its one value. Its chunking and embedder are not "
                             "used: the collection keeps the ones it was built with (nothing is re-chunked)")


def saved_config(name: str | None):
    """The saved configuration ``name`` for a ``--config NAME`` flag (None without one); an unknown name is a
    ``ValueError`` naming the flag and listing the saved names."""
    if name is None:
        return None
    try:
        return _store().load(name)
    except ValueError as e:
        raise ValueError(f"--config: {e}") from e


def _list(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json

    print_json(_store().list())
    return 0


def _export(args: argparse.Namespace) -> int:
    sys.stdout.write(_store().export_json(args.name) + "\n")
    return 0


def _import(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json

    if args.file == "-":
        text, source = sys.stdin.read(), "stdin"
    else:
        path = Path(args.file)
        if not path.is_file():
            raise ValueError(f"{path}: no such file")
        text, source = path.read_bytes(), path.name
    config = _store().import_json(text, name=args.name, source=source)
    print_json({"imported": config.name})
    return 0


def _delete(args: argparse.Namespace) -> int:
    from rag_core.cli import print_json

    _store().delete(args.name)
    print_json({"deleted": args.name})
    return 0
