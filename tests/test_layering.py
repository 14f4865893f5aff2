"""Imports run downwards only: rag_core never imports Streamlit or the app, and the agent has no import circle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside functions."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_rag_core_imports_neither_streamlit_nor_the_app():
    for path in (ROOT / "rag_core").rglob("*.py"):
        bad = {n for n in _imports(path) if n.split(".")[0] in ("streamlit", "ui", "pages", "app", "plotly")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_agent_policies_and_types_never_import_the_loop():
    agent = ROOT / "rag_core" / "agent"
    for path in [agent / "run.py", *(agent / "policies").glob("*.py")]:
        assert "rag_core.agent.loop" not in _imports(path), path.relative_to(ROOT)


def test_the_wiring_is_in_services_only():
    """Pages, ui and the CLI open indexes and LLM clients through ``rag_core.services``."""
    for folder in ("pages", "ui", "rag_core/cli"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for opened in ("Index.open(", "get_embedder(", "LLMClient(", "llm_from_settings("):
                assert opened not in text, f"{path.relative_to(ROOT)} calls {opened}"
