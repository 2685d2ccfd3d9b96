"""Still true? (contracts §8 `stale_claims`, §10): the claims of a decision or preference that the
repository can confirm or contradict deterministically, and the ones it contradicts.

A claim is read only where its words are unambiguous; anything else is not checked (nothing is
guessed). In one item's subject, statement and content:

- **package manager / build tool** (`manifests.MANAGERS`): the one tool of a group the text affirms
  (a tool named after "not", "never", "instead of", "rather than", "over", "from", "avoid",
  "replace", "drop", "stop", "no longer" is not affirmed; two affirmed tools of one group: not
  checked). Contradicted when none of its files is at the root and another tool's is ("says pnpm;
  package-lock.json exists, no pnpm-lock.yaml"), or when package.json's `packageManager` names
  another JavaScript package manager.
- **test runner, linter, formatter, type checker** (`TOOLS`): the one tool of a category the text
  affirms. Contradicted when the ecosystem's manifest was read, the tool is neither declared
  (dependencies, `[tool.X]`, a package.json key, its config file at the root) and another tool of
  the category is ("says jest; package.json declares vitest, not jest").
- **language or runtime version**: "Python 3.N" against `requires-python` (a claimed version the
  specifier excludes); "Node N" against `engines.node` (major versions; simple ranges only);
  "Java N" / "JDK N" against Maven's compiler release/source or `java.version` or Gradle's Java
  version (must be equal); "Go 1.N" against go.mod's `go` directive (a version below it).
- **path**: a repository-relative path the text names (a `dir/file.ext` or `dir/` with a slash,
  not a URL, a glob, a domain or a scoped package), in a sentence without a negation, removal or
  creation word; contradicted when it exists neither from the root nor from any applies-to path."""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.claims.manifests import CONFIG_FILES, MANAGERS, RepoFacts

# category -> ecosystem -> tool -> the names that declare it (dependency names, lower case)
TOOLS: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {
    "test runner": {
        "python": {"pytest": ("pytest",), "nose2": ("nose2",), "ward": ("ward",)},
        "javascript": {"jest": ("jest", "@jest/core", "ts-jest"), "vitest": ("vitest",), "mocha": ("mocha",),
                       "ava": ("ava",), "jasmine": ("jasmine", "jasmine-core")},
        "java": {"junit": ("junit", "junit-jupiter", "junit-jupiter-api", "junit-jupiter-engine"),
                 "testng": ("testng",)},
    },
    "linter": {
        "python": {"ruff": ("ruff",), "flake8": ("flake8",), "pylint": ("pylint",)},
        "javascript": {"eslint": ("eslint",), "biome": ("@biomejs/biome",), "tslint": ("tslint",),
                       "oxlint": ("oxlint",)},
    },
    "formatter": {
        "python": {"black": ("black",), "yapf": ("yapf",), "autopep8": ("autopep8",)},
        "javascript": {"prettier": ("prettier",), "dprint": ("dprint",)},
    },
    "type checker": {
        "python": {"mypy": ("mypy",), "pyright": ("pyright",), "pyre": ("pyre-check",)},
    },
}
_PACKAGE_JSON_KEYS = {"jest": "jest", "eslint": "eslintConfig", "prettier": "prettier", "mocha": "mocha", "ava": "ava"}
_MANIFEST_OF = {"python": "pyproject.toml", "javascript": "package.json", "java": "pom.xml / build.gradle"}

# a tool or version named right after one of these (within its last four words) is not affirmed
_NEG_WORDS = frozenset({"not", "never", "no", "over", "from", "avoid", "avoiding", "without", "drop", "dropped",
                        "dropping", "stop", "stopped", "ban", "banned", "instead", "rather", "nor"})
_NEG_STEMS = ("replac", "forbid", "remov", "deprecat")
_NEG_PHRASES = ("no longer", "away from", "move off", "moved off", "moving off")
_NEG_CJK = ("不要", "别用", "不用", "弃用", "替换", "禁止")
_WORD = re.compile(r"[\w'’]+")


def _negated(window: str) -> bool:
    words = _WORD.findall(window.lower())[-4:]
    if any(w in _NEG_WORDS or w.endswith(("n't", "n’t")) or w.startswith(_NEG_STEMS) for w in words):
        return True
    joined = " ".join(words)
    return any(p in joined for p in _NEG_PHRASES) or any(c in window for c in _NEG_CJK)


