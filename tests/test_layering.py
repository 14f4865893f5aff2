"""Imports run downwards only: rag_core never imports Streamlit or the app, the engine never imports the wiring
(``rag_core.services``), and rag_core's modules import each other without a circle, at the top or inside functions."""

from __future__ import annotations

import ast
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The wiring above the engine: it opens indexes, embedders and clients and hands them down as arguments (the
# MCP server is an entry point like the CLI).
WIRING = ("rag_core.services", "rag_core.bootstrap", "rag_core.__main__", "rag_core.cli", "rag_core.mcp_server")
# Imports inside functions in the engine: each keeps a heavy third-party package (ChromaDB, the OpenAI SDK, pypdf,
# onnxruntime, …) from loading at import time. Lower this when one goes; it must not grow silently.
ENGINE_FUNCTION_IMPORTS_CEILING = 24


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
        bad = {n for n in _imports(path) if n.split(".")[0] in ("streamlit", "ui", "views", "app", "plotly")}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_agent_policies_and_types_never_import_the_loop():
    agent = ROOT / "rag_core" / "agent"
    for path in [agent / "agent_types.py", *(agent / "policies").glob("*.py")]:
        assert "rag_core.agent.loop" not in _imports(path), path.relative_to(ROOT)


def test_the_wiring_is_in_services_only():
    """Pages, ui and the CLI open indexes and LLM clients through ``rag_core.services``."""
    for folder in ("views", "ui", "rag_core/cli"):
        for path in (ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for opened in ("Index.open(", "get_embedder(", "LLMClient(", "llm_from_settings("):
                assert opened not in text, f"{path.relative_to(ROOT)} calls {opened}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _import_nodes(tree: ast.AST, in_function: bool = False):
    """(import node, inside a function?) for every import that runs: ``if TYPE_CHECKING:`` blocks are skipped."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        elif _is_type_checking(child):
            for other in child.orelse:
                yield from _import_nodes(other, in_function)
        else:
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            yield from _import_nodes(child, inside)


def _targets(node: ast.Import | ast.ImportFrom, modules: set[str]) -> set[str]:
    """The rag_core modules an import names (``from pkg import sub`` names the submodule ``pkg.sub``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
    found = set()
    for name in names:
        while name and name not in modules:  # ``import rag_core.index.index as c`` or an attribute of a module
            name = name.rpartition(".")[0]
        if name:
            found.add(name)
    return found


def _rag_core_imports() -> dict[str, list[tuple[ast.Import | ast.ImportFrom, bool]]]:
    paths = {_module_name(path): path for path in (ROOT / "rag_core").rglob("*.py")}
    return {name: list(_import_nodes(ast.parse(path.read_text(encoding="utf-8")))) for name, path in paths.items()}


def _is_wiring(module: str) -> bool:
    return any(module == wiring or module.startswith(wiring + ".") for wiring in WIRING)


def test_the_engine_never_imports_the_wiring():
    """``rag_core.services`` sits above the engine: engine modules take the LLM, an index opener or a results store
    as arguments, at module level and inside functions alike."""
    imports = _rag_core_imports()
    modules = set(imports)
    bad = sorted(f"{module} (line {node.lineno})" for module, nodes in imports.items() if not _is_wiring(module)
                 for node, _ in nodes if "rag_core.services" in _targets(node, modules))
    assert not bad, f"engine modules import rag_core.services: {bad}"


def test_rag_core_has_no_import_circle():
    """Counting imports inside functions too: a circle hidden by a function-level import is still a circle."""
    imports = _rag_core_imports()
    modules = set(imports)
    graph = {module: {target for node, _ in nodes for target in _targets(node, modules)} - {module}
             for module, nodes in imports.items()}
    try:
        tuple(TopologicalSorter(graph).static_order())
    except CycleError as e:
        raise AssertionError(f"import circle in rag_core: {' -> '.join(e.args[1])}") from None


def test_function_level_imports_in_the_engine_do_not_grow():
    imports = _rag_core_imports()
    lazy = sorted(f"{module}:{node.lineno} {ast.unparse(node)}" for module, nodes in imports.items()
                  if not _is_wiring(module) for node, in_function in nodes if in_function)
    assert len(lazy) <= ENGINE_FUNCTION_IMPORTS_CEILING, (
        f"{len(lazy)} function-level imports in the engine (ceiling {ENGINE_FUNCTION_IMPORTS_CEILING}); import at "
        "module level unless it keeps a heavy package from loading at import time:\n" + "\n".join(lazy))
    assert not [line for line in lazy if " rag_core" in line], "engine modules import rag_core inside functions"


def test_no_pages_folder_beside_the_app():
    """A ``pages/`` folder beside ``app.py`` puts a fresh server in Streamlit's older folder mode, whose first load
    lists the folder's file names as navigation (issue 35 item 10): the pages live in ``views/``."""
    assert not (ROOT / "pages").exists()
    assert sorted(p.name for p in (ROOT / "views").glob("*.py")) == [
        "agent_playground.py", "chunk_explorer.py", "documents.py", "evaluate.py", "home.py", "retrieval_lab.py"]


UI_PAGES = ("agent", "documents", "evaluate", "explorer", "home", "retrieval")


def _ui_packages_named(node: ast.Import | ast.ImportFrom) -> set[str]:
    """The ``ui`` subpackages an import names:
    ``import ui.agent.x``, ``from ui.agent import x``, ``from ui import agent``."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif node.module == "ui":
        names = [f"ui.{alias.name}" for alias in node.names]
    else:
        names = [node.module or ""]
    return {parts[1] for parts in (name.split(".") for name in names) if parts[0] == "ui" and len(parts) > 1}


def test_each_ui_page_package_keeps_to_its_page():
    """``ui/<page>/`` holds one page's renderers: it uses the helpers shared at ``ui/``'s top, never another page's
    package (a renderer two pages need moves up to the top)."""
    assert sorted(p.parent.name for p in (ROOT / "ui").glob("*/__init__.py")) == list(UI_PAGES)
    for page in UI_PAGES:
        for path in (ROOT / "ui" / page).rglob("*.py"):
            nodes = [node for node, _ in _import_nodes(ast.parse(path.read_text(encoding="utf-8")))]
            others = {name for node in nodes for name in _ui_packages_named(node)} & set(UI_PAGES) - {page}
            assert not others, f"{path.relative_to(ROOT)} imports the page packages {sorted(others)}"
