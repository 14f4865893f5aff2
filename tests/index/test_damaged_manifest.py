"""Issue 39 item 11: a truncated or invalid index manifest is refused with a message naming the file, never as
"Unterminated string…" or "unexpected KeyError: 'embedder_id'"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_core.cli import main
from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.errors import IndexError_
from rag_core.index import Index, list_collections
from rag_core.loaders import load_path, sample_paths
from rag_core.services import open_collection


@pytest.fixture
def manifest(data_dir) -> Path:
    settings = Settings(data_dir=data_dir)
    Index.open("docs", settings, get_embedder("hash", settings)).ingest([load_path(sample_paths()[0])])
    return Path(data_dir) / "indexes" / "docs" / "manifest.json"


def _damage(path: Path, how: str) -> None:
    text = path.read_text()
    data = json.loads(text)
    if how == "truncated":
        path.write_text(text[: len(text) // 2])
    elif how == "no embedder_id":
        del data["embedder_id"]
        path.write_text(json.dumps(data))
    elif how == "dim as text":
        path.write_text(json.dumps({**data, "dim": "many"}))
    elif how == "chunking invalid":
        path.write_text(json.dumps({**data, "chunking": {"max_tokens": -5}}))
    else:
        path.write_text("[1, 2]")


@pytest.mark.parametrize("how", ["truncated", "no embedder_id", "dim as text", "chunking invalid", "a list"])
def test_a_damaged_manifest_is_refused_naming_the_file(manifest, data_dir, how):
    _damage(manifest, how)
    settings = Settings(data_dir=data_dir)
    with pytest.raises(IndexError_) as caught:
        open_collection("docs", settings)
    message = str(caught.value)
    assert "damaged" in message or "invalid" in message
    assert str(manifest) in message or "'docs'" in message
    assert "Unterminated" not in message and "KeyError" not in message


def test_the_cli_says_which_manifest_is_damaged(manifest, data_dir, capsys, monkeypatch):
    monkeypatch.setenv("RAG_DATA_DIR", str(data_dir))
    _damage(manifest, "truncated")
    assert main(["search", "install", "--collection", "docs"]) != 0
    err = capsys.readouterr().err
    assert str(manifest) in err and "unexpected" not in err.lower()


def test_a_damaged_index_is_listed_with_its_problem(manifest, data_dir):
    _damage(manifest, "no embedder_id")
    rows = {row["name"]: row for row in list_collections(Settings(data_dir=data_dir))}
    assert "embedder_id" in rows["docs"]["damaged"]