_TOOL_NAMES = sorted({t for g in MANAGERS.values() for t in g} | {t for c in TOOLS.values() for e in c.values()
                                                                  for t in e}, key=len, reverse=True)
_TOOL_RE = re.compile(r"(?i)(?<![\w@/.-])(" + "|".join(map(re.escape, _TOOL_NAMES)) + r")(?![\w/-]|\.\w)")
_TOOL_HINT = re.compile("|".join(map(re.escape, _TOOL_NAMES)))  # on lowered text: the cheap first look
_SENTENCE = re.compile(r"(?:[^.;!?\n。！？；]|[.;!?](?=[^\s.;!?]))+")  # a dot inside a word (a path) stays

_PY_VERSION = re.compile(r"(?i)\bpython\s*(?:version\s*)?(?:>=|≥|at least\s+)?\s*(3\.\d{1,2})(\+)?(?!\d|\.\d)")
_NODE_VERSION = re.compile(r"(?i)\bnode(?:\.?js)?\s*(?:version\s*)?(?:>=|≥|at least\s+)?\s*v?(\d{1,2})"
                           r"(?:\.x|\.\d+(?:\.\d+)?)?(\+)?(?!\d|\.\d)")
_JAVA_VERSION = re.compile(r"(?i)\b(?:java|jdk|openjdk)\s*(?:version\s*)?(?:1\.)?(\d{1,2})(?!\d|\.\d)")
_GO_VERSION = re.compile(r"(?i)\b(?:go|golang)\s*(?:version\s*)?(1\.\d{1,2})(?:\.\d+)?(?!\d|\.\d)")

_VERSION_HINT = re.compile(r"python|node|java|jdk|\bgo\b|golang")  # on lowered text
_PATH = re.compile(r"(?<![\w/.@:~$%{-])((?:\./)?[A-Za-z0-9_][\w.-]*(?:/[\w.-]+)*/(?:[\w-][\w.-]*\.[A-Za-z0-9]{1,8})?)"
                   r"(?![\w/*?{])")
_DOMAIN = re.compile(r"(?i)^[\w-]+\.(?:com|org|net|io|dev|co|ai|app|gov|edu|uk|de|cn|sh|me|info|xyz|cloud)$")
_PATH_SKIP = re.compile(r"(?i)\b(?:not|never|n't|no|don't|remov\w*|delet\w*|renam\w*|mov\w*|creat\w*|add\w*"
                        r"|new|generat\w*|will|would|should\s+be\s+created|deprecat\w*|old|former|legacy|was|were"
                        r"|instead|rather|if|when|unless|e\.g|for example|such as|like)\b|不要|删除|新建|如果")


@dataclass(frozen=True)
class StaleClaim:
    id: str
    claim: str
    evidence: str

    def as_json(self) -> dict[str, str]:
        return {"id": self.id, "claim": self.claim, "evidence": self.evidence}


def _mentions(text: str) -> dict[str, bool]:
    """Each tool the text names -> whether some mention of it is affirmed: not right after a
    negating word (only the words since the previous tool count: "from npm to yarn" affirms yarn)."""
    out: dict[str, bool] = {}
    if not _TOOL_HINT.search(text.lower()) or not _TOOL_RE.search(text):
        return out
    for sentence in _SENTENCE.finditer(text):
        s = sentence.group(0)
        before = 0
        for m in _TOOL_RE.finditer(s):
            name = m.group(1).lower()
            out[name] = out.get(name, False) or not _negated(s[max(before, m.start() - 40):m.start()])
            before = m.end()
    return out


def _affirmed(mentioned: dict[str, bool], names: Iterable[str]) -> list[str]:
    return [n for n in names if mentioned.get(n)]


# --------------------------------------------------------------------------- managers and tools


def _manager_claims(mentioned: dict[str, bool], facts: RepoFacts) -> Iterator[tuple[str, str]]:
    for group, tools in MANAGERS.items():
        affirmed = _affirmed(mentioned, tools)
        if len(affirmed) != 1:
            continue
        tool = affirmed[0]
        if group == "javascript package manager" and facts.js_package_manager in tools \
                and facts.js_package_manager != tool:
            yield (f"{tool} ({group})", f"package.json says \"packageManager\": {facts.js_package_manager}")
            continue
        if any(f in facts.present for f in tools[tool]):
            continue
        others = [f for other, files in tools.items() if other != tool for f in files if f in facts.present]
        if others:
            exist = f"{', '.join(others)} exist{'s' if len(others) == 1 else ''}"
            yield (f"{tool} ({group})", f"{exist}, no {' or '.join(tools[tool])}")


