"""What the repository's root manifests say, for the still-true audit (`claims.check`).

Read only at the repository root, through `confine` (never through a link that leaves the
repository), regular files only, at most MAX_MANIFEST_BYTES each; a file that cannot be read or
parsed says nothing (its facts are None: a claim that needs them is not checked). Parsed with the
standard library: `tomllib` (pyproject.toml), `json` (package.json), `xml.etree` (pom.xml: a document
with a DTD or an entity declaration is refused outright, as defusedxml does, so no entity can expand),
and line patterns for go.mod and build.gradle(.kts).

`repo_facts(repo)` is cached per repository by the watched names at the root and each manifest's
stat (`_signature`), so the Memory Map can ask on every turn for the price of one `scandir` and a
few `stat` calls."""

from __future__ import annotations

import json
import os
import re
import stat
import threading
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.confine import ConfinementError, confine, kind_of, read_confined
from autopatch_tui.core.toml_guard import has_deep_key

MAX_MANIFEST_BYTES = 512 * 1024

# lock files (and build files) by the tool they belong to, one group per ecosystem: a claim names
# one tool of a group, and another tool's file is evidence against it
MANAGERS: dict[str, dict[str, tuple[str, ...]]] = {
    "javascript package manager": {"pnpm": ("pnpm-lock.yaml",), "yarn": ("yarn.lock",),
                                   "npm": ("package-lock.json", "npm-shrinkwrap.json"),
                                   "bun": ("bun.lockb", "bun.lock")},
    "python package manager": {"poetry": ("poetry.lock",), "uv": ("uv.lock",), "pipenv": ("Pipfile.lock",),
                               "pdm": ("pdm.lock",)},
    "java build tool": {"maven": ("pom.xml",), "gradle": ("build.gradle", "build.gradle.kts")},
}
MANIFESTS = ("pyproject.toml", "package.json", "pom.xml", "go.mod", "build.gradle", "build.gradle.kts")
# tool configuration files at the root: a tool configured there is in use even when no manifest lists it
CONFIG_FILES: dict[str, tuple[str, ...]] = {
    "pytest": ("pytest.ini", "conftest.py"), "flake8": (".flake8",), "ruff": ("ruff.toml", ".ruff.toml"),
    "pylint": (".pylintrc", "pylintrc"), "mypy": ("mypy.ini", ".mypy.ini"), "pyright": ("pyrightconfig.json",),
    "jest": ("jest.config.js", "jest.config.ts", "jest.config.mjs", "jest.config.cjs", "jest.config.json"),
    "vitest": ("vitest.config.ts", "vitest.config.js", "vitest.config.mts", "vitest.config.mjs"),
    "mocha": (".mocharc.js", ".mocharc.json", ".mocharc.yml", ".mocharc.yaml", ".mocharc.cjs"),
    "eslint": (".eslintrc", ".eslintrc.js", ".eslintrc.cjs", ".eslintrc.json", ".eslintrc.yml", ".eslintrc.yaml",
               "eslint.config.js", "eslint.config.mjs", "eslint.config.cjs", "eslint.config.ts"),
    "biome": ("biome.json", "biome.jsonc"),
    "prettier": (".prettierrc", ".prettierrc.json", ".prettierrc.js", ".prettierrc.yml", ".prettierrc.yaml",
                 "prettier.config.js", ".prettierrc.cjs", "prettier.config.cjs", "prettier.config.mjs"),
}
WATCHED = tuple(dict.fromkeys([*MANIFESTS, *(f for g in MANAGERS.values() for fs in g.values() for f in fs),
                               *(f for fs in CONFIG_FILES.values() for f in fs)]))
_WATCHED_SET = frozenset(WATCHED)


@dataclass(frozen=True)
class RepoFacts:
    present: frozenset[str] = frozenset()  # the WATCHED names that are regular files at the root
    python_deps: frozenset[str] | None = None  # normalized names; None: no readable pyproject.toml
    python_tools: frozenset[str] = frozenset()  # `[tool.X]` tables of pyproject.toml
    js_deps: frozenset[str] | None = None  # None: no readable package.json
    js_keys: frozenset[str] = frozenset()  # package.json's top-level keys ("jest", "eslintConfig", …)
    js_package_manager: str | None = None  # package.json `packageManager` ("pnpm@9.1.0" -> "pnpm")
    java_deps: frozenset[str] | None = None  # artifactIds (pom.xml) / artifact names (build.gradle)
    requires_python: str | None = None
    node_engine: str | None = None
    java_release: str | None = None  # maven.compiler.release / source, java.version, Gradle's toolchain
    java_release_from: str = ""
    go_version: str | None = None


