"""The house's size rules (issue 38.5): no function over 100 lines, no class over 350, in the engine and the app.
A room that outgrows them is split by concept, not squeezed."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_FUNCTION_LINES = 100
MAX_CLASS_LINES = 350


def _oversized() -> list[str]:
    found = []
    for folder in ("rag_core", "ui", "views"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    continue
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(ROOT)}: function {node.name} has {lines} lines")
                elif isinstance(node, ast.ClassDef) and lines > MAX_CLASS_LINES:
                    found.append(f"{path.relative_to(ROOT)}: class {node.name} has {lines} lines")
    return found


def test_no_function_over_100_lines_and_no_class_over_350():
    assert _oversized() == []
