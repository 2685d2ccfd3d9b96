"""The audit's static scan on generated trees: a 1,000-file Python tree (Ruff) and a 500-file Java
tree (Semgrep with our rule pack), through `Scanner` exactly as `/audit` runs it — and, on the same
Python tree in the same run, the old built-in AST scanner (four rules, Python only) that Ruff
replaced, as the baseline. A private copy of that scanner lives in this script only; it is not part
of the product.

Prints per scan: files, findings, wall time, CPU time of this process and of its child processes
(the analyzers run as subprocesses: `os.times()` children fields), files/s, and the ratio to the
baseline. Run: .venv/bin/python bench/scan.py [--python-files N] [--java-files N]"""

from __future__ import annotations

import argparse
import ast
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import environment_line, make_repo, table, temp_dir  # noqa: E402

# --- generated trees ----------------------------------------------------------------------------

PY_CLEAN = '''

def helper_{n}(values, factor=2):
    """Scale and sum the values."""
    total = 0
    for v in values:
        total += v * factor
    return total


class Model{n}:
    def __init__(self, name):
        self.name = name

    def describe(self):
        return f"{{self.name}}: {{helper_{n}([1, 2, 3])}}"
'''
PY_RISKY = [
    "\n\ndef load_{n}(path):\n    try:\n        return open(path).read()\n    except Exception:\n        pass\n",
    "\n\ndef add_{n}(item, bucket=[]):\n    bucket.append(item)\n    return bucket\n",
    "\n\ndef run_{n}(cmd):\n    import subprocess\n    return subprocess.run(cmd, shell=True)\n",
    "\n\ndef calc_{n}(expr):\n    return eval(expr)\n",
    "\n\ndef digest_{n}(data):\n    import hashlib\n    return hashlib.md5(data).hexdigest()\n",
]
JAVA_CLEAN = """
    public int total{n}(int[] values) {{
        int sum = 0;
        for (int v : values) {{
            sum += v;
        }}
        return sum;
    }}
"""
JAVA_RISKY = [
    '\n    byte[] digest{n}(byte[] d) throws Exception {{\n'
    '        return MessageDigest.getInstance("MD5").digest(d);\n    }}\n',
    "\n    int roll{n}() {{\n        return new Random().nextInt(6);\n    }}\n",
    '\n    boolean admin{n}(String role) {{\n        return role.equals("admin");\n    }}\n',
    "\n    int first{n}(String path) throws IOException {{\n        FileInputStream in = new FileInputStream(path);\n"
    "        return in.read();\n    }}\n",
    "\n    String value{n}(Optional<String> v) {{\n        return v.get();\n    }}\n",
]


def python_tree(repo: Path, files: int, rng: random.Random) -> None:
    for i in range(files):
        body = "import os\n" + PY_CLEAN.format(n=i)
        for snippet in rng.sample(PY_RISKY, rng.choice((0, 0, 1, 2))):
            body += snippet.format(n=i)
        path = repo / f"pkg{i % 20:02d}" / f"mod_{i:04d}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")


def java_tree(repo: Path, files: int, rng: random.Random) -> None:
    for i in range(files):
        body = ("package app.p%02d;\n\nimport java.io.FileInputStream;\nimport java.io.IOException;\n"
                "import java.security.MessageDigest;\nimport java.util.Optional;\nimport java.util.Random;\n\n"
                "public class C%04d {\n    private final String name;\n\n    public C%04d(String name) {\n"
                "        this.name = java.util.Objects.requireNonNull(name, \"name\");\n    }\n" % (i % 20, i, i))
        body += JAVA_CLEAN.format(n=i)
        for snippet in rng.sample(JAVA_RISKY, rng.choice((0, 0, 1, 2))):
            body += snippet.format(n=i)
        path = repo / "src" / "main" / "java" / "app" / f"p{i % 20:02d}" / f"C{i:04d}.java"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "}\n", encoding="utf-8")


# --- the old built-in scanner (baseline only; removed from the product) -------------------------

