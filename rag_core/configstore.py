"""Named configurations (``RAGConfig``) saved as JSON under ``<data_dir>/configs/``; export and import.

With a Chroma server (``ConfigStore.for_settings``) they are records on the server instead, so every app
instance lists the same configurations (see ``rag_core.stores.shared``).

Validation errors from pydantic are turned into one readable line per bad field, e.g.
``retrieval.initial_k: must be ≥ 1``, so an invalid imported file says exactly what to fix.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rag_core.config import RAGConfig, Settings
from rag_core.errors import field_problems, readable_problem
from rag_core.stores.collections import meta_records
from rag_core.stores.shared import SharedRecords

log = logging.getLogger(__name__)


def format_validation_error(error: ValidationError) -> str:
    """One ``field.path: problem`` clause per error, joined with ``; ``."""
    return field_problems(error, unnamed="configuration", problem=readable_problem)


def parse_config(data: str | bytes | dict[str, Any], source: str = "configuration") -> RAGConfig:
    """Validate JSON text (or a parsed dict) as a ``RAGConfig``; ``ValueError`` names each bad field."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise ValueError(f"{source}: not UTF-8 JSON text") from e
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as e:
            raise ValueError(f"{source}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from e
    if not isinstance(data, dict):
        raise ValueError(f"{source}: expected a JSON object with chunking, embedding, retrieval and agent sections")
    try:
        return RAGConfig.model_validate(data)
    except ValidationError as e:
        raise ValueError(f"{source}: {format_validation_error(e)}") from e


DEFAULT_NAME = "default"


class ConfigStore:
    """Saved configurations, one JSON file per name, written atomically (or one server record per name)."""

    def __init__(self, data_dir: Path | str, shared: SharedRecords | None = None) -> None:
        self.root = Path(data_dir) / "configs"
        self._shared = shared

    @classmethod
    def for_settings(cls, settings: Settings) -> ConfigStore:
        """The store the deployment uses: on the Chroma server when one is configured, else in the data folder."""
        if not settings.chroma_host:
            return cls(settings.data_dir)
        return cls(settings.data_dir, SharedRecords(meta_records(settings), "config"))

    def _path(self, name: str) -> Path:
        if not name or not name.strip(" .") or "/" in name or "\\" in name:
            raise ValueError(f"'{name}' is not a valid configuration name (letters, digits, spaces, '_', '.', '-')")
        return self.root / f"{name}.json"

    def list(self) -> list[str]:
        """Saved configuration names, sorted."""
        if self._shared is not None:
            return self._shared.keys()
        if not self.root.is_dir():
            return []
        return sorted(p.stem for p in self.root.glob("*.json"))

    def exists(self, name: str) -> bool:
        path = self._path(name)
        if self._shared is not None:
            return self._shared.get(name) is not None
        return path.is_file()

    def save(self, config: RAGConfig) -> Path:
        """Write ``config`` under its ``name`` (replacing a previous version)."""
        path = self._path(config.name)
        if self._shared is not None:
            self._shared.put(config.name, config.model_dump_json(indent=2))
            return path
        self.root.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as f:
                f.write(config.model_dump_json(indent=2))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    def load(self, name: str) -> RAGConfig:
        """The saved configuration ``name``; ``default`` is the built-in defaults until one is saved under it."""
        path = self._path(name)
        text = self._shared.get(name) if self._shared is not None else (
            path.read_text(encoding="utf-8") if path.is_file() else None)
        if text is None and name == DEFAULT_NAME:
            return RAGConfig(name=DEFAULT_NAME)
        if text is None:
            raise ValueError(f"no saved configuration named '{name}'; saved: {', '.join(self.list()) or 'none'}")
        config = parse_config(text, source=f"configuration '{name}'")
        if config.name != name:  # a file renamed by hand: the file name wins
            config = config.model_copy(update={"name": name})
        return config

    def delete(self, name: str) -> None:
        path = self._path(name)
        if self._shared is not None:
            if not self._shared.delete(name):
                raise ValueError(f"no saved configuration named '{name}'")
            return
        if not path.is_file():
            raise ValueError(f"no saved configuration named '{name}'")
        path.unlink()

    def duplicate(self, name: str, new_name: str) -> RAGConfig:
        """Save a copy of ``name`` as ``new_name`` (which must not exist yet)."""
        if self.exists(new_name):
            raise ValueError(f"a configuration named '{new_name}' already exists; pick another name")
        source = self.load(name)
        try:
            copy = source.renamed(new_name)
        except ValidationError as e:
            raise ValueError(f"new name: {format_validation_error(e)}") from e
        self.save(copy)
        return copy

    def export_json(self, name: str) -> str:
        return self.load(name).model_dump_json(indent=2)

    def import_json(self, text: str | bytes, name: str | None = None, source: str = "imported file") -> RAGConfig:
        """Validate and save a configuration from JSON; ``name`` overrides the name inside the file."""
        config = parse_config(text, source=source)
        if name:
            try:
                config = config.renamed(name)
            except ValidationError as e:
                raise ValueError(f"{source}: {format_validation_error(e)}") from e
        self.save(config)
        return config


def default_config(settings: Settings) -> RAGConfig:
    """The saved ``default`` configuration when there is one, else the built-in defaults."""
    try:
        return ConfigStore.for_settings(settings).load("default")
    except Exception as e:  # a corrupt saved config must not stop the app from starting
        log.warning("saved default configuration unreadable (%s); using built-in defaults", e)
    return RAGConfig()