def _norm_py(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


_REQ_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _read(repo: Path, name: str) -> bytes | None:
    try:
        return read_confined(repo, name, MAX_MANIFEST_BYTES)[1]
    except (ConfinementError, OSError):
        return None


def _pyproject(data: bytes) -> dict | None:
    try:
        text = data.decode("utf-8")
        if has_deep_key(text):  # tomllib: quadratic in a key's parts (core.toml_guard)
            return None
        doc = tomllib.loads(text)
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):  # tomllib recurses per nesting level
        return None
    return doc if isinstance(doc, dict) else None


def _py_facts(doc: dict) -> tuple[frozenset[str], frozenset[str], str | None]:
    names: set[str] = set()
    project = doc.get("project") if isinstance(doc.get("project"), dict) else {}
    reqs: list[object] = list(project.get("dependencies") or [])
    for group in (project.get("optional-dependencies") or {}).values():
        reqs += list(group) if isinstance(group, list) else []
    for group in (doc.get("dependency-groups") or {}).values() if isinstance(doc.get("dependency-groups"), dict) else ():
        reqs += list(group) if isinstance(group, list) else []
    for req in reqs:
        m = _REQ_NAME.match(req) if isinstance(req, str) else None
        if m:
            names.add(_norm_py(m.group(1)))
    tool = doc.get("tool") if isinstance(doc.get("tool"), dict) else {}
    poetry = tool.get("poetry") if isinstance(tool.get("poetry"), dict) else {}
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    groups = poetry.get("group")
    if isinstance(groups, dict):
        tables += [g.get("dependencies") for g in groups.values() if isinstance(g, dict)]
    uv = tool.get("uv") if isinstance(tool.get("uv"), dict) else {}
    for req in uv.get("dev-dependencies") or []:
        m = _REQ_NAME.match(req) if isinstance(req, str) else None
        if m:
            names.add(_norm_py(m.group(1)))
    for table in tables:
        if isinstance(table, dict):
            names.update(_norm_py(k) for k in table if isinstance(k, str))
    requires = project.get("requires-python")
    if not isinstance(requires, str) and isinstance(poetry.get("dependencies"), dict):
        requires = poetry["dependencies"].get("python")
    names.discard("python")
    return frozenset(names), frozenset(k.lower() for k in tool), requires if isinstance(requires, str) else None


def _package_json(data: bytes) -> dict | None:
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _js_facts(doc: dict) -> tuple[frozenset[str], frozenset[str], str | None, str | None]:
    deps: set[str] = set()
    for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        table = doc.get(key)
        if isinstance(table, dict):
            deps.update(k.lower() for k in table if isinstance(k, str))
    engines = doc.get("engines")
    node = engines.get("node") if isinstance(engines, dict) and isinstance(engines.get("node"), str) else None
    manager = doc.get("packageManager")
    manager = manager.split("@", 1)[0].strip().lower() if isinstance(manager, str) and manager.strip() else None
    return frozenset(deps), frozenset(k for k in doc if isinstance(k, str)), node, manager


_DTD = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)


def _pom(data: bytes) -> tuple[frozenset[str], str | None, str] | None:
    if _DTD.search(data):  # no DTD, no entity: nothing can expand or reach outside (defusedxml's rule)
        return None
    try:
        root = ET.fromstring(data)
    except (ET.ParseError, ValueError):
        return None
    ns = {"m": root.tag[1:].split("}")[0]} if root.tag.startswith("{") else {}
    p = "m:" if ns else ""
    deps = frozenset((e.text or "").strip().lower() for e in root.iterfind(f".//{p}dependency/{p}artifactId", ns)
                     if (e.text or "").strip())
    deps |= frozenset((e.text or "").strip().lower() for e in root.iterfind(f".//{p}plugin/{p}artifactId", ns)
                      if (e.text or "").strip())
    release, source = None, ""
    for prop in ("maven.compiler.release", "maven.compiler.source", "java.version"):
        e = root.find(f"{p}properties/{p}{prop}", ns)
        if e is not None and (e.text or "").strip():
            release, source = (e.text or "").strip(), f"pom.xml {prop}"
            break
    if release is None:
        for tag in ("release", "source"):
            e = root.find(f".//{p}plugin/{p}configuration/{p}{tag}", ns)
            if e is not None and re.fullmatch(r"(?:1\.)?\d{1,2}", (e.text or "").strip()):
                release, source = (e.text or "").strip(), f"pom.xml compiler {tag}"
                break
    return deps, release, source