def _broad(handler: ast.ExceptHandler) -> bool:
    t = handler.type
    return t is None or (isinstance(t, ast.Name) and t.id in ("Exception", "BaseException"))


def _silent(body: list[ast.stmt]) -> bool:
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and s.value.value is Ellipsis) for s in body)


def _old_rule_hits(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and _broad(node) and _silent(node.body):
            yield node.lineno, "APJ-PY001"
        elif isinstance(node, ast.Call):
            fn = node.func
            if isinstance(fn, ast.Name) and fn.id in ("eval", "exec"):
                yield node.lineno, "APJ-PY002"
            if any(k.arg == "shell" and isinstance(k.value, ast.Constant) and k.value.value is True
                   for k in node.keywords):
                yield node.lineno, "APJ-PY004"
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            defaults = list(node.args.defaults) + [d for d in node.args.kw_defaults if d is not None]
            for d in defaults:
                if isinstance(d, (ast.List, ast.Dict, ast.Set)):
                    yield d.lineno, "APJ-PY003"


def old_scan(repo: Path) -> tuple[int, int]:
    files = hits = 0
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".py"):
                files += 1
                try:
                    tree = ast.parse((Path(dirpath) / name).read_bytes())
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
                hits += len(set(_old_rule_hits(tree)))
    return files, hits


# --- measuring ----------------------------------------------------------------------------------

def measure(fn: Callable[[], tuple[int, int]]) -> dict[str, float]:
    t0, c0 = time.perf_counter(), os.times()
    files, findings = fn()
    wall, c1 = time.perf_counter() - t0, os.times()
    own = (c1.user - c0.user) + (c1.system - c0.system)
    children = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
    return {"files": files, "findings": findings, "wall": wall, "own": own, "children": children}


def new_scan(repo: Path, only: str) -> Callable[[], tuple[int, int]]:
    from autopatch_tui.core.repair.scanner import Scanner

    def run() -> tuple[int, int]:
        report = Scanner(repo).scan()
        if report.errors or only not in report.analyzers:
            raise SystemExit(f"the {only} scan did not run: {report.errors}")
        return report.files, len(report.findings)

    return run


def row(name: str, m: dict[str, float], base: dict[str, float] | None) -> list[object]:
    cpu = m["own"] + m["children"]
    base_cpu = 0.0 if base is None else base["own"] + base["children"]
    ratio = "—" if base is None else f"{m['wall'] / base['wall']:.1f}x wall, {cpu / base_cpu:.1f}x CPU"
    return [name, int(m["files"]), int(m["findings"]), f"{m['wall']:.2f} s", f"{m['own']:.2f} s",
            f"{m['children']:.2f} s", f"{m['files'] / m['wall']:.0f}", ratio]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-files", type=int, default=1000)
    parser.add_argument("--java-files", type=int, default=500)
    args = parser.parse_args()
    from autopatch_tui.core.repair import scanner as scanner_module

    scanner_module.MAX_FINDINGS = 10**9  # count every finding, not the first 200 the audit lists
    rng = random.Random(13)
    with temp_dir("apj-bench-scan-") as tmp:
        print(environment_line(tmp))
        py, java = make_repo(tmp, "python"), make_repo(tmp, "java")
        python_tree(py, args.python_files, rng)
        java_tree(java, args.java_files, rng)
        base = measure(lambda: old_scan(py))
        ruff = measure(new_scan(py, "ruff"))
        semgrep = measure(new_scan(java, "semgrep"))
        table(["scan", "files", "findings", "wall", "CPU (this process)", "CPU (analyzers)", "files/s",
               "vs old scanner"],
              [row("old built-in AST scanner, Python tree", base, None),
               row("Ruff via Scanner, Python tree", ruff, base),
               row("Semgrep via Scanner, Java tree", semgrep, base)])
        print("findings of the Ruff scan include rules the old scanner did not have (S324, S602/S604, BLE001, …); "
              "the old scanner cannot scan Java at all.")


if __name__ == "__main__":
    main()
