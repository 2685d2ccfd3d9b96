"""The repository's Ruff configuration, read by us through the confinement check, so that Ruff
itself never reads a file the repository points it at.

Ruff would find its configuration on its own (the closest `.ruff.toml`, `ruff.toml` or
`pyproject.toml` with a `[tool.ruff]` table, then every `extend` it names) — and `extend` may name
any path: `../outside/x.toml`, `~/x.toml`, `/dev/zero` (unbounded allocation), a FIFO (a hang until
the timeout). So the audit finds the closest configuration of each file the same way, but only
inside the repository (`core.confine`: no link out, no FIFO or device, at most MAX_CONFIG_BYTES;
tables and arrays at most MAX_CONFIG_DEPTH deep — parsing, merging and writing TOML recurse once per
level, so a file nested past the stack is skipped with a note instead of ending the audit), follows
`extend` only to files that pass the same check (at most MAX_EXTEND_DEPTH deep), merges the chain
as Ruff does (the extending file's options win; `extend-*` lists add up; a section merges option by
option), drops what names the file system (`extend`, `cache-dir`, `analyze`; `src` and
`namespace-packages` entries that are absolute or leave the folder) and writes the result to a
private temporary `pyproject.toml` (with the project's `requires-python`, which Ruff reads for the
target version). Ruff then runs with `--config` that file — it reads no other configuration — from
the configuration's folder, so relative patterns mean what they meant. Whatever was skipped is
named in a note for the audit summary."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import tomli_w

from autopatch_tui.core.confine import ConfinementError, confine, read_confined, shown
from autopatch_tui.core.toml_guard import has_deep_key

CONFIG_NAMES = (".ruff.toml", "ruff.toml", "pyproject.toml")  # Ruff's own order within a folder
MAX_CONFIG_BYTES = 1_000_000
MAX_EXTEND_DEPTH = 8
MAX_CONFIG_DEPTH = 32  # tables and arrays inside each other; a real configuration nests about 6 deep
DROPPED = ("extend", "cache-dir", "analyze")  # paths Ruff would read or write, and what `check` never uses
PATH_LISTS = ("src", "namespace-packages")
WHOLE_TABLES = frozenset({"per-file-ignores", "per-file-target-version"})  # one option each: replaced whole
_SAFE_ENTRY = re.compile(r"^[^~$/\\][^$\\]*$")



@dataclass(frozen=True)
class RuffConfig:
    """The configuration that governs the files of one folder: `folder` is its project root
    (repository-relative, "." for the root); `settings` the merged `[tool.ruff]` table; `source` the
    file it came from (None: the repository has none for these files — Ruff's defaults)."""

    folder: str
    settings: dict
    requires_python: str | None = None
    source: str | None = None

    def pyproject(self) -> str:
        """The private `pyproject.toml` Ruff is given."""
        doc: dict = {"tool": {"ruff": self.settings}}
        if self.requires_python:
            doc = {"project": {"requires-python": self.requires_python}, **doc}
        return tomli_w.dumps(doc)


@dataclass
class ConfigReader:
    """Finds and reads configurations for the files of one audit; `notes` says what was skipped."""

    repo: Path
    notes: list[str] = field(default_factory=list)
    _folders: dict[str, RuffConfig | None] = field(default_factory=dict)
    _files: dict[str, dict | None] = field(default_factory=dict)

    def for_file(self, rel: str) -> RuffConfig:
        folder = PurePosixPath(rel).parent
        chain = [folder, *folder.parents] if str(folder) != "." else [folder]
        for f in chain:
            found = self._folder(f.as_posix())
            if found is not None:
                return found
        return RuffConfig(".", {}, self._requires_python(chain))

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _folder(self, folder: str) -> RuffConfig | None:
        if folder not in self._folders:
            self._folders[folder] = self._find(folder)
        return self._folders[folder]

    def _find(self, folder: str) -> RuffConfig | None:
        for name in CONFIG_NAMES:
            rel = name if folder == "." else f"{folder}/{name}"
            doc = self._read(rel, missing_ok=True)
            if doc is None:
                continue
            if name == "pyproject.toml":
                table = (doc.get("tool") or {}).get("ruff") if isinstance(doc.get("tool"), dict) else None
                if not isinstance(table, dict):
                    continue  # a pyproject.toml without [tool.ruff] is not a Ruff configuration
                requires = _requires(doc)
            else:
                table = doc
                sibling = self._read("pyproject.toml" if folder == "." else f"{folder}/pyproject.toml",
                                     missing_ok=True)
                requires = _requires(sibling) if sibling is not None else None
            settings = self._resolve(rel, table, depth=0, seen={rel})
            return RuffConfig(folder, sanitized(settings, rel, self._note), requires, rel)
        return None

    def _requires_python(self, chain: list[PurePosixPath]) -> str | None:
        """Without any Ruff configuration Ruff still takes the closest pyproject.toml's requires-python."""
        for f in chain:
            rel = "pyproject.toml" if f.as_posix() == "." else f"{f.as_posix()}/pyproject.toml"
            doc = self._read(rel, missing_ok=True)
            if doc is not None:
                return _requires(doc)
        return None

    def _read(self, rel: str, *, missing_ok: bool) -> dict | None:
        """The parsed TOML of a repository file, or None (missing, refused or invalid: noted)."""
        if rel in self._files:
            return self._files[rel]
        doc: dict | None = None
        if missing_ok and not os.path.lexists(self.repo / rel):
            self._files[rel] = None
            return None
        too_deep = f"{shown(rel)} nests tables or arrays more than {MAX_CONFIG_DEPTH} levels deep; Ruff ran without it"
        try:
            _, data = read_confined(self.repo, rel, MAX_CONFIG_BYTES)
            text = data.decode("utf-8")
            if has_deep_key(text):  # tomllib: quadratic in a key's parts (core.toml_guard)
                raise RecursionError  # as deep as the parser's own limit: never parsed
            doc = tomllib.loads(text)
        except ConfinementError as exc:
            self._note(f"{shown(rel)} was not read ({exc}); Ruff ran without it")
        except (UnicodeDecodeError, ValueError):  # tomllib.TOMLDecodeError is a ValueError
            self._note(f"{shown(rel)} is not valid TOML; Ruff ran without it")
        except RecursionError:  # the parser recurses once per level of nesting
            self._note(too_deep)
        if doc is not None and nested_deeper(doc, MAX_CONFIG_DEPTH):  # merging and writing it would recurse too
            self._note(too_deep)
            doc = None
        self._files[rel] = doc
        return doc

    def _resolve(self, rel: str, table: dict, *, depth: int, seen: set[str]) -> dict:
        """`table` merged onto what its `extend` names (when that is allowed)."""
        target = table.get("extend")
        if target is None:
            return dict(table)
        base: dict = {}
        where = f"extend = {shown(target)} in {shown(rel)}"
        base_rel = self._extend_target(rel, target, where)
        if base_rel is not None:
            if base_rel in seen or depth >= MAX_EXTEND_DEPTH:
                self._note(f"{where} makes a loop or a chain over {MAX_EXTEND_DEPTH} files; it was ignored")
            else:
                doc = self._read(base_rel, missing_ok=False)
                if doc is not None:
                    inner = doc
                    if PurePosixPath(base_rel).name == "pyproject.toml":
                        inner = doc.get("tool", {}).get("ruff", {}) if isinstance(doc.get("tool"), dict) else {}
                    if isinstance(inner, dict):
                        base = self._resolve(base_rel, inner, depth=depth + 1, seen=seen | {base_rel})
        return merge(base, table)

    def _extend_target(self, rel: str, target: object, where: str) -> str | None:
        """The repository-relative file `extend` names, or None (outside, or not a plain path: noted)."""
        if not isinstance(target, str) or not target.strip():
            self._note(f"{where} is not a file name; it was ignored")
            return None
        if target.startswith("~") or "$" in target:
            self._note(f"{where} names a file through the home folder or a variable, outside the repository; "
                       "it was ignored")
            return None
        folder = (self.repo / rel).parent
        path = Path(target) if Path(target).is_absolute() else folder / target
        normal = Path(os.path.normpath(path))
        try:
            inside = normal.relative_to(self.repo).as_posix()
            confine(self.repo, inside)  # through links too
        except (ValueError, ConfinementError):
            self._note(f"{where} points outside the repository (or at a path it refuses); it was ignored")
            return None
        return inside


def _requires(doc: dict) -> str | None:
    project = doc.get("project")
    value = project.get("requires-python") if isinstance(project, dict) else None
    return value if isinstance(value, str) else None


def nested_deeper(doc: dict, limit: int) -> bool:
    """Does `doc` hold tables or arrays more than `limit` levels deep (`doc` itself is level 1)?
    Walked with a stack of its own, so any depth is measured without recursion."""
    stack: list[tuple[object, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        for child in children:
            if isinstance(child, (dict, list)):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def merge(base: dict, child: dict) -> dict:
    """Ruff's `extend`: the child's options win; `extend-*` options add up; sections merge option by
    option (a per-file table is one option)."""
    out = dict(base)
    for key, value in child.items():
        old = base.get(key)
        if key.startswith("extend-") and isinstance(old, list) and isinstance(value, list):
            out[key] = old + value
        elif isinstance(old, dict) and isinstance(value, dict) and (key.startswith("extend-")
                                                                    or key not in WHOLE_TABLES):
            out[key] = {**old, **value} if key.startswith("extend-") else merge(old, value)
        else:
            out[key] = value
    return out


def sanitized(settings: dict, rel: str, note) -> dict:  # type: ignore[no-untyped-def]
    """`settings` without the options that name files Ruff would read or write outside the folder."""
    out = {k: v for k, v in settings.items() if k not in DROPPED}
    for key in PATH_LISTS:
        value = out.get(key)
        if isinstance(value, list):
            kept = [v for v in value if isinstance(v, str) and _SAFE_ENTRY.match(v) and ".." not in v.split("/")]
            if len(kept) != len(value):
                note(f"{key} entries of {shown(rel)} outside its folder were ignored")
            out[key] = kept
    return out