_GRADLE_DEP = re.compile(r"""["']([\w.-]+):([\w.-]+)(?::[^"']*)?["']""")
_GRADLE_JAVA = re.compile(r"(?:languageVersion\s*(?:=|\.set\()\s*JavaLanguageVersion\.of\(\s*(\d{1,2})\s*\)"
                          r"|sourceCompatibility\s*=\s*(?:JavaVersion\.VERSION_(?:1_)?(\d{1,2})|['\"]?(?:1\.)?(\d{1,2})['\"]?))")
_GO_DIRECTIVE = re.compile(rb"(?m)^go\s+(\d+\.\d+(?:\.\d+)?)\s*$")


def _gradle(text: str) -> tuple[frozenset[str], str | None]:
    deps = frozenset(m.group(2).lower() for m in _GRADLE_DEP.finditer(text))
    m = _GRADLE_JAVA.search(text)
    return deps, next((g for g in m.groups() if g), None) if m else None


def _signature(repo: Path) -> tuple:
    """What a change of the facts must change: which watched names the root holds (one `scandir`,
    no `stat` per entry: a lock or config file created, removed or renamed) and each manifest's stat
    (edited in place). A folder's mtime alone would miss two changes within one clock tick."""
    try:
        with os.scandir(repo) as it:
            names = tuple(sorted((e.name, e.is_symlink()) for e in it if e.name in _WATCHED_SET))
    except OSError:
        names = ()
    out: list[tuple] = [names]
    for name in MANIFESTS:
        try:
            st = os.stat(repo / name, follow_symlinks=False)
        except (OSError, ValueError):
            continue
        out.append((name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(out)


def _listing(repo: Path) -> tuple:
    """(name, mode) of the WATCHED names at the root (lstat: a link is judged by `_present`)."""
    out = []
    for name in WATCHED:
        try:
            out.append((name, os.stat(repo / name, follow_symlinks=False).st_mode))
        except (OSError, ValueError):
            continue
    return tuple(out)


def _present(repo: Path) -> frozenset[str]:
    names = set()
    for name, mode in _listing(repo):
        if stat.S_ISREG(mode):
            names.add(name)
        elif stat.S_ISLNK(mode):  # a link counts only when it stays inside and ends at a file
            try:
                if kind_of(confine(repo, name)) == "file":
                    names.add(name)
            except ConfinementError:
                pass
    return frozenset(names)


def read_facts(repo: Path) -> RepoFacts:
    present = _present(repo)
    kw: dict[str, object] = {"present": present}
    if "pyproject.toml" in present and (data := _read(repo, "pyproject.toml")) is not None:
        doc = _pyproject(data)
        if doc is not None:
            kw["python_deps"], kw["python_tools"], kw["requires_python"] = _py_facts(doc)
    if "package.json" in present and (data := _read(repo, "package.json")) is not None:
        doc = _package_json(data)
        if doc is not None:
            kw["js_deps"], kw["js_keys"], kw["node_engine"], kw["js_package_manager"] = _js_facts(doc)
    java: set[str] | None = None
    if "pom.xml" in present and (data := _read(repo, "pom.xml")) is not None:
        pom = _pom(data)
        if pom is not None:
            java = set(pom[0])
            if pom[1]:
                kw["java_release"], kw["java_release_from"] = pom[1], pom[2]
    for name in ("build.gradle", "build.gradle.kts"):
        if name in present and (data := _read(repo, name)) is not None:
            deps, release = _gradle(data.decode("utf-8", "replace"))
            java = (java or set()) | deps
            if release and "java_release" not in kw:
                kw["java_release"], kw["java_release_from"] = release, f"{name} Java version"
    if java is not None:
        kw["java_deps"] = frozenset(java)
    if "go.mod" in present and (data := _read(repo, "go.mod")) is not None:
        m = _GO_DIRECTIVE.search(data)
        if m:
            kw["go_version"] = m.group(1).decode()
    return RepoFacts(**kw)  # type: ignore[arg-type]


_cache: dict[str, tuple[tuple, RepoFacts]] = {}
_lock = threading.Lock()
MAX_CACHED_REPOS = 8


def repo_facts(repo: Path) -> RepoFacts:
    """The facts of `repo`, re-read only when a watched file's stat changed."""
    key = str(repo)
    sig = _signature(repo)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0] == sig:
            return hit[1]
    facts = read_facts(repo)
    with _lock:
        if len(_cache) >= MAX_CACHED_REPOS and key not in _cache:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (sig, facts)
    return facts


__all__ = ["CONFIG_FILES", "MANAGERS", "RepoFacts", "read_facts", "repo_facts"]
