"""Named configurations (``RAGConfig``) saved as JSON under ``<data_dir>/configs/``; export and import.

With a Chroma server (``ConfigStore.for_settings``) they are records on the server instead, so every app
instance lists the same configurations (both are a ``rag_core.stores.records.RecordStore``).

Validation errors from pydantic are turned into one readable line per bad field, e.g.
``retrieval.initial_k: must be ≥ 1``, so an invalid imported file says exactly what to fix.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from rag_core.config import RAGConfig, Settings
from rag_core.errors import field_problems, readable_problem
from rag_core.evaluation.labels import settings_key  # the one comparison of settings, names aside
from rag_core.stores.records import FileRecords, RecordStore, open_records

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
    """Saved configurations, one record per name: a JSON file written atomically, or a server record."""

    def __init__(self, data_dir: Path | str, records: RecordStore | None = None) -> None:
        self.root = Path(data_dir) / "configs"
        self._records = records if records is not None else FileRecords(self.root)

    @classmethod
    def for_settings(cls, settings: Settings) -> ConfigStore:
        """The store the deployment uses: on the Chroma server when one is configured, else in the data folder."""
        return cls(settings.data_dir, open_records(settings, "configs", "config"))

    def _path(self, name: str) -> Path:
        if not name or not name.strip(" .") or "/" in name or "\\" in name:
            raise ValueError(f"'{name}' is not a valid configuration name (letters, digits, spaces, '_', '.', '-')")
        return self.root / f"{name}.json"

    def list(self) -> list[str]:
        """Saved configuration names, sorted."""
        return self._records.keys()

    def exists(self, name: str) -> bool:
        self._path(name)
        return self._records.get(name) is not None

    def save(self, config: RAGConfig) -> Path:
        """Write ``config`` under its ``name`` (replacing a previous version)."""
        path = self._path(config.name)
        self._records.put(config.name, config.model_dump_json(indent=2))
        return path

    def load(self, name: str) -> RAGConfig:
        """The saved configuration ``name``; ``default`` is the built-in defaults until one is saved under it."""
        self._path(name)
        text = self._records.get(name)
        if text is None and name == DEFAULT_NAME:
            return RAGConfig(name=DEFAULT_NAME)
        if text is None:
            raise ValueError(f"no saved configuration named '{name}'; saved: {', '.join(self.list()) or 'none'}")
        config = parse_config(text, source=f"configuration '{name}'")
        if config.name != name:  # a file renamed by hand: the file name wins
            config = config.model_copy(update={"name": name})
        return config

    def delete(self, name: str) -> None:
        self._path(name)
        if not self._records.delete(name):
            raise ValueError(f"no saved configuration named '{name}'")

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


def snapshot_status(config: RAGConfig, store: ConfigStore) -> str:
    """How the active ``config`` stands to the saved configuration of its name: "" (the same), or in words.

    Saved configurations are snapshots: applying settings changes only the active one, so it can diverge.
    """
    try:
        saved = store.load(config.name)
    except ValueError:
        return "unsaved"
    same = settings_key(saved.model_dump(mode="json")) == settings_key(config.model_dump(mode="json"))
    return "" if same else f"modified from {config.name} (unsaved)"


def default_config(settings: Settings) -> RAGConfig:
    """The saved ``default`` configuration when there is one, else the built-in defaults."""
    try:
        return ConfigStore.for_settings(settings).load("default")
    except Exception as e:  # a corrupt saved config must not stop the app from starting
        log.warning("saved default configuration unreadable (%s); using built-in defaults", e)
    return RAGConfig()
