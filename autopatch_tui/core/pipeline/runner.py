"""One pipeline step at a time: claim → (extraction | consolidation) → commit or safe failure.

`PipelineRunner.lock` is the processing lock shared by the background worker and the flushes.
A provider call runs beside a `Heartbeat`; a fenced lease or a damaged store stops the step
before any repair or commit."""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from autopatch_tui.core.clock import Clock
from autopatch_tui.core.errors import (
    AutopatchError,
    MemoryBusyError,
    MemoryContractError,
    MemoryDegradedError,
    MemoryFencedError,
    MemoryStoreError,
)
from autopatch_tui.core.events import (
    EventHub,
    JobFinished,
    JobStarted,
    MemoryChanged,
    QueueCounts,
)
from autopatch_tui.core.llm.errors import ProviderError
from autopatch_tui.core.llm.json_mode import count_requests
from autopatch_tui.core.memory import jobs
from autopatch_tui.core.memory.health import check_runtime_invariants
from autopatch_tui.core.memory.store import MemoryStore
from autopatch_tui.core.memory.turns import heartbeat_open_turns
from autopatch_tui.core.pipeline import consolidation, extraction, summary
from autopatch_tui.core.pipeline.contracts import ConsolidationOut, validate_reply
from autopatch_tui.core.pipeline.heartbeat import Heartbeat
from autopatch_tui.core.pipeline.summary_schedule import SummarySchedule
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.pipeline.prompts import (
    CONSOLIDATION_SYSTEM,
    EXTRACTION_SYSTEM,
    REPAIR_SUFFIX,
)

log = logging.getLogger(__name__)
DEFAULT_RETRY_DELAY = 5.0


@dataclass(frozen=True)
class StepOutcome:
    kind: str
    job_ids: tuple[str, ...]
    status: str  # succeeded | succeeded_no_output | retry_wait | failed | fenced | damaged | stopped
    category: str | None = None
    rule: str | None = None
    spawned: tuple[str, ...] = ()  # chunk jobs split off this consolidation job (they run as their own steps)


class _Stop(Exception):
    def __init__(self, status: str, detail: str = "") -> None:
        super().__init__(status)
        self.status = status
        self.detail = detail


@dataclass(frozen=True)
class Timing:
    lease_seconds: float
    heartbeat_seconds: float
    max_wait: float
    retry_delay: float = DEFAULT_RETRY_DELAY


