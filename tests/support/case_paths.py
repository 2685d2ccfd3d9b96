"""The scope paths of a corpus case's turns made to exist in a scratch checkout (`ask --path` and a
`code_explain` turn refuse or read a path that does not): shared by the quality harness and
`bench/memory_eval.py`. Imports nothing of the test tooling, so the bench runs without pytest."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


def materialize_paths(repo: Path, turns: Iterable[Any]) -> None:
    """Each turn's `paths`: a trailing "/" is a folder, anything else an empty file; a glob or a
    path that leaves the checkout is left out."""
    for t in turns:
        for p in t.paths:
            if any(ch in p for ch in "*?[") or p.startswith("/") or ".." in Path(p).parts:
                continue
            target = repo / p
            if p.endswith("/"):
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.touch()
