"""`MemoryManager`: the one facade the CLI and every screen share for a project's Memory.

A plain Python object. Its background work reports through `events` (see `events.py`)."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from autopatch_tui.core.clock import Clock, SystemClock
from autopatch_tui.core.errors import (
    AutopatchError,
    MemoryDegradedError,
    MemoryStoreError,
    UsageError,
)
from autopatch_tui.core.events import EventHub, MemoryChanged, Notice
from autopatch_tui.core.identity.names import (
    canonical_location,
    store_name_for_location,
)
from autopatch_tui.core.identity.remote import normalize_remote_url
from autopatch_tui.core.identity.repo import read_origin_remote, resolve_repo_root
from autopatch_tui.core.ids import new_ulid
from autopatch_tui.core.memory import turns as turn_ops
from autopatch_tui.core.memory.bootstrap import StoreIdentity
from autopatch_tui.core.memory.health import NO_CLEAR_CAUSES, check_runtime_invariants
from autopatch_tui.core.memory.store import MemoryStore
from autopatch_tui.core.memory.verdicts import Verdict, VerdictMemo
from autopatch_tui.core.model_slot import ModelSlot, build_memory_model  # noqa: F401 (re-exported)
from autopatch_tui.core.paths import StorePaths
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.info import StoreUnreadable, holds_something
from autopatch_tui.core.stores.registration import own_meta, record, register_if_used
from autopatch_tui.core.stores.registry import Registry
from autopatch_tui.core.stores.resolve import Redirect, resolve_holder

# What a command does not run, it does not import (issue 23): the model client, the pipeline and
# the Memory operations beyond opening a store are imported where they are first used.
if TYPE_CHECKING:
    from autopatch_tui.core.llm.client import LLMClient
    from autopatch_tui.core.memory import history
    from autopatch_tui.core.memory.audit import AuditReport
    from autopatch_tui.core.memory.item_history import ItemHistory
    from autopatch_tui.core.memory.models import (
        FlushResult,
        ItemDetail,
        ItemSummary,
        NewThreadResult,
        StatusReport,
    )
    from autopatch_tui.core.memory.review_service import ReviewService
    from autopatch_tui.core.memory.turn_memory import MemoryNote
    from autopatch_tui.core.pipeline.flush import ExitFlushResult, WatermarkFlush
    from autopatch_tui.core.pipeline.model_io import MemoryModel
    from autopatch_tui.core.pipeline.runner import PipelineRunner
    from autopatch_tui.core.pipeline.turn_keeper import TurnKeepers
    from autopatch_tui.core.pipeline.worker import BackgroundWorker

log = logging.getLogger(__name__)
# degraded stores whose file must not be handed to SQLite even for an export
UNEXPORTABLE_CAUSES = frozenset({"symlink", "not_a_file", "permission"})
DEFAULT_NEW_TIMEOUT_SECONDS = 20.0


def make_owner_id() -> str:
    return f"{os.uname().nodename}:{os.getpid()}:{new_ulid()[-10:]}"  # the host name, as socket.gethostname()


def identity_for(repo: Path) -> StoreIdentity:
    location = canonical_location(repo)
    return StoreIdentity(
        store_name=store_name_for_location(location),
        root=location,
        remote=normalize_remote_url(read_origin_remote(repo)) or None,
    )


class MemoryManager:
    def __init__(self, repo: Path, settings: Settings, *, clock: Clock | None = None,
                 client: LLMClient | None = None, register: bool = True, scratch: Path | None = None) -> None:
        self.repo = repo
        self.settings = settings
        self.clock: Clock = clock or SystemClock()
        self.owner = make_owner_id()
        self.scratch = scratch  # a throw-away store's folder (`core/no_memory.py`): nothing is registered
        self.paths = StorePaths(scratch if scratch is not None else repo)
        register = register and scratch is None
        self.redirect: Redirect | None = None
        self.events = EventHub()
        self.summary_stale = False
        self._model = ModelSlot(settings, client)  # the client and Memory model, built on first use
        self._keepers_lock = threading.Lock()
        self.verdicts = VerdictMemo(settings.home)  # the deep check's verdicts, per file state
        identity = identity_for(repo)
        self._register_when_used = False  # an empty store joins the registry once it holds something
        self.store = self._open_store(identity, register)
        self._review: ReviewService | None = None  # review marks, the inbox, approval mode: `review`
        self._runner: PipelineRunner | None = None  # built on first use (`runner`, `worker`)
        self._runner_lock = threading.RLock()
        self._worker: BackgroundWorker | None = None
        self._turn_keepers: TurnKeepers | None = None  # built on the first request (`turn_keepers`)
        self._flushes: list[tuple[WatermarkFlush, threading.Thread]] = []
        self.moved_aside: list[Path] = []  # what the last clear renamed aside (links, a folder named memory.db)
        self._closed = False
        self._close_lock = threading.RLock()  # two exit paths (SIGHUP's thread, unmount) close once
        self._background_wanted = False
        if self.store.healthy:
            self.recover()

    def _open_store(self, identity: StoreIdentity, register: bool) -> MemoryStore:
        """This checkout's store, or — when it was merged away — the living holder's (FR-058)."""
        registry = None
        if register:
            try:
                registry = Registry(self.settings.home)
            except (sqlite3.Error, OSError, AutopatchError) as exc:
                log.warning("store registry unavailable: %s", type(exc).__name__)
        try:
            if registry is not None:
                self.redirect = resolve_holder(self.paths.db, identity.store_name, registry)
            if self.redirect is not None:
                if self.redirect.db_path is None:
                    return MemoryStore.unavailable(self.paths, identity, self.redirect.diagnostic or "merged away")
                self.paths = StorePaths.for_db(self.redirect.db_path)
            store = MemoryStore.open(self.paths, identity, clock=self.clock, memo=self.verdicts)
            if registry is not None and store.healthy:
                try:
                    meta = own_meta(store.conn())
                    if self.redirect is None and meta["store_name"] != identity.store_name:
                        # a store file copied here from elsewhere: the service gives it a name of its own
                        registry.close()
                        registry = None
                        from autopatch_tui.core.stores.service import StoreService  # rare: lazy

                        StoreService(self.settings, clock=self.clock).register_db(self.paths.db)
                    elif self.redirect is None and not holds_something(store.conn()):
                        self._register_when_used = True  # e.g. a `memory status` in some folder
                    else:
                        record(registry, meta, self.paths.db, self.clock.now())
                except (sqlite3.Error, AutopatchError, StoreUnreadable) as exc:
                    log.warning("store not registered: %s", type(exc).__name__)
            return store
        finally:
            if registry is not None:
                registry.close()

    @property
    def review(self) -> ReviewService:
        """Review marks, the inbox and approval mode (contracts §8), built when first used."""
        with self._keepers_lock:
            if self._review is None:
                from autopatch_tui.core.memory.review_service import ReviewService

                self._review = ReviewService(self)
            return self._review

    # --- the model and the turn keepers, built when first used -----------------------------
    @property
    def client(self) -> LLMClient | None:
        """The model client (None without a model): a command that makes no model call never
        imports it (`model_slot.py`)."""
        return self._model.client

    @property
    def memory_model(self) -> MemoryModel | None:
        return self._model.memory_model

    @property
    def model_problem(self) -> str | None:
        return self._model.problem

    @property
    def built_client(self) -> LLMClient | None:
        """The client if it was built (closing closes it; it never builds one)."""
        return self._model.built_client

    @property
    def turn_keepers(self) -> TurnKeepers:
        with self._keepers_lock:
            if self._turn_keepers is None:
                from autopatch_tui.core.pipeline.turn_keeper import TurnKeepers

                self._turn_keepers = TurnKeepers(self._renew_turn, self.settings.heartbeat_seconds,
                                                 lambda: self.store.release_thread_connection())
            return self._turn_keepers

    def _register_if_used(self) -> None:
        """A store opened empty joins the registry once it holds a turn or an item (its first turn,
        or at close whatever wrote it): `stores.registration`."""
        if self._register_when_used and self.store.healthy:
            self._register_when_used = not register_if_used(self.settings.home, self.store.conn, self.paths.db,
                                                             self.clock.now())

    @classmethod
    def open(cls, repo: str | os.PathLike[str] | None, settings: Settings, *, clock: Clock | None = None) -> MemoryManager:
        return cls(resolve_repo_root(repo if repo is not None else Path.cwd()), settings, clock=clock)

    # --- health --------------------------------------------------------------------------
    @property
    def healthy(self) -> bool:
        return self.store.healthy

    @property
    def closed(self) -> bool:
        """Whether `close()` has begun: nothing may start on this manager any more."""
        return self._closed

    @property
    def readable(self) -> bool:
        """Healthy, or intact but read-only (cause `read_only`): the read methods work."""
        return self.store.readable

    def require_healthy(self) -> None:
        if not self.store.healthy:
            raise self.store.degraded_error()

    def require_readable(self) -> None:
        if not self.store.readable:
            raise self.store.degraded_error()

    def _on_damage(self, diagnostic: str) -> None:
        self.summary_stale = True
        self.events.emit(Notice("error", f"Memory is degraded: {diagnostic}"))
        self.events.emit(MemoryChanged("degraded"))

    def status(self) -> StatusReport:
        from autopatch_tui.core.memory.status import degraded_status, healthy_status

        h = self.store.health
        if not self.store.healthy:
            diagnostic = h.diagnostic or "Memory is degraded"
            if h.readable:  # read-only: the real counts, state degraded
                report = self._with_review(healthy_status(self.store.read_conn(), self.paths, summary_stale=True))
                return report.model_copy(update={"state": "degraded", "diagnostic": diagnostic, "cause": h.cause})
            return degraded_status(self.paths, h.schema_version, diagnostic, cause=h.cause)
        conn = self.store.conn()
        problem = check_runtime_invariants(conn)
        if problem:  # lost at run time (active thread, meta row, catalog): degraded from now on
            self.store.mark_degraded(problem)
            self.summary_stale = True
            return degraded_status(self.paths, self.store.health.schema_version, problem,
                                   cause=self.store.health.cause)
        return self._with_review(healthy_status(conn, self.paths, summary_stale=self.summary_stale))

    def _with_review(self, report: StatusReport) -> StatusReport:
        """§8 `review.new`; marks that cannot be read count every active item as new (as recall does)."""
        try:
            new = self.review.count()
        except (OSError, AutopatchError) as exc:
            log.info("review marks unreadable: %s", type(exc).__name__)
            new = report.active_items
        from autopatch_tui.core.memory.models import ReviewCounts

        return report.model_copy(update={"review": ReviewCounts(new=new)})

    def verify_store(self, timeout: float | None = None) -> Verdict | None:
        """The deep consistency check of a store the open-time check passed (`deep_check.py`;
        remembered per file state, so a repeat open does not pay it). A fault degrades the store
        at once: the pipeline stops, nothing is written after, the summary goes stale (the spec's
        startup recovery). None when it was not needed, cancelled, or out of `timeout` seconds."""
        verdict = self.store.verify(timeout)
        if verdict is not None and not verdict.healthy:
            if self._runner is not None:
                self._runner.stop()
            self._on_damage(self.store.health.diagnostic or "the consistency check failed")
        return verdict

    def recover(self) -> list[str]:
        """Startup recovery: open turns whose lease expired become `interrupted` and get queued."""
        return turn_ops.recover_expired_turns(self.store.conn(), now=self.clock.now())

    # --- turns ---------------------------------------------------------------------------
    def begin_turn(self, user_text: str, *, intent: str = "general_chat", scope_paths: tuple[str, ...] | list[str] = (),
                   evidence_keys: tuple[str, ...] | list[str] = ()) -> turn_ops.TurnHandle:
        handle = turn_ops.begin_turn(
            self.store.conn(), user_text=user_text, intent=intent, owner=self.owner, now=self.clock.now(),
            lease_seconds=self.settings.lease_seconds, scope_paths=scope_paths, evidence_keys=evidence_keys,
        )
        self._register_if_used()
        return handle

    def complete_turn(self, handle: turn_ops.TurnHandle, assistant_text: str) -> None:
        turn_ops.complete_turn(self.store.conn(), handle.turn_id, assistant_text, now=self.clock.now())
        if self._worker is not None:  # a worker that was never built has nothing to wake
            self._worker.wake()
        self.events.emit(MemoryChanged("turn"))

    def fail_turn(self, handle: turn_ops.TurnHandle, assistant_text: str | None = None) -> None:
        turn_ops.fail_turn(self.store.conn(), handle.turn_id, now=self.clock.now(), assistant_text=assistant_text)
        if self._worker is not None:  # a worker that was never built has nothing to wake
            self._worker.wake()
        self.events.emit(MemoryChanged("turn"))

    @contextmanager
    def failing_turn(self, handle: turn_ops.TurnHandle) -> Iterator[None]:
        """Run a started turn's work: any exception marks the turn `failed` (its RAW text stays) and
        is re-raised unchanged; a typed error also learns the turn's ID (`turn_id`). While the work
        runs (main call, tool loop, audit batch, revise) this owner renews the turn's lease every
        heartbeat, so no other process recovers a live request as interrupted."""
        try:
            with self.turn_keepers.keep(handle.turn_id):
                yield
        except BaseException as exc:
            if isinstance(exc, AutopatchError):
                exc.turn_id = handle.turn_id
            log.info("turn %s (%s) failed: %s", handle.turn_id, handle.intent, exc)  # its type and category only
            try:
                self.fail_turn(handle)
            except MemoryStoreError as store_exc:  # keep the original error; recovery interrupts the turn
                log.warning("could not mark the turn failed: %s", type(store_exc).__name__)
            raise

    def _renew_turn(self, turn_id: str) -> bool:
        return turn_ops.renew_turn(self.store.conn(), turn_id, self.owner, now=self.clock.now(),
                                   lease_seconds=self.settings.lease_seconds)

    def heartbeat_turns(self) -> int:
        return turn_ops.heartbeat_open_turns(
            self.store.conn(), self.owner, now=self.clock.now(), lease_seconds=self.settings.lease_seconds
        )

    def new_thread(self, *, timeout: float | None = None) -> NewThreadResult:
        """`/new`: flush the old thread's captured jobs (bounded), then archive it and start a new one."""
        from autopatch_tui.core.memory.models import NewThreadResult

        self.require_healthy()
        conn = self.store.conn()
        old_thread = turn_ops.active_thread_id(conn)
        flush = self.flush_thread(old_thread, timeout=DEFAULT_NEW_TIMEOUT_SECONDS if timeout is None else timeout)
        if flush.timed_out:
            self.events.emit(Notice("warning", f"Memory flush timed out: {flush.pending} job(s) of the old thread "
                                               "stay queued and finish in the background or at the next start"))
        old, new = turn_ops.new_thread(conn, now=self.clock.now())
        self.events.emit(MemoryChanged("new_thread"))
        return NewThreadResult(old_thread_id=old, new_thread_id=new, flush=flush)

    def flush_thread(self, thread_id: str, *, timeout: float) -> FlushResult:
        """The watermark flush: process the thread's captured jobs and derived consolidation for at
        most `timeout` seconds; what is left keeps going in the background until done or close()."""
        from autopatch_tui.core.memory.models import FlushResult
        from autopatch_tui.core.pipeline.flush import WatermarkFlush

        wf = WatermarkFlush(self.runner, thread_id, deadline=self.clock.monotonic() + timeout)
        wf.capture()
        if not wf.captured or not self.runner.enabled:
            return FlushResult(completed=0, pending=len(wf.remaining()), timed_out=False)
        thread = threading.Thread(target=wf.run, name="memory-watermark-flush", daemon=True)
        self._flushes.append((wf, thread))
        thread.start()
        finished = wf.done.wait(timeout)
        pending = len(wf.remaining())
        return FlushResult(completed=wf.completed, pending=pending, timed_out=not finished and pending > 0)

    # --- pipeline ------------------------------------------------------------------------
    @property
    def has_model(self) -> bool:
        return self.memory_model is not None

    def start_background(self) -> None:
        """Start the background worker (the app does; one-shot CLI commands do not). When the
        store is degraded it starts once an explicit clear has made it healthy."""
        self._background_wanted = True
        if self.store.healthy:
            self.worker.start()

    def retry_job(self, job_id: str) -> str:
        """Re-run one `failed` job as a fresh pending job for the same input (for a consolidation:
        its suppressed candidates come back). Returns the new job's ID."""
        self.require_healthy()
        from autopatch_tui.core.memory import job_retry

        new_job = job_retry.retry_job(self.store.conn(), job_id, now=self.clock.now())
        self.worker.wake()
        self.events.emit(MemoryChanged("retry"))
        return new_job

    def process_pending(self) -> ExitFlushResult:
        """The exit flush: every open job gets one processing chance now."""
        from autopatch_tui.core.pipeline.flush import ExitFlushResult, exit_flush

        if self._runner is None and self._nothing_to_flush():
            return ExitFlushResult()  # what the flush would find; building the pipeline to find it costs ~0.5 s
        result = exit_flush(self.runner)
        if result.retry_wait:
            self.events.emit(Notice("warning", f"{result.retry_wait} Memory job(s) will be retried at the next start"))
        if result.failed:
            self.events.emit(Notice("warning", f"{result.failed} Memory job(s) failed; see `memory status`"))
        return result

    # --- history -------------------------------------------------------------------------
    def active_thread_id(self) -> str:
        return turn_ops.active_thread_id(self.store.read_conn())

    def threads(self) -> list[history.ThreadInfo]:
        from autopatch_tui.core.memory import history

        return history.list_threads(self.store.read_conn())

    def thread_turns(self, thread_id: str, *, offset: int = 0, limit: int = 100) -> list[history.TurnInfo]:
        from autopatch_tui.core.memory import history

        return history.thread_turns(self.store.read_conn(), thread_id, offset=offset, limit=limit)

    def recent_turns(self, limit: int = 30) -> list[history.TurnInfo]:
        from autopatch_tui.core.memory import history

        conn = self.store.read_conn()
        return history.recent_turns(conn, turn_ops.active_thread_id(conn), limit)

    def turns_before(self, thread_id: str, sequence: int, limit: int) -> list[history.TurnInfo]:
        from autopatch_tui.core.memory import history

        return history.turns_before(self.store.read_conn(), thread_id, sequence, limit)

    def search_turns(self, text: str, *, limit: int = 200) -> list[history.TurnInfo]:
        from autopatch_tui.core.memory import history

        return history.search_turns(self.store.read_conn(), text, limit=limit)

    def turn_info(self, turn_id: str) -> history.TurnInfo:
        from autopatch_tui.core.memory import history

        return history.get_turn_info(self.store.read_conn(), turn_id)

    def export_thread_markdown(self, thread_id: str) -> Path:
        """Write one thread as Markdown next to the JSON exports; returns the path."""
        self.require_healthy()
        from autopatch_tui.core.memory import history
        from autopatch_tui.core.paths import write_private_text

        text = history.thread_markdown(self.store.conn(), thread_id)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(self.clock.now()))
        path = self.paths.exports_dir / f"thread-{thread_id}-{stamp}.md"
        write_private_text(path, text, root=self.paths.repo)
        return path

    # --- items ---------------------------------------------------------------------------
    def list_items(self, *, kind: str | None = None, status: str = "active", limit: int | None = None,
                   offset: int = 0) -> list[ItemSummary]:
        from autopatch_tui.core.memory import items as item_ops

        return item_ops.list_items(self.store.read_conn(), kind=kind, status=status, limit=limit, offset=offset)

    def show_item(self, item_id: str) -> ItemDetail:
        from autopatch_tui.core.memory import items as item_ops

        return item_ops.show_item(self.store.read_conn(), item_id)

    def forget(self, item_id: str) -> str:
        self.require_healthy()
        from autopatch_tui.core.memory import items as item_ops

        logical = item_ops.forget_item(self.store.conn(), item_id, now=self.clock.now())
        self.events.emit(MemoryChanged("forget"))
        return logical

    def item_history(self, item_id: str) -> ItemHistory:
        """The supersession chain around an item and, when it is not active, what happened to it."""
        from autopatch_tui.core.memory.item_history import item_history
        from autopatch_tui.core.memory.sqlite import read_txn

        conn = self.store.read_conn()
        with read_txn(conn):
            return item_history(conn, item_id)

    def items_containing(self, text: str, *, limit: int = 50) -> list[ItemSummary]:
        """Active items whose subject, statement or content contain every typed word (case-folded):
        the browser's second, labelled list beside deterministic recall."""
        from autopatch_tui.core.memory import items as item_ops

        return item_ops.items_containing(self.store.read_conn(), text, limit=limit)

    def turn_memory(self, turn_ids: list[str]) -> dict[str, list[MemoryNote]]:
        """What each turn's Memory work did, for the turns whose work has landed (`turn_memory`)."""
        from autopatch_tui.core.memory.sqlite import read_txn
        from autopatch_tui.core.memory.turn_memory import turn_notes

        conn = self.store.read_conn()
        with read_txn(conn):
            return turn_notes(conn, turn_ids)

    def audit(self) -> AuditReport:
        """`memory audit` (contracts §8): duplicates, conflicts and stale paths; no model, no write."""
        from autopatch_tui.core.memory.audit import run_audit

        from autopatch_tui.core.memory.sqlite import read_txn

        self.require_readable()
        conn = self.store.read_conn()
        with read_txn(conn):
            return run_audit(conn, self.repo)

    # --- whole store ---------------------------------------------------------------------
    def clear(self, *, confirm: bool) -> str:
        """Delete all Memory data and start one empty active thread. Returns its ID."""
        if not confirm:
            raise UsageError("memory clear deletes all Memory data; repeat with --confirm")
        if self.redirect is not None and self.redirect.db_path is None:
            # the file here is the retired backup of a merged store: never replace it with an empty one
            raise MemoryDegradedError(self.redirect.notice + "; nothing was cleared")
        from autopatch_tui.core.memory import clear as clear_ops

        self.moved_aside = []
        if self.store.healthy:
            thread_id = clear_ops.clear_healthy(self.store.conn(), now=self.clock.now())
        else:
            cause = self.store.health.cause
            if cause in NO_CLEAR_CAUSES:  # a permission problem: clearing would not help, and must not wipe Memory
                raise MemoryDegradedError(f"{self.store.health.diagnostic}; nothing was cleared", cause)
            self.store.close_connections()
            self.moved_aside = clear_ops.recover_files(self.paths, self.clock.now())
            self.store.reload()
            self.require_healthy()
            thread_id = turn_ops.active_thread_id(self.store.conn())
            if not self._closed:
                self.runner.stopped.clear()  # a damaged store had stopped the pipeline
                if self._background_wanted:
                    self.worker.start()
        self.summary_stale = False
        self._reset_review_marks()
        self.events.emit(MemoryChanged("clear"))
        return thread_id

    def _reset_review_marks(self) -> None:
        """A clear resets the review marks (they name the old generation, so they already count as
        none; the file goes too). A non-file there is moved aside, never deleted."""
        from autopatch_tui.core.memory import review_marks

        try:
            moved = review_marks.reset(self.paths, self.clock.now())
            from autopatch_tui.core.memory import memory_used, refused_store

            moved_refused = refused_store.reset(self.paths, self.clock.now())
            memory_used.reset(self.paths)
        except (OSError, AutopatchError) as exc:
            log.warning("review marks not reset: %s", type(exc).__name__)
            return
        self.moved_aside += [m for m in [moved, *moved_refused] if m is not None]

    def export(self, to: Path | None = None, progress: Callable[[int, int], None] | None = None) -> Path:
        """A JSON snapshot in `.autopatch-j/memory-exports/`, or at `to` (a new file, or a new file
        in the folder `to`): the way out of a read-only checkout. Streamed; `progress(done, total)`
        follows the rows written."""
        if not self.store.healthy and self.store.health.cause in UNEXPORTABLE_CAUSES:
            raise self.store.degraded_error()
        conn = self.store.read_conn() if self.store.readable else None
        from autopatch_tui.core.memory.export import write_export

        return write_export(self.paths, repo=str(self.repo), now=self.clock.now(), conn=conn, to=to,
                            progress=progress)

    @property
    def runner(self) -> PipelineRunner:
        """The pipeline runner, built (and its modules imported) on first use."""
        if self._runner is not None:
            return self._runner
        with self._runner_lock:  # the worker's thread builds it too (once a job is open)
            return self._build_runner()

    def _build_runner(self) -> PipelineRunner:
        if self._runner is None:
            from autopatch_tui.core.pipeline.runner import PipelineRunner, Timing

            s = self.settings
            self._runner = PipelineRunner(
                self.store, self.memory_model, owner=self.owner, clock=self.clock, events=self.events,
                timing=Timing(s.lease_seconds, s.heartbeat_seconds, s.extraction_max_wait_seconds),
                on_damage=self._on_damage,
            )
            if self._closed:  # built after close: it must never write
                self._runner.stop()
        return self._runner

    @property
    def worker(self) -> BackgroundWorker:
        if self._worker is None:
            from autopatch_tui.core.pipeline.worker import BackgroundWorker

            # its first work is the deep check: no automatic write before the store's verdict
            # nor does it build the pipeline (imports ~0.5 s of CPU) before a job is open, and then in its
            # own thread: starting it imports nothing (the app starts it right after its first frame)
            self._worker = BackgroundWorker(lambda: self.runner, self.store, before_work=self._verified_for_work,
                                            cancel_before_work=self.store.cancel_verify, has_work=self._any_open_job,
                                            built=lambda: self._runner)
        return self._worker

    def _nothing_to_flush(self) -> bool:
        """No open job and a current summary (or a degraded store, which the flush leaves alone)."""
        if not self.store.healthy:
            return True
        from autopatch_tui.core.pipeline.summary import needs_refresh

        return not self._any_open_job() and not needs_refresh(self.store.conn(), self.paths)

    def _any_open_job(self) -> bool:
        from autopatch_tui.core.memory.jobs import any_open_job

        return any_open_job(self.store.conn())

    def _verified_for_work(self) -> bool:
        self.verify_store()
        return self.store.healthy

    def close(self, *, join_timeout: float = 5.0) -> None:
        """Stop every pipeline step, background flush and turn keeper; hand back the jobs this owner
        holds (their claims are not spent) and abandon a provider call in flight quietly. After this
        returns the manager writes nothing to SQLite or the summary file (`pipeline/closing.py`).
        Only the first caller closes; a concurrent caller waits until that close has ended."""
        with self._close_lock:
            if self._closed:
                return
            self._register_if_used()
            self._closed = True
            self._close_now(join_timeout)

    def _close_now(self, join_timeout: float) -> None:
        if self._runner is None and self._worker is None and not self._flushes and self._turn_keepers is None:
            # nothing ran that could hold a lease or a thread (`memory status`, `list`, …): no
            # pipeline to stop (nor to import)
            self.store.close()
            if self.built_client is not None:
                self.built_client.close()
            return
        from autopatch_tui.core.pipeline.closing import stop_closing

        stop_closing(self, join_timeout)