class PipelineRunner:
    def __init__(self, store: MemoryStore, model: MemoryModel | None, *, owner: str, clock: Clock, events: EventHub,
                 timing: Timing, on_damage: Callable[[str], None] | None = None,
                 consolidation_task: str = "consolidation") -> None:
        self.store = store
        self.model = model
        self.owner = owner
        self.clock = clock
        self.events = events
        self.timing = timing
        self.on_damage = on_damage
        self.consolidation_task = consolidation_task  # "organize" after a store merge
        # related items offered per chunk besides every identity holder (organize offers more: topic merge)
        self.related_limit = consolidation.MAX_RELATED_ITEMS
        self._spawned: list[str] = []
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self._gate_lock = threading.Lock()
        self._damage_lock = threading.Lock()
        self._damage_reported = False
        self._calls = 0
        self._calls_lock = threading.Lock()
        self.calls_in_flight = 0  # provider calls running now (close() abandons them instead of waiting)
        self.summary_schedule = SummarySchedule(self.refresh_summary)  # coalesced, off the commit path

    def stop(self) -> None:
        """After this returns the runner writes nothing: every pipeline write passes `_gate`."""
        with self._gate_lock:
            self.stopped.set()

    @contextmanager
    def _gate(self) -> Iterator[None]:
        with self._gate_lock:
            if self.stopped.is_set():
                raise _Stop("damaged" if self._damage_reported else "stopped")
            if not self.store.healthy:  # degraded by whoever noticed it first (status, heartbeat)
                raise _Stop("damaged", self.store.health.diagnostic or "Memory is degraded")
            yield

    @property
    def enabled(self) -> bool:
        return self.model is not None and self.store.healthy and not self.stopped.is_set()

    # --- the step ---------------------------------------------------------------------------
    def step(self, *, force: bool = False, only: Collection[str] | None = None) -> StepOutcome | None:
        """Claim and process one unit of work. None when there was nothing to claim."""
        if not self.enabled:
            return None
        with self.lock:
            if not self.enabled:
                return None
            conn = self.store.conn()
            try:
                with self._gate():
                    lease = jobs.claim_next(conn, owner=self.owner, now=self.clock.now(),
                                            lease_seconds=self.timing.lease_seconds, max_wait=self.timing.max_wait,
                                            force=force, only=only)
            except (MemoryBusyError, _Stop):
                return None
            if lease is None:
                return None
            for jid in lease.job_ids:
                self.events.emit(JobStarted(jid, lease.kind))
            self._spawned = []
            outcome = self._guarded(lease)
            log.debug("memory %s job %s: %s", lease.kind, ",".join(lease.job_ids), outcome.status)
            if self._spawned:
                outcome = replace(outcome, spawned=tuple(self._spawned))
            for jid in lease.job_ids:
                self.events.emit(JobFinished(jid, lease.kind, outcome.status, outcome.category))
            self._report_counts()
            return outcome

    def _guarded(self, lease: jobs.Lease) -> StepOutcome:
        self._calls = 0
        try:
            if lease.kind == "extraction":
                return self._extraction(lease)
            return self._consolidation(lease)
        except _Stop as stop:
            if stop.status == "damaged":
                self._damaged(stop.detail)
            return StepOutcome(lease.kind, lease.job_ids, stop.status)
        except MemoryFencedError:
            return StepOutcome(lease.kind, lease.job_ids, "fenced")
        except MemoryDegradedError as exc:
            self._damaged(exc.diagnostic)
            return StepOutcome(lease.kind, lease.job_ids, "damaged")
        except MemoryBusyError:
            return self._fail(lease, jobs.Failure("sqlite_lock", "commit"))
        except sqlite3.IntegrityError:  # a constraint refused this result: the job fails, the store is fine
            return self._fail(lease, jobs.Failure("internal", "commit"))
        except sqlite3.DatabaseError as exc:
            self._damaged(f"the database became unreadable ({type(exc).__name__})")
            return StepOutcome(lease.kind, lease.job_ids, "damaged")

    # --- helpers ----------------------------------------------------------------------------
    def _fail(self, lease: jobs.Lease, failure: jobs.Failure, *, suppress: bool = False) -> StepOutcome:
        try:
            with self._gate():
                status = jobs.record_failure(self.store.conn(), lease, failure, provider_calls=self._calls,
                                             now=self.clock.now(), retry_delay=self.timing.retry_delay,
                                             suppress_candidates=suppress)
        except (MemoryBusyError, _Stop):
            status = None  # the lease will expire and the job comes back
        log.info("memory %s job %s: %s (category=%s phase=%s stage=%s rule=%s provider_calls=%d)", lease.kind,
                 ",".join(lease.job_ids), status or "fenced", failure.category, failure.phase, failure.stage,
                 failure.rule, self._calls)
        return StepOutcome(lease.kind, lease.job_ids, status or "fenced", failure.category, failure.rule)

    def _check_store(self) -> str | None:
        if self.stopped.is_set():
            return None
        try:
            return check_runtime_invariants(self.store.conn())
        except sqlite3.DatabaseError as exc:
            return f"the database became unreadable ({type(exc).__name__})"
        except MemoryDegradedError as exc:  # another caller (e.g. status) noticed the damage first
            return exc.diagnostic
        except MemoryStoreError:
            return None

    def _beat(self, lease: jobs.Lease) -> bool:
        try:
            with self._gate():
                return jobs.heartbeat(self.store.conn(), lease, now=self.clock.now(),
                                      lease_seconds=self.timing.lease_seconds)
        except (_Stop, MemoryDegradedError):  # the lease cannot be proven: never repair or commit
            return False

    def _damaged(self, diagnostic: str) -> None:
        """Stop at once, degrade the store and mark the summary stale (once, from whichever thread
        noticed the damage first: the heartbeat during a call, or the step itself)."""
        with self._damage_lock:
            if self._damage_reported:
                return
            self._damage_reported = True
            self.stopped.set()
        self.store.mark_degraded(diagnostic)
        if self.on_damage:
            self.on_damage(diagnostic)

    def _heartbeat_check(self) -> str | None:
        damage = self._check_store()
        if damage:
            self._damaged(damage)
        return damage

    def _still_valid(self, hb_state: Heartbeat | None, lease: jobs.Lease) -> None:
        if self.stopped.is_set():  # closed during the call: the late result is neither repaired nor committed
            raise _Stop("damaged" if self._damage_reported else "stopped")
        if hb_state is not None and hb_state.damage:
            raise _Stop("damaged", hb_state.damage)
        if self._damage_reported:
            raise _Stop("damaged")
        if hb_state is not None and hb_state.fenced:
            raise _Stop("fenced")

    def _guarded_call(self, lease: jobs.Lease, task: str, system: str, payload: dict) -> dict:
        assert self.model is not None
        self._calls += 1
        hb = Heartbeat(lambda: self._beat(lease), self._heartbeat_check, self.timing.heartbeat_seconds,
                       on_exit=self.store.release_thread_connection)
        with self._calls_lock:
            self.calls_in_flight += 1
        try:
            with hb, count_requests() as sent:
                try:
                    try:
                        reply = self.model.call(task, system, payload)
                    finally:  # counted as one above; a JSON-mode fallback sent a second request
                        self._calls += max(0, sent.sent - 1)
                except (ProviderError, MemoryContractError):
                    self._still_valid(hb, lease)
                    raise
                except Exception as exc:
                    if self.stopped.is_set():  # closed under the call (the HTTP client too): abandon it quietly
                        raise _Stop("damaged" if self._damage_reported else "stopped") from exc
                    raise
        finally:
            with self._calls_lock:
                self.calls_in_flight -= 1
        self._still_valid(hb, lease)
        return reply

    def _before_repair(self, lease: jobs.Lease) -> None:
        if self.stopped.is_set():
            raise _Stop("damaged" if self._damage_reported else "stopped")
        damage = self._check_store()
        if damage:
            raise _Stop("damaged", damage)
        if not self._beat(lease):
            raise _Stop("fenced")

    def heartbeat_turns(self) -> None:
        """Renew this owner's open turns (a flush holding the processing lock does it per step)."""
        try:
            with self._gate():
                heartbeat_open_turns(self.store.conn(), self.owner, now=self.clock.now(),
                                     lease_seconds=self.timing.lease_seconds)
        except _Stop:
            return

    def _report_counts(self) -> None:
        try:
            c = jobs.job_counts(self.store.conn())
        except (MemoryStoreError, sqlite3.Error):
            return
        self.events.emit(QueueCounts(c["pending"], c["leased"], c["retry_wait"], c["failed"]))

    def refresh_summary(self) -> None:
        try:
            with self._gate():
                summary.refresh(self.store.conn(), self.store.paths, now=self.clock.now())
        except _Stop:
            return
        except (OSError, MemoryBusyError) as exc:
            log.warning("memory summary not refreshed: %s", type(exc).__name__)

    # --- extraction -------------------------------------------------------------------------
    def _extraction(self, lease: jobs.Lease) -> StepOutcome:
        assert self.model is not None
        conn = self.store.conn()
        inp = extraction.prepare(conn, lease, self.model)
        if inp is None:
            with self._gate():
                extraction.commit_capacity(conn, lease, now=self.clock.now())
            return StepOutcome(lease.kind, lease.job_ids, "succeeded_no_output", rule="capacity")
        try:
            reply = self._guarded_call(lease, "extraction", EXTRACTION_SYSTEM, inp.payload())
            out, verdict, rule = extraction.judge(reply, inp, after_repair=False)
        except ProviderError as exc:
            return self._fail(lease, jobs.Failure(exc.category, "provider", "primary"))
        except MemoryContractError as exc:
            out, verdict, rule = None, None, exc.rule
        if rule:
            self._before_repair(lease)
            try:
                reply = self._guarded_call(lease, "extraction_repair", extraction.REPAIR_SYSTEM,
                                           extraction.repair_payload(inp, verdict, rule))
            except ProviderError as exc:
                return self._fail(lease, jobs.Failure(exc.category, "provider", "repair"))
            except MemoryContractError as exc:
                return self._fail(lease, jobs.Failure("contract_violation", "validate", "repair", exc.rule))
            out, verdict, rule = extraction.judge(reply, inp, after_repair=True)
            if rule:
                return self._fail(lease, jobs.Failure("contract_violation", "validate", "repair", rule))
        assert out is not None and verdict is not None
        with self._gate():
            status = extraction.commit(conn, lease, inp, out, verdict, provider_calls=self._calls,
                                       now=self.clock.now())
            self._keep_refused(conn, verdict)
        if verdict.refusals:  # rule names and counts only (contracts §6), never a candidate or a quote
            log.info("memory extraction job %s: %s, kept %d, refused %s", ",".join(lease.job_ids), status,
                     len(verdict.accepted), verdict.safe_summary())
        return StepOutcome(lease.kind, lease.job_ids, status)

    def _keep_refused(self, conn: sqlite3.Connection, verdict: extraction.Verdict) -> None:
        """The refused candidates go to the rescue file (`refused_store`) after their job's commit;
        a file that cannot be written costs only the rescue (logged by type, never by content)."""
        if not verdict.refused:
            return
        from autopatch_tui.core.memory import refused_store
        from autopatch_tui.core.ids import new_id

        now = self.clock.now()
        entries = [refused_store.for_file(rule, turn or "", cand.model_dump(mode="json"), key=new_id("ref"), at=now)
                   for rule, turn, cand in verdict.refused]
        try:
            refused_store.add(self.store.paths, conn, entries)
        except (OSError, AutopatchError) as exc:
            log.warning("refused candidates not kept for rescue: %s", type(exc).__name__)

    # --- consolidation ----------------------------------------------------------------------
    def _split(self, conn: sqlite3.Connection, lease: jobs.Lease, cands: list[consolidation.Candidate]) -> None:
        for start in range(0, len(cands), consolidation.CHUNK_CANDIDATES):
            with self._gate():
                self._spawned.append(consolidation.split_off(
                    conn, lease, cands[start:start + consolidation.CHUNK_CANDIDATES], now=self.clock.now()))

    def _fit_chunk(self, conn: sqlite3.Connection, lease: jobs.Lease, cands: list[consolidation.Candidate],
                   system: str) -> tuple[list[consolidation.Candidate], list[sqlite3.Row], dict] | None:
        """This job's chunk and its payload: at most CHUNK_CANDIDATES candidates (the rest are split
        off into chunk jobs of their own), every candidate's identity holder, then term-sharing items.
        Organize offers more of those (topic merge) as far as the capacity allows, never fewer than an
        ordinary consolidation. None when the chunk does not fit (capacity: no call, suppressed)."""
        assert self.model is not None
        if len(cands) > consolidation.CHUNK_CANDIDATES:
            self._split(conn, lease, cands[consolidation.CHUNK_CANDIDATES:])
            cands = cands[:consolidation.CHUNK_CANDIDATES]
        holders, shared = consolidation.related_parts(conn, cands, self.related_limit)
        base = max(0, consolidation.MAX_RELATED_ITEMS - len(holders))
        while True:
            related = holders + shared
            payload = {"candidates": [c.payload() for c in cands],
                       "related_items": [consolidation.related_payload(r) for r in related]}
            if self.model.measure(system, payload) + extraction.VIOLATION_ALLOWANCE_TOKENS <= self.model.capacity:
                return cands, related, payload
            if len(shared) <= base:
                return None
            shared = shared[:max(base, len(shared) // 2)]

    def _consolidation(self, lease: jobs.Lease) -> StepOutcome:
        assert self.model is not None
        conn = self.store.conn()
        cands = consolidation.load_candidates(conn, lease.job_ids[0])
        if not cands:
            with self._gate():
                consolidation.commit_no_output(conn, lease, reason="no_candidates", now=self.clock.now(),
                                               suppress=False)
            return StepOutcome(lease.kind, lease.job_ids, "succeeded_no_output")
        repair_system = CONSOLIDATION_SYSTEM + REPAIR_SUFFIX
        fitted = self._fit_chunk(conn, lease, cands, repair_system)
        if fitted is None:
            with self._gate():
                consolidation.commit_no_output(conn, lease, reason="capacity", now=self.clock.now(), suppress=True)
            return StepOutcome(lease.kind, lease.job_ids, "succeeded_no_output", rule="capacity")
        cands, related, payload = fitted
        rule, phase = "", "validate"
        for stage in ("primary", "repair"):
            task = self.consolidation_task if stage == "primary" else "consolidation_repair"
            system = CONSOLIDATION_SYSTEM if stage == "primary" else repair_system
            body = payload if stage == "primary" else {**payload, "violations": [{"rule": rule, "where": phase}]}
            if stage == "repair":
                self._before_repair(lease)
            try:
                reply = self._guarded_call(lease, task, system, body)
            except ProviderError as exc:
                return self._fail(lease, jobs.Failure(exc.category, "provider", stage))
            except MemoryContractError as exc:
                rule, phase = exc.rule, "validate"
                continue
            try:
                out = validate_reply(ConsolidationOut, reply)
                consolidation.check_operations(out, cands, related)
            except MemoryContractError as exc:
                rule, phase = exc.rule, "validate"
                continue
            try:
                with self._gate():
                    changed = consolidation.commit(conn, lease, out, cands, provider_calls=self._calls,
                                                   now=self.clock.now(), refused=rule or None)
            except MemoryContractError as exc:
                rule, phase = exc.rule, "commit"
                continue
            if changed:
                self.summary_schedule.mark()  # rendered later by the worker (coalesced) or at exit/close
                self.events.emit(MemoryChanged("consolidation"))
            return StepOutcome(lease.kind, lease.job_ids, "succeeded" if changed else "succeeded_no_output")
        return self._fail(lease, jobs.Failure("contract_violation", phase, "repair", rule), suppress=True)
