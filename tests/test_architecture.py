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
