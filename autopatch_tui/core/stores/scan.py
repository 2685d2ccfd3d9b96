"""Merge-scan (FR-056): proposals of project stores that are the same project.

Deterministic tier first: both roots readable here with the same non-empty normalized origin
remote → `certain`, judged by `remote`, no model call. Model tier for the rest: one `merge_judge`
call per pair, at most 50 pairs per scan (the most similar pairs first, by a cheap deterministic
score), at most 4 calls at once. A malformed verdict, a transport error or `same_project = false`
yields no proposal — never a crash, never a guess. Deterministic evidence wins over the model's
word: two stores whose known origin remotes differ are at most `low` confidence ("review"), whatever
the model says (a fork or a moved repository can still be the same project; the user decides)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import PurePosixPath

from autopatch_tui.core.errors import MemoryContractError
from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.pipeline.contracts import MergeVerdictOut, validate_reply
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.pipeline.prompts import MERGE_JUDGE_SYSTEM
from autopatch_tui.core.stores.info import StoreInfo
from autopatch_tui.core.secrets import mask

MAX_JUDGED_PAIRS = 50
MAX_PARALLEL_CALLS = 4


def evidence(info: StoreInfo) -> dict[str, object]:
    remote = info.live_remote() or None
    return {"store": info.name, "label": mask(info.label) if info.label else info.label, "root": info.root,
            "remote": mask(remote) if remote else remote,  # a remote URL may carry a token
            "fact_count": info.fact_count, "subjects": list(info.subjects), "sample_statements": list(info.statements)}


def judge_words(judged_by: str) -> str:
    """A proposal's `judged_by` as people read it: "remote", or "model" (the JSON's `engine`)."""
    return "model" if judged_by == "engine" else judged_by


def known_remote(info: StoreInfo) -> str:
    """The checkout's origin remote as read here, else as the store recorded it ("" when unknown)."""
    return info.live_remote() or (info.remote or "")


def remotes_differ(a: StoreInfo, b: StoreInfo) -> str | None:
    """Why two stores are deterministically not the same checkout's (both remotes known and
    different), or None."""
    ra, rb = known_remote(a), known_remote(b)
    if ra and rb and ra != rb:
        return f"their origin remotes differ ({ra} vs {rb})"
    return None


def suggest_direction(a: StoreInfo, b: StoreInfo) -> tuple[StoreInfo, StoreInfo]:
    """(source, target): the target is the store whose root is readable here, then the one with more
    facts, then the lexicographically smaller name."""
    def rank(s: StoreInfo) -> tuple[int, int, str]:
        return (0 if s.root_readable else 1, -s.fact_count, s.name)

    target, source = sorted((a, b), key=rank)
    return source, target


def _repo_name(info: StoreInfo) -> str:
    remote = info.live_remote() or (info.remote or "")
    if remote:
        return remote.rstrip("/").rsplit("/", 1)[-1].lower()
    return PurePosixPath(info.root or "").name.lower()


def similarity(a: StoreInfo, b: StoreInfo) -> float:
    """A cheap deterministic score: shared subject terms, same repository name, same label."""
    ta, tb = a.subject_terms, b.subject_terms
    score = len(ta & tb) / len(ta | tb) if ta and tb else 0.0
    if _repo_name(a) and _repo_name(a) == _repo_name(b):
        score += 1.0
    if a.label and b.label and a.label.strip().lower() == b.label.strip().lower():
        score += 0.5
    return score


@dataclass(frozen=True)
class Proposal:
    source: str
    target: str
    confidence: str
    judged_by: str
    reason: str
    source_evidence: dict[str, object]
    target_evidence: dict[str, object]

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


@dataclass
class ScanResult:
    engine: str
    truncated: bool
    proposals: list[Proposal] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"engine": self.engine, "truncated": self.truncated, "proposals": [p.as_dict() for p in self.proposals]}


ProgressFn = Callable[[int, int], None]


def _proposal(a: StoreInfo, b: StoreInfo, confidence: str, judged_by: str, reason: str) -> Proposal:
    source, target = suggest_direction(a, b)
    return Proposal(source.name, target.name, confidence, judged_by, reason, evidence(source), evidence(target))


def _judge(model: MemoryModel, a: StoreInfo, b: StoreInfo) -> MergeVerdictOut | None:
    try:
        reply = model.call("merge_judge", MERGE_JUDGE_SYSTEM, {"a": evidence(a), "b": evidence(b)})
        return validate_reply(MergeVerdictOut, reply)
    except (ProviderError, MemoryContractError):
        return None


def merge_scan(stores: list[StoreInfo], model: MemoryModel | None, *, progress: ProgressFn | None = None,
               cancel: threading.Event | None = None, max_pairs: int = MAX_JUDGED_PAIRS) -> ScanResult:
    stores = sorted(stores, key=lambda s: s.name)
    proposals: list[Proposal] = []
    rest: list[tuple[StoreInfo, StoreInfo]] = []
    for a, b in combinations(stores, 2):
        ra, rb = a.live_remote(), b.live_remote()
        if ra and ra == rb:
            proposals.append(_proposal(a, b, "certain", "remote", "both checkouts have the same origin remote"))
        else:
            rest.append((a, b))
    if model is None:
        return ScanResult("no_model", False, proposals)
    rest.sort(key=lambda p: (-similarity(*p), p[0].name, p[1].name))
    judged = rest[:max_pairs]
    done = 0
    lock = threading.Lock()

    def work(pair: tuple[StoreInfo, StoreInfo]) -> Proposal | None:
        nonlocal done
        if cancel is not None and cancel.is_set():
            return None
        verdict = _judge(model, *pair)
        with lock:
            done += 1
            if progress:
                progress(done, len(judged))
        if verdict is None or not verdict.same_project:
            return None
        differ = remotes_differ(*pair)
        if differ is not None:  # the model's word alone never outweighs two different remotes
            return _proposal(*pair, "low", "engine", f"low confidence — review: {differ}; the model judged them "
                             f"the same project: {verdict.reason.strip()}")
        return _proposal(*pair, verdict.confidence, "engine", verdict.reason.strip())

    with ThreadPoolExecutor(max_workers=MAX_PARALLEL_CALLS, thread_name_prefix="merge-judge") as pool:
        results = list(pool.map(work, judged))
    proposals += [p for p in results if p is not None]
    return ScanResult("model", len(rest) > max_pairs, proposals)
