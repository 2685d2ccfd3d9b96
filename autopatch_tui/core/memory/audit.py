"""`memory audit` (contracts §8): a deterministic check of the active items — no model, one pass
over them plus indexed lookups, so it stays well under a second at 10k items (`bench/audit.py`).

- **duplicates**: items of one identity space (project preferences and decisions together; a
  thread's discussions together) whose normalized subjects are equal (whatever their applicability),
  or whose statements say the same thing: equal `audit_text.signature` (same clauses, same polarity,
  same core words in the same order) with at least two core words. Groups are joined transitively.
- **conflicts**: two active project items (preferences, decisions) whose applicability overlaps and
  where one forbids what the other requires (a negative clause whose whole core lies inside a
  positive clause's core: `audit_text.forbids_what_requires`), or two decisions with the same
  normalized subject whose statements differ.
- **stale paths**: `applies_to_paths` entries that match nothing in the repository now (`..`
  resolved lexically first; an entry that leaves the repository is stale): a literal path that
  does not exist; a glob that covers no file (git's tracked and untracked files that are
  not ignored — listed by `safe_git.run_git`, which runs none of the repository's configured
  commands; outside git, or when git refuses or fails, every file but those under `.git/` and
  `.autopatch-j/`).
- **stale claims**: a decision's or preference's claim the repository contradicts (a path it names,
  a package manager by lock file, a tool by manifest, a runtime version): `core.claims`.
- **reader disagreements**: items that came from a turn where the gate and the extraction model's
  own reading disagreed (`reader_disagreements.py`), with the rule names recorded there."""

from __future__ import annotations

import logging
import os
import posixpath
import sqlite3
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from autopatch_tui.core.bounded_json import loads_column
from autopatch_tui.core.claims.check import StaleClaim
from autopatch_tui.core.claims.store import stale_claims
from autopatch_tui.core.memory.audit_text import Clause, clauses
from autopatch_tui.core.memory.reader_disagreements import ReaderDisagreement, reader_disagreements
from autopatch_tui.core.recall.paths import normalize_path, path_covers
from autopatch_tui.core.recall.terms import normalize_phrase
from autopatch_tui.core.safe_git import GitError, run_git
from autopatch_tui.core.tree_walk import TreeWalk

log = logging.getLogger(__name__)

PROJECT_KINDS = ("user_preference", "project_decision")
# Pairs of items the conflict check compares at most (both kinds of conflict together). Items are
# paired only when they can conflict at all (a shared word; one subject and nested scopes), so a
# store reaches this only when that many pairs really are candidates — then the report says so.
MAX_PAIR_CHECKS = 100_000
MAX_LISTED_FILES = 500_000
GIT_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Finding:
    ids: list[str]
    why: str

    def as_json(self) -> dict[str, object]:
        return {"ids": list(self.ids), "why": self.why}


@dataclass(frozen=True)
class StalePaths:
    id: str
    paths: list[str]

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "paths": list(self.paths)}


@dataclass
class AuditReport:
    checked: int = 0
    duplicates: list[Finding] = field(default_factory=list)
    conflicts: list[Finding] = field(default_factory=list)
    stale_paths: list[StalePaths] = field(default_factory=list)
    stale_claims: list[StaleClaim] = field(default_factory=list)
    # the conflict check stopped at MAX_PAIR_CHECKS comparisons: the conflicts listed are some of them
    truncated: bool = False
    # items from a turn where the gate and the model's own reading disagreed (`reader_disagreements.py`)
    disagreements: list[ReaderDisagreement] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {"checked": self.checked, "duplicates": [f.as_json() for f in self.duplicates],
                                  "conflicts": [f.as_json() for f in self.conflicts],
                                  "stale_paths": [s.as_json() for s in self.stale_paths],
                                  "stale_claims": [s.as_json() for s in self.stale_claims],
                                  "reader_disagreements": [d.as_json() for d in self.disagreements]}
        if self.truncated:  # only then: the contract's document is unchanged otherwise
            out["truncated"] = True
        return out


