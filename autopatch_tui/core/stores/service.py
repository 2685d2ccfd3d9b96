"""`StoreService`: the registry, merge-scan, merge and organize behind one facade for the CLI and
the merge dialog. Plain Python; progress is reported through callbacks."""

from __future__ import annotations

import logging
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core import constants as C
from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.errors import AutopatchError, UsageError
from autopatch_tui.core.identity.names import canonical_location, store_name_for_location
from autopatch_tui.core.identity.remote import normalize_remote_url
from autopatch_tui.core.identity.repo import read_origin_remote, resolve_repo_root
from autopatch_tui.core.llm.client import LLMClient
from autopatch_tui.core.memory.health import inspect_store
from autopatch_tui.core.memory.readonly import open_readonly
from autopatch_tui.core.memory.sqlite import open_readwrite, write_txn
from autopatch_tui.core.paths import StorePaths
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.info import StoreInfo, StoreUnreadable, read_store_info
from autopatch_tui.core.stores.merge import merge_files
from autopatch_tui.core.stores.registry import Registry
from autopatch_tui.core.stores.scan import ProgressFn, ScanResult, merge_scan
from autopatch_tui.core.terminal_text import has_controls, sqlite_words

log = logging.getLogger(__name__)
MAX_LABEL_CHARS = 80


class MergeError(AutopatchError):
    """A merge was refused or failed; nothing was changed when it is raised by validation."""


def reorg_words(status: str) -> str:
    """A merge's `reorg_status` (a stable machine word, kept as is in `--json`) for people."""
    if status == "empty":
        return "nothing to reorganize"
    if status == "skipped":
        return "not run (--no-organize)"
    if status == "no_model":
        return "not run: no Memory model is configured; the imported items are kept as they are"
    if status.startswith("error: busy:"):
        return ("not finished: another process was organizing this store; the rest stays queued"
                f" ({status.removeprefix('error: busy: ')})")
    if status.startswith("error: "):
        return f"did not finish ({status.removeprefix('error: ')}); the rest stays queued"
    return status


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


def _checkout_of(db_path: Path) -> Path | None:
    """The checkout whose `<root>/.autopatch-j/memory.db` this is, or None for a loose file."""
    if db_path.name == C.DB_FILE_NAME and db_path.parent.name == C.STATE_DIR_NAME:
        return db_path.parent.parent
    return None


def _home_name(db_path: Path) -> str | None:
    """The name a store file has when it sits at home (the checkout it was made for)."""
    home = _checkout_of(db_path)
    return store_name_for_location(canonical_location(home)) if home is not None else None


