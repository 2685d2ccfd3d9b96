"""`StoreService`: the registry, merge-scan, merge and organize behind one facade for the CLI and
the merge dialog. Plain Python; progress is reported through callbacks."""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.errors import AutopatchError, UsageError
from autopatch_tui.core.identity.repo import resolve_repo_root
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn
from autopatch_tui.core.paths import StorePaths
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.info import StoreInfo, StoreUnreadable, read_store_info
from autopatch_tui.core.stores.merge import merge_files
from autopatch_tui.core.stores.registry import Registry
from autopatch_tui.core.stores.scan import ProgressFn, ScanResult, merge_scan

log = logging.getLogger(__name__)
MAX_LABEL_CHARS = 80


class MergeError(AutopatchError):
    """A merge was refused or failed; nothing was changed when it is raised by validation."""


@dataclass(frozen=True)
class MergeResult:
    target: str
    merged_turns: int
    merged_items: int
    label_moved: bool
    root_moved: bool
    aliases: list[str]
    reorg_status: str

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


class StoreService:
    def __init__(self, settings: Settings, *, clock: Clock | None = None, model: MemoryModel | None = None,
                 client: LLMClient | None = None) -> None:
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.model = model
        self.client = client

    def registry(self) -> Registry:
        return Registry(self.settings.home)

    # --- registry ---------------------------------------------------------------------------
    def register_db(self, db_path: Path) -> StoreInfo:
        info = read_store_info(db_path)
        with self.registry() as reg:
            reg.upsert(name=info.name, db_path=db_path.resolve(), root=info.root, remote=info.remote, label=info.label,
                       retired_into=info.retired_into, now=self.clock.now())
        return info

    def add(self, path: str | Path) -> StoreInfo:
        """Register a checkout or a loose memory.db (e.g. copied from another machine)."""
        p = Path(path).expanduser()
        if p.is_file():
            db = p
        elif p.is_dir():
            db = StorePaths(resolve_repo_root(p)).db
        else:
            raise UsageError(f"no such checkout or file: {p}")
        try:
            return self.register_db(db)
        except StoreUnreadable as exc:
            raise MergeError(f"cannot add {db}: {exc.diagnostic}") from None

    def set_label(self, store: str, label: str) -> None:
        label = label.strip()
        if not label or len(label) > MAX_LABEL_CHARS:
            raise UsageError(f"a label is 1 to {MAX_LABEL_CHARS} characters")
        with self.registry() as reg:
            entry = reg.require(store)
            conn = open_readwrite(Path(entry.db_path))
            try:
                with write_txn(conn):
                    conn.execute("UPDATE memory_meta SET label = ? WHERE id = 1", (label,))
            except sqlite3.Error as exc:
                raise MergeError(f"cannot write the label into {store} ({type(exc).__name__})") from None
            finally:
                conn.close()
            reg.set_label(store, label)

    def stores(self) -> list[dict[str, object]]:
        out = []
        with self.registry() as reg:
            entries = reg.entries()
        for e in entries:
            try:
                info = read_store_info(Path(e.db_path))
                out.append({"store": e.name, "label": info.label, "root": info.root, "remote": info.remote,
                            "fact_count": info.fact_count, "retired": info.retired_into is not None})
            except StoreUnreadable:
                out.append({"store": e.name, "label": e.label, "root": e.root, "remote": e.remote, "fact_count": 0,
                            "retired": e.retired})
        return out

    def _live_infos(self) -> dict[str, StoreInfo]:
        with self.registry() as reg:
            entries = reg.entries()
        infos: dict[str, StoreInfo] = {}
        for e in entries:
            if e.retired:
                continue
            try:
                info = read_store_info(Path(e.db_path))
            except StoreUnreadable:
                continue
            if not info.retired_into and info.name == e.name:
                infos[e.name] = info
        return infos

    # --- scan and merge ---------------------------------------------------------------------
    def scan(self, *, progress: ProgressFn | None = None, cancel: threading.Event | None = None) -> ScanResult:
        return merge_scan(list(self._live_infos().values()), self.model, progress=progress, cancel=cancel)

    def merge(self, source: str, target: str, *, organize: bool = True, fail_at: str | None = None) -> MergeResult:
        if source == target:
            raise UsageError("source and target must be two different stores")
        with self.registry() as reg:
            s_entry, t_entry = reg.require(source), reg.require(target)
        try:
            s_info = read_store_info(Path(s_entry.db_path))
            t_info = read_store_info(Path(t_entry.db_path))
        except StoreUnreadable as exc:
            raise MergeError(f"cannot merge: {exc.diagnostic}") from None
        if t_info.retired_into:
            raise MergeError(f"cannot merge into {target}: it was merged into {t_info.retired_into}")
        if s_info.retired_into and s_info.retired_into != target:
            raise MergeError(f"cannot merge {source}: it was merged into {s_info.retired_into}")
        if s_info.name != source or t_info.name != target:
            raise MergeError("the registry does not match the store files; run `memory stores add` again")
        outcome = merge_files(Path(s_entry.db_path), Path(t_entry.db_path), now=self.clock.now(), fail_at=fail_at)
        with self.registry() as reg:
            reg.mark_retired(source, target)
            reg.set_aliases(outcome.aliases, target)
            others = [e for e in reg.entries() if e.name != target and not e.retired]
        self._strip_aliases(others, outcome.aliases)
        reorg = self._organize(Path(t_entry.db_path), outcome.organize_jobs, organize)
        return MergeResult(outcome.target, outcome.merged_turns, outcome.merged_items, outcome.label_moved,
                           outcome.root_moved, outcome.aliases, reorg)

    def _strip_aliases(self, others: list, aliases: list[str]) -> None:
        """Each alias has one living holder: remove these from every other store's alias table."""
        for e in others:
            try:
                conn = open_readwrite(Path(e.db_path))
            except sqlite3.Error:
                continue
            try:
                with write_txn(conn):
                    conn.executemany("DELETE FROM store_aliases WHERE alias = ?", [(a,) for a in aliases])
            except (sqlite3.Error, AutopatchError) as exc:
                log.warning("aliases not stripped from %s: %s", e.name, type(exc).__name__)
            finally:
                conn.close()

    def _organize(self, target_db: Path, jobs: list[str], enabled: bool) -> str:
        if not enabled:
            return "skipped"
        if self.model is None:
            return "no_model"
        if not jobs:
            return "empty"
        from autopatch_tui.core.stores.organize import organize_jobs

        try:
            return organize_jobs(target_db, jobs, self.settings, self.model, clock=self.clock)
        except AutopatchError as exc:
            return f"error: {type(exc).__name__}"