@dataclass(frozen=True)
class _Item:
    id: str
    kind: str
    space: str  # "project" or "thread:<id>"
    subject: str  # normalized
    paths: tuple[str, ...]
    clauses: tuple[Clause, ...]

    @cached_property
    def signature(self) -> tuple:
        return tuple((c.negative, c.core) for c in self.clauses if c.core)


def _paths(text: str) -> tuple[str, ...]:
    value = loads_column(text, None)
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def load_items(conn: sqlite3.Connection) -> list[_Item]:
    rows = conn.execute("SELECT logical_id, kind, subject, statement, applies_to_paths, thread_id FROM memory_items"
                        " WHERE status = 'active' ORDER BY logical_id").fetchall()
    return [_Item(r[0], r[1], "project" if r[1] in PROJECT_KINDS else f"thread:{r[5]}", normalize_phrase(r[2]),
                  _paths(r[4]), tuple(clauses(r[3]))) for r in rows]


def run_audit(conn: sqlite3.Connection, repo: Path) -> AuditReport:
    items = load_items(conn)
    budget = PairBudget()
    found = conflicts(items, budget)
    return AuditReport(len(items), duplicates(items), found, stale_paths(items, repo), stale_claims(conn, repo),
                       truncated=budget.spent_out, disagreements=reader_disagreements(conn))


# --------------------------------------------------------------------------- duplicates