def _read_meta(db_path: Path, *, aliases: bool = False) -> dict | None:
    """The meta row (and alias list) of a store file, read-only and without validating it; None when
    it cannot be read that way."""
    if not db_path.is_file():
        return None
    try:
        conn = open_readonly(db_path)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT store_name, label, root, remote, retired_into FROM memory_meta"
                           " WHERE id = 1").fetchone()
        if row is None:
            return None
        out = dict(row)
        if aliases:
            out["aliases"] = [a for (a,) in conn.execute("SELECT alias FROM store_aliases")]
        return out
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _holds_name(db_path: Path, name: str) -> bool:
    try:
        return read_store_info(db_path).name == name
    except StoreUnreadable:
        return False


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
        """Register one store file. A file copied elsewhere still carries its original's name; when
        another live file of that name is known (registered, or at the root the copy records), the
        one that is away from its home location gets a name of its own, so both stay known and can
        be found and merged instead of one silently replacing the other in the registry."""
        db_path = db_path.resolve()
        info = read_store_info(db_path)
        with self.registry() as reg:
            entry = reg.get(info.name)
            others = [Path(entry.db_path)] if entry is not None else []
            if info.root:
                others.append(StorePaths(Path(info.root)).db)
            other = next((o for o in others if o.resolve() != db_path and _holds_name(o, info.name)), None)
            if other is not None:
                other = other.resolve()
                copy, original = (other, db_path) if _home_name(db_path) == info.name else (db_path, other)
                moved = self._reidentify(copy)
                kept = read_store_info(original)
                for path, i in ((copy, moved), (original, kept)):
                    reg.upsert(name=i.name, db_path=path, root=i.root, remote=i.remote, label=i.label,
                               retired_into=i.retired_into, now=self.clock.now())
                return moved if copy == db_path else kept
            reg.upsert(name=info.name, db_path=db_path, root=info.root, remote=info.remote, label=info.label,
                       retired_into=info.retired_into, now=self.clock.now())
        return info

    def _reidentify(self, db_path: Path) -> StoreInfo:
        """Give a copied store file the name of its own location (a checkout's root, else the file
        itself). At a checkout it also records that checkout as its root and remote. The copy gives
        up the merge aliases it shares with its original: each alias keeps exactly one holder."""
        home = _checkout_of(db_path)
        name = store_name_for_location(canonical_location(home if home is not None else db_path))
        conn = open_readwrite(db_path)
        try:
            with write_txn(conn):
                conn.execute("UPDATE memory_meta SET store_name = ? WHERE id = 1", (name,))
                if home is not None:
                    conn.execute("UPDATE memory_meta SET root = ?, remote = ? WHERE id = 1",
                                 (canonical_location(home), normalize_remote_url(read_origin_remote(home)) or None))
                conn.execute("DELETE FROM store_aliases")
        except sqlite3.Error as exc:
            raise MergeError(f"cannot give the copied store {db_path} a name of its own:"
                             f" {sqlite_words(exc)}") from None
        finally:
            conn.close()
        log.info("copied store %s registered as %s", db_path, name)
        return read_store_info(db_path)

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

    def set_label(self, store: str, label: str) -> StoreInfo:
        """Set the display label; returns the store as it is now."""
        label = label.strip()
        if not label or len(label) > MAX_LABEL_CHARS:
            raise UsageError(f"a label is 1 to {MAX_LABEL_CHARS} characters")
        if has_controls(label):  # it is shown in lists, dialogs and merge prompts: one plain line
            raise UsageError("a label is one line of text without control characters")
        with self.registry() as reg:
            entry = reg.require(store)
            try:  # never write into a missing or degraded file
                info = read_store_info(Path(entry.db_path))
            except StoreUnreadable as exc:
                raise MergeError(f"cannot label {store}: {exc.diagnostic}") from None
            if info.retired_into:
                raise MergeError(f"{store} was merged into {info.retired_into}; label that store instead")
            conn = open_readwrite(Path(entry.db_path))
            try:
                with write_txn(conn):
                    conn.execute("UPDATE memory_meta SET label = ? WHERE id = 1", (label,))
            except sqlite3.Error as exc:
                raise MergeError(f"cannot write the label into {store}: {sqlite_words(exc)}") from None
            finally:
                conn.close()
            reg.set_label(store, label)
        return read_store_info(Path(entry.db_path))

    def stores(self) -> list[dict[str, object]]:
        out = []
        with self.registry() as reg:
            entries = reg.entries()
        for e in entries:
            try:
                info = read_store_info(Path(e.db_path))
                if not info.holds_something:  # an empty store (a stray `memory status`): not listed
                    continue
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
            if not info.retired_into and info.name == e.name and info.holds_something:
                infos[e.name] = info  # an empty store is never proposed
        return infos

    # --- scan and merge ---------------------------------------------------------------------
    def scan(self, *, progress: ProgressFn | None = None, cancel: threading.Event | None = None) -> ScanResult:
        return merge_scan(list(self._live_infos().values()), self.model, progress=progress, cancel=cancel)

    def merge(self, source: str, target: str, *, organize: bool = True, fail_at: str | None = None) -> MergeResult:
        if source == target:
            raise UsageError("source and target must be two different stores")
        with self.registry() as reg:
            s_entry, t_entry = reg.require(source), reg.require(target)
        infos = []
        for name, entry in ((source, s_entry), (target, t_entry)):
            try:
                infos.append(read_store_info(Path(entry.db_path)))
            except StoreUnreadable as exc:
                raise MergeError(f"cannot merge: {name} ({entry.db_path}) is not usable: {exc.diagnostic}") from None
        s_info, t_info = infos
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
            t_meta = _read_meta(Path(t_entry.db_path))  # the label and root may have moved to the target
            if t_meta is not None:
                reg.upsert(name=target, db_path=Path(t_entry.db_path), root=t_meta["root"], remote=t_meta["remote"],
                           label=t_meta["label"], retired_into=None, now=self.clock.now())
            # every other store, the retired source included, gives these aliases up
            others = [e for e in reg.entries() if e.name != target]
        self._strip_aliases(others, outcome.aliases)
        self._carry_marks(Path(s_entry.db_path), Path(t_entry.db_path))
        reorg = self._organize(Path(t_entry.db_path), outcome.organize_jobs, organize, source=source)
        return MergeResult(outcome.target, outcome.merged_turns, outcome.merged_items, outcome.label_moved,
                           outcome.root_moved, outcome.aliases, reorg)

    def _carry_marks(self, source_db: Path, target_db: Path) -> None:
        """The source's review marks for the revisions the target imported (contracts §8). The merge
        has succeeded: marks that cannot be carried leave those items awaiting review again."""
        from autopatch_tui.core.stores.merge_marks import carry_rescues, carry_review_marks

        try:
            carry_review_marks(source_db, target_db)
        except (sqlite3.Error, OSError, AutopatchError) as exc:
            log.warning("review marks not carried by the merge: %s", type(exc).__name__)
        try:  # and the rescue records of the items it imported (issue 31.2): "kept over rule X"
            carry_rescues(source_db, target_db)
        except (sqlite3.Error, OSError, AutopatchError) as exc:
            log.warning("rescue records not carried by the merge: %s", type(exc).__name__)

    def _strip_aliases(self, others: list, aliases: list[str]) -> None:
        """Each alias has one living holder: remove these from every other store's alias table
        (a cheap read first; only a healthy store that lists one of them is written)."""
        wanted = set(aliases)
        for e in others:
            path = Path(e.db_path)
            meta = _read_meta(path, aliases=True)
            if meta is None or not wanted & set(meta["aliases"]) or not inspect_store(path).healthy:
                continue  # never create, touch or repair a missing or degraded file
            try:
                conn = open_readwrite(path)
            except sqlite3.Error:
                continue
            try:
                with write_txn(conn):
                    conn.executemany("DELETE FROM store_aliases WHERE alias = ?", [(a,) for a in aliases])
            except (sqlite3.Error, AutopatchError) as exc:
                log.warning("aliases not stripped from %s: %s", e.name, type(exc).__name__)
            finally:
                conn.close()

    def _organize(self, target_db: Path, jobs: list[str], enabled: bool, *, source: str | None = None) -> str:
        if not enabled:
            return "skipped"
        if self.model is None:
            return "no_model"
        from autopatch_tui.core.stores.organize import organize_jobs

        try:  # "empty" when there is neither a conflict nor an overlapping topic (organize decides)
            return organize_jobs(target_db, jobs, self.settings, self.model, clock=self.clock, source=source)
        except Exception as exc:  # noqa: BLE001 - the merge has succeeded; organize never fails it
            log.warning("organize after merge failed: %s", type(exc).__name__)
            return f"error: {type(exc).__name__}"