def _declared(tool: str, eco: str, names: tuple[str, ...], facts: RepoFacts) -> bool | None:
    """Is `tool` declared in `eco`'s manifests? None: the manifest was not read (not checkable)."""
    deps = {"python": facts.python_deps, "javascript": facts.js_deps, "java": facts.java_deps}[eco]
    if deps is None:
        return None
    if any(n in deps for n in names) or any(f in facts.present for f in CONFIG_FILES.get(tool, ())):
        return True
    if eco == "python" and (tool in facts.python_tools or any(d.startswith(f"{tool}-") for d in deps)):
        return True  # `[tool.ruff]`, or a plugin such as pytest-cov
    return eco == "javascript" and _PACKAGE_JSON_KEYS.get(tool) in facts.js_keys


def _tool_claims(mentioned: dict[str, bool], facts: RepoFacts) -> Iterator[tuple[str, str]]:
    for category, ecos in TOOLS.items():
        for eco, tools in ecos.items():
            affirmed = _affirmed(mentioned, tools)
            if len(affirmed) != 1:
                continue
            tool = affirmed[0]
            if _declared(tool, eco, tools[tool], facts) is not False:
                continue
            others = [o for o in tools if o != tool and _declared(o, eco, tools[o], facts)]
            if others:
                yield (f"{tool} ({eco} {category})",
                       f"{_MANIFEST_OF[eco]} declares {' and '.join(others)}, not {tool}")


# --------------------------------------------------------------------------- versions


def _version(text: str) -> tuple[int, ...] | None:
    m = re.fullmatch(r"\s*v?(\d+(?:\.\d+){0,2})(?:\.\*)?\s*", text)
    return tuple(int(p) for p in m.group(1).split(".")) if m else None


def _cmp(v: tuple[int, ...], w: tuple[int, ...]) -> int:
    n = max(len(v), len(w))
    a, b = v + (0,) * (n - len(v)), w + (0,) * (n - len(w))
    return (a > b) - (a < b)


def satisfies_pep440(version: tuple[int, ...], spec: str) -> bool | None:
    """`version` within a PEP 440 specifier set (the common operators; None when a clause is not
    understood: then the claim is not checked)."""
    for clause in (c.strip() for c in spec.split(",")):
        if not clause:
            continue
        m = re.fullmatch(r"(~=|==|!=|<=|>=|<|>|\^|~)?\s*([0-9][0-9.]*)(\.\*)?", clause)
        if m is None:
            return None
        op, raw, star = m.group(1) or "==", m.group(2).rstrip("."), m.group(3)
        w = tuple(int(p) for p in raw.split(".") if p)
        if star and op in ("==", "!="):
            same = version[:len(w)] == w
            if (op == "==") != same:
                return False
            continue
        c = _cmp(version, w)
        if op in ("^",):  # poetry's caret: same major (or minor for 0.x), not below
            ok = c >= 0 and version[:1] == w[:1]
        elif op in ("~=", "~"):  # `~=3.11`: >=3.11, ==3.*; poetry's `~3.11`: >=3.11, ==3.11.*
            head = w[:-1] if op == "~=" and len(w) > 1 else w[:2]
            ok = c >= 0 and version[:len(head)] == head
        else:
            common = min(len(w), len(version))
            ok = {"==": version[:common] == w[:common], "!=": c != 0,
                  "<=": c <= 0, ">=": c >= 0, "<": c < 0, ">": c > 0}[op]
        if not ok:
            return False
    return True


def satisfies_node_range(major: int, spec: str) -> bool | None:
    """A major version within an npm range, by majors only (`>=18`, `^18.2`, `18.x`, `~18`, `18`,
    `>=18 <21`, alternatives joined by `||`); None when the range uses anything else."""
    verdicts = []
    for alt in spec.split("||"):
        ok = True
        parts = alt.split()
        if not parts:
            return None
        for part in parts:
            m = re.fullmatch(r"(>=|<=|>|<|\^|~|=)?v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?", part)
            if m is None:
                return None
            op, w = m.group(1) or "=", int(m.group(2))
            minor_set = m.group(3) not in (None, "x", "*") and m.group(3) != "0"
            ok &= {"=": major == w, "^": major == w, "~": major == w, ">=": major >= w,
                   ">": major > w or (major == w and minor_set), "<": major < w or (major == w and minor_set),
                   "<=": major <= w}[op]
        verdicts.append(ok)
    return any(verdicts)