def duplicates(items: list[_Item]) -> list[Finding]:
    parent = list(range(len(items)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    reasons: dict[int, set[str]] = defaultdict(set)
    for key_of, why in ((lambda it: (it.space, it.subject) if it.subject else None, "subject"),
                        (lambda it: (it.space, it.signature)
                         if sum(len(c) for _, c in it.signature) >= 2 else None, "statement")):
        first: dict[object, int] = {}
        for n, it in enumerate(items):
            key = key_of(it)
            if key is None:
                continue
            if key in first:
                a, b = find(first[key]), find(n)
                parent[b] = a
                reasons[first[key]].add(why)
                reasons[n].add(why)
            else:
                first[key] = n
    groups: dict[int, list[int]] = defaultdict(list)
    for n in range(len(items)):
        groups[find(n)].append(n)
    out = []
    for members in groups.values():
        if len(members) < 2:
            continue
        whys = set().union(*(reasons[m] for m in members))
        subjects = sorted({items[m].subject for m in members})
        parts = []
        if "subject" in whys:
            parts.append("the same subject" + (f" \"{subjects[0]}\"" if len(subjects) == 1 else ""))
        if "statement" in whys:
            parts.append("statements that say the same thing")
        out.append(Finding(sorted(items[m].id for m in members), " and ".join(parts)))
    return sorted(out, key=lambda f: f.ids)


# --------------------------------------------------------------------------- conflicts


def _entry_prefix(entry: str) -> str:
    """The literal leading folders of a glob (`src/*.py` → `src`); a literal entry is itself."""
    segments = entry.split("/")
    fixed = []
    for seg in segments:
        if "*" in seg or "?" in seg:
            break
        fixed.append(seg)
    return "/".join(fixed)


def lexical_path(entry: str) -> str:
    """An entry in recall's normalized form with `..` resolved lexically (`src/../lib` → `lib`;
    `src/../../x` → `../x`, which leaves the repository); "" is the repository root."""
    norm = normalize_path(entry)
    if ".." not in norm.split("/"):
        return norm
    resolved = posixpath.normpath(norm)
    return "" if resolved == "." else resolved


def _leaves_repository(path: str) -> bool:
    return path == ".." or path.startswith("../")


def _nested(a: str, b: str) -> bool:
    """Whether one literal path is the other or lies inside it."""
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


@lru_cache(maxsize=65536)
def _prefixes_of(paths: tuple[str, ...]) -> tuple[str, ...] | None:
    """Each entry's literal leading folders, normalized (`_entry_prefix`; a literal entry is
    itself), or None when the item can apply anywhere: no entry (the whole project), or an entry
    without a literal leading folder ("", "*", "**", `*.py`, `**/x`)."""
    if not paths:
        return None
    out = []
    for entry in paths:
        prefix = _entry_prefix(lexical_path(entry))
        if not prefix:
            return None
        out.append(prefix)
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=65536)
def scopes_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two applies-to lists can apply to one path: a whole-project item overlaps every
    item; otherwise two entries must overlap — one covers the other (recall's `path_covers`), or a
    glob's literal leading folders and the other entry lie one inside the other. Both come to one
    test, without matching a glob: the entries' literal leading folders lie one inside the other (a
    path a glob covers starts with the glob's literal folders), or an entry has none."""
    pa, pb = _prefixes_of(a), _prefixes_of(b)
    if pa is None or pb is None:
        return True
    return any(_nested(x, y) for x in pa for y in pb)


def _scope_words(paths: tuple[str, ...]) -> str:
    return ", ".join(paths) if paths else "the whole project"


class PairBudget:
    """How many more item pairs the conflict check may compare (`MAX_PAIR_CHECKS`)."""

    def __init__(self, limit: int | None = None) -> None:
        self.left = MAX_PAIR_CHECKS if limit is None else limit
        self.spent_out = False

    def take(self, n: int = 1) -> bool:
        if self.left < n:
            self.left = 0
            self.spent_out = True
            return False
        self.left -= n
        return True


def _overlap_candidates(group: list[_Item]) -> Iterator[tuple[int, int]]:
    """Index pairs (i < j) of one subject's items whose scopes overlap (`scopes_overlap`), each
    once, without pairing every two items: an item that can apply anywhere pairs with all; a
    scoped one with the items one of whose prefixes is an ancestor of (or equal to) one of its own
    — found by walking its prefixes' ancestors in an index, so disjoint scopes cost nothing."""
    wide: list[int] = []
    by_prefix: dict[str, list[int]] = defaultdict(list)  # indices in increasing order
    prefixes: list[tuple[str, ...] | None] = []
    for n, it in enumerate(group):
        pre = _prefixes_of(it.paths)
        prefixes.append(pre)
        if pre is None:
            wide.append(n)
        else:
            for prefix in pre:
                by_prefix[prefix].append(n)
    for i in wide:
        for j in range(len(group)):
            if j != i and (prefixes[j] is not None or i < j):
                yield (i, j) if i < j else (j, i)
    for n, pre in enumerate(prefixes):
        if pre is None:
            continue
        seen: set[int] = set()
        for prefix in pre:
            parts = prefix.split("/")
            for k in range(1, len(parts) + 1):
                bucket = by_prefix.get("/".join(parts[:k]), ())
                if k == len(parts):  # n's own prefix: met from both sides, so once, from the larger index
                    bucket = bucket[:bisect_left(bucket, n)]
                for m in bucket:
                    if m == n or m in seen:
                        continue
                    seen.add(m)
                    # m's prefix is a strict ancestor of n's: m meets n from its own side only when
                    # one of n's prefixes is also an ancestor of (or equal to) one of m's — then
                    # once, from the larger index
                    theirs = prefixes[m] or ()
                    if m < n or not any(x == y or x.startswith(y + "/") for y in pre for x in theirs):
                        yield (m, n) if m < n else (n, m)


def conflicts(items: list[_Item], budget: PairBudget | None = None) -> list[Finding]:
    budget = budget if budget is not None else PairBudget()
    project = [it for it in items if it.space == "project"]
    found: dict[tuple[str, str], str] = {}
    # one forbids what the other requires: index positive clauses by each core word; a negative
    # clause's candidates are the positive clauses holding its first (here: any) core word
    positives: dict[str, list[tuple[int, frozenset[str]]]] = defaultdict(list)
    for n, it in enumerate(project):
        for c in it.clauses:
            if not c.negative and c.core:
                words = c.words
                for word in words:
                    positives[word].append((n, words))
    for n, it in enumerate(project):
        for neg in it.clauses:
            if not neg.negative or not neg.core:
                continue
            forbidden = neg.words  # inside a positive clause's words: that clause holds its rarest word
            rarest = min(forbidden, key=lambda w: len(positives.get(w, ())))
            candidates = positives.get(rarest, ())
            if not budget.take(len(candidates)):
                break
            for m, required in candidates:
                if m == n or not forbidden <= required:
                    continue
                other = project[m]
                key = (it.id, other.id) if it.id < other.id else (other.id, it.id)
                if key not in found and scopes_overlap(it.paths, other.paths):
                    found[key] = f"{other.id} requires what {it.id} forbids ({' '.join(neg.core)})"  # type: ignore[index]
    # two different decisions on one subject for overlapping scopes: only items whose scopes can
    # overlap are paired (a thousand decisions on "naming", each for its own package, are no pairs)
    by_subject: dict[str, list[_Item]] = defaultdict(list)
    for it in project:
        if it.kind == "project_decision" and it.subject:
            by_subject[it.subject].append(it)
    for subject, group in by_subject.items():
        if len(group) < 2:
            continue
        for i, j in _overlap_candidates(group):
            if not budget.take():
                break
            a, b = group[i], group[j]
            if a.signature != b.signature and scopes_overlap(a.paths, b.paths):
                key = (a.id, b.id) if a.id < b.id else (b.id, a.id)
                found.setdefault(key, f"two different decisions on \"{subject}\" for overlapping scopes "
                                      f"({_scope_words(a.paths)}; {_scope_words(b.paths)})")
    return [Finding(list(k), why) for k, why in sorted(found.items())]


# --------------------------------------------------------------------------- stale paths


def _is_glob(entry: str) -> bool:
    return "*" in entry or "?" in entry


def repository_files(repo: Path) -> list[str]:
    """Repository-relative POSIX paths of the files a glob is matched against (see the module doc)."""
    if (repo / ".git").exists():
        try:
            out = run_git(repo, ["ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          timeout=GIT_TIMEOUT_SECONDS)
            files = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
            return sorted(set(files))[:MAX_LISTED_FILES]
        except GitError as exc:  # no git, a refusal (another user's repository), a timeout: walk
            log.info("audit lists files by walking the folder: %s", exc)
    files: list[str] = []
    walk = TreeWalk(repo)
    for top, dirs, names in walk:
        dirs[:] = sorted(d for d in dirs if not (top == str(repo) and d in (".git", ".autopatch-j")))
        rel = os.path.relpath(top, repo)
        for name in sorted(names):
            files.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
            if len(files) >= MAX_LISTED_FILES:
                return files
    if walk.skipped:
        log.info("audit's file list left out %d folder(s) nested deeper than %d levels", walk.skipped,
                 walk.max_depth)
    return files


def stale_paths(items: list[_Item], repo: Path) -> list[StalePaths]:
    verdict: dict[str, bool] = {}  # entry -> stale
    files: list[str] | None = None
    out = []
    for it in items:
        stale = []
        for entry in it.paths:
            if entry not in verdict:
                norm = lexical_path(entry)  # `..` resolved first: what leaves the repository is stale
                if norm in ("", "*", "**"):
                    verdict[entry] = False
                elif _leaves_repository(norm):
                    verdict[entry] = True
                elif not _is_glob(norm):
                    verdict[entry] = not os.path.lexists(repo / norm)
                else:
                    if files is None:
                        files = repository_files(repo)
                    verdict[entry] = not any(path_covers(norm, f) for f in files)
            if verdict[entry]:
                stale.append(entry)
        if stale:
            out.append(StalePaths(it.id, stale))
    return out
