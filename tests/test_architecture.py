"""`autopatch_tui.core` is UI-free: nothing under it imports Textual (the CLI and scripts use it without
loading the UI toolkit)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import autopatch_tui

CORE = Path(autopatch_tui.__file__).resolve().parent / "core"


def _is_textual(module: str | None) -> bool:
    return module is not None and (module == "textual" or module.startswith("textual."))


def textual_imports(source: str, filename: str = "<src>") -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            found += [f"{filename}:{node.lineno} import {a.name}" for a in node.names if _is_textual(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_textual(node.module):
            found.append(f"{filename}:{node.lineno} from {node.module} import ...")
        elif (isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute))
              and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) in ("import_module", "__import__")
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and _is_textual(node.args[0].value)):
            found.append(f"{filename}:{node.lineno} dynamic import {node.args[0].value}")
    return found


def test_the_checker_catches_every_import_form() -> None:
    bad = ("import textual\nimport os, textual.widgets as w\nfrom textual import on\n"
           "from textual.app import App\nimportlib.import_module('textual.screen')\n"
           "def f():\n    import textual.containers\n")
    assert len(textual_imports(bad)) == 6
    ok = "import textualize\nfrom textual_helpers import x\nfrom .textual import y\nimport rich.text\n"
    assert textual_imports(ok) == []


def test_core_sources_do_not_import_textual() -> None:
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 10 and CORE / "manager.py" in files
    offenders = [hit for f in files for hit in textual_imports(f.read_text("utf-8"), str(f.relative_to(CORE)))]
    assert offenders == []


def test_importing_the_core_does_not_load_textual() -> None:
    code = ("import autopatch_tui.core.manager, sys; "
            "assert not any(m == 'textual' or m.startswith('textual.') for m in sys.modules), "
            "sorted(m for m in sys.modules if m.startswith('textual'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=str(CORE.parent.parent))
    assert proc.returncode == 0, proc.stderr


def test_the_memory_cli_does_not_load_textual() -> None:
    code = ("import sys; from autopatch_tui.cli.main import build_parser; build_parser(); "
            "assert not any(m == 'textual' or m.startswith('textual.') for m in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=str(CORE.parent.parent))
    assert proc.returncode == 0, proc.stderr


# --- one door for a request's context: chat and the repair workflows never import each other ---------

def imported_modules(source: str, package: str) -> set[str]:
    """Every module a source imports, at any depth (functions, TYPE_CHECKING blocks) — for
    `from a.b import c` both `a.b` and `a.b.c` (c may be a module); relative imports resolved."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)):
            found.add(str(node.args[0].value))
    return found


def _imports_of(rel: str) -> set[str]:
    path = CORE / rel
    package = "autopatch_tui.core." + ".".join(Path(rel).parent.parts)
    return imported_modules(path.read_text("utf-8"), package)


def _reaches(modules: set[str], target: str) -> list[str]:
    return sorted(m for m in modules if m == target or m.startswith(target + "."))


def test_the_import_checker_sees_every_form() -> None:
    src = ("import autopatch_tui.core.repair.workflows\nfrom autopatch_tui.core.repair import workflows\n"
           "def f():\n    from ..repair.workflows import RepairService\n"
           "if TYPE_CHECKING:\n    from autopatch_tui.core.repair.workflows import X\n"
           "importlib.import_module('autopatch_tui.core.repair.workflows')\n")
    found = imported_modules(src, "autopatch_tui.core.agent")
    assert "autopatch_tui.core.repair.workflows.RepairService" in found
    assert len(_reaches(found, "autopatch_tui.core.repair.workflows")) == 3


def test_chat_and_the_repair_workflows_do_not_import_each_other() -> None:
    assert _reaches(_imports_of("agent/chat.py"), "autopatch_tui.core.repair") == []
    assert _reaches(_imports_of("repair/workflows.py"), "autopatch_tui.core.agent.chat") == []
    # the agent package is below the repair package: nothing in it reaches up
    agent = [hit for f in sorted((CORE / "agent").glob("*.py"))
             for hit in _reaches(_imports_of(f"agent/{f.name}"), "autopatch_tui.core.repair")]
    assert agent == []


def test_repair_builds_its_prompts_through_the_door_not_through_chat_privates() -> None:
    source = (CORE / "repair" / "workflows.py").read_text("utf-8")
    tree = ast.parse(source)
    private = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                      and n.attr in ("_model", "_profile", "_prompt", "respond", "chat")})
    assert private == []
    assert "autopatch_tui.core.agent.request_context.open_request" in _imports_of("repair/workflows.py")
    assert "autopatch_tui.core.agent.request_context.open_request" in _imports_of("agent/chat.py")