def _version_claims(text: str, facts: RepoFacts) -> Iterator[tuple[str, str]]:
    if facts.requires_python:
        for m in _PY_VERSION.finditer(text):
            if _negated(text[max(0, m.start() - 40):m.start()]):
                continue
            v = tuple(int(p) for p in m.group(1).split("."))
            if satisfies_pep440(v, facts.requires_python) is False:
                yield (f"Python {m.group(1)}{m.group(2) or ''}",
                       f"pyproject.toml requires-python is \"{facts.requires_python}\"")
                break
    if facts.node_engine:
        for m in _NODE_VERSION.finditer(text):
            if _negated(text[max(0, m.start() - 40):m.start()]):
                continue
            if satisfies_node_range(int(m.group(1)), facts.node_engine) is False:
                yield (f"Node {m.group(1)}{m.group(2) or ''}", f"package.json engines.node is \"{facts.node_engine}\"")
                break
    if facts.java_release and (release := re.fullmatch(r"(?:1\.)?(\d{1,2})", facts.java_release.strip())):
        for m in _JAVA_VERSION.finditer(text):
            if _negated(text[max(0, m.start() - 40):m.start()]):
                continue
            if int(m.group(1)) != int(release.group(1)):
                yield (f"Java {m.group(1)}", f"{facts.java_release_from} is {facts.java_release}")
                break
    if facts.go_version:
        directive = tuple(int(p) for p in facts.go_version.split(".")[:2])
        for m in _GO_VERSION.finditer(text):
            if _negated(text[max(0, m.start() - 40):m.start()]):
                continue
            if tuple(int(p) for p in m.group(1).split(".")) < directive:
                yield (f"Go {m.group(1)}", f"go.mod says go {facts.go_version}")
                break


# --------------------------------------------------------------------------- paths


def named_paths(text: str) -> list[str]:
    """The repository paths a text names in sentences that state them (see the module doc)."""
    out: list[str] = []
    for sentence in _SENTENCE.finditer(text.replace("`", " ")):
        s = sentence.group(0)
        if "/" not in s:
            continue
        found = list(_PATH.finditer(s))
        if not found or _PATH_SKIP.search(_PATH.sub(" ", s)):  # the sentence's own words, not its paths'
            continue
        for m in found:
            token = m.group(1)
            first = token.lstrip("./").split("/", 1)[0]
            if "/" not in token.rstrip("/") and not token.endswith("/"):
                continue
            if _DOMAIN.match(first) or ".." in token.split("/") or len(token) > 200:
                continue
            last = token.rstrip("/").rsplit("/", 1)[-1]
            if not token.endswith("/") and "." not in last:
                continue  # `and/or`, `CI/CD`, `read/write`: a path needs an extension or a trailing slash
            if token.endswith("/") and "/" not in token.rstrip("/") and not re.fullmatch(r"[\w.-]+/", token):
                continue
            if token not in out:
                out.append(token)
    return out


def _exists(repo: Path, rel: str) -> bool:
    norm = posixpath.normpath(rel.rstrip("/") or ".")
    if norm.startswith(("../", "/")) or norm == "..":
        return False
    parts = norm.split("/")
    if any(p.casefold() in (".git", ".autopatch-j") for p in parts):
        return True  # not ours to judge
    return os.path.lexists(repo / norm)


def _path_claims(text: str, repo: Path, applies: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    for rel in named_paths(text):
        bases = [""] + [a.rstrip("/") for a in applies if a and "*" not in a and "?" not in a]
        if any(_exists(repo, posixpath.join(b, rel.lstrip("./")) if b else rel.lstrip("./") or ".") for b in bases):
            continue
        yield (f"path {rel}", f"no {rel} in the repository")


# --------------------------------------------------------------------------- one item


def item_claims(text: str, facts: RepoFacts, repo: Path, applies: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(claim, evidence) for each claim of one item's text that the repository contradicts."""
    mentioned = _mentions(text)
    found: list[tuple[str, str]] = []
    if mentioned:
        found += _manager_claims(mentioned, facts)
        found += _tool_claims(mentioned, facts)
    if _VERSION_HINT.search(text.lower()):
        found += _version_claims(text, facts)
    if "/" in text:
        found += _path_claims(text, repo, applies)
    return found


__all__ = ["TOOLS", "StaleClaim", "item_claims", "named_paths", "satisfies_node_range", "satisfies_pep440"]
