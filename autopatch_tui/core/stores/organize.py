"""Post-merge organize (FR-059): the imported candidates run through the consolidation logic
against the target's related items, with the `organize` task header. A failure never fails the
merge: the jobs stay in the target's queue and the status says what happened.

Organize scales: the candidates run in chunks (`consolidation.CHUNK_CANDIDATES` each, split off as
jobs of their own), every chunk's payload holds the identity holder of each of its candidates —
whatever their number — so a correct model can revise instead of create, and a chunk that fails
suppresses only its own candidates. Each chunk also offers the target's items that overlap the
imported ones by subject and terms, as many as fit the model's capacity; and imported items without
a conflict that overlap the target's own items by subject come as topic candidates
(`stores.topic_merge`), so the model can merge the two stores' overlapping topics.

`reorg_status` says how many candidates were organized: `reorganized: N of N candidates`, or
`error: <category>: K of N candidates organized` when a chunk failed or another process held the
target's consolidation (`busy`).

A merge interrupted during organize (a kill at any step) is finished by running the merge again:
the work is found from the candidates, not from the job IDs the merge started with — every
candidate this merge queued (conflict and topic candidates carry the source's name, and sit in
thread-less consolidation jobs: the organize job, the topic job, their chunk jobs and retries),
so chunk jobs split off before the kill are run too and the counts cover the whole merge. A
chunk still leased by the killed process is `busy` until its lease expires."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from autopatch_tui.core.clock import Clock
from autopatch_tui.core.events import EventHub
from autopatch_tui.core.manager import make_owner_id
from autopatch_tui.core.memory import jobs as job_ops
from autopatch_tui.core.memory.bootstrap import StoreIdentity
from autopatch_tui.core.memory.store import MemoryStore
from autopatch_tui.core.paths import StorePaths
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.pipeline.runner import PipelineRunner, Timing
from autopatch_tui.core.settings import Settings
from autopatch_tui.core.stores.topic_merge import queue_topic_candidates

log = logging.getLogger(__name__)
TOPIC_RELATED_ITEMS = 64  # related items a chunk may offer in all (holders first), within capacity


def merge_work(conn: sqlite3.Connection, source: str) -> tuple[set[str], set[str]]:
    """(every candidate the merge of `source` queued for organize, the jobs of them still to run)."""
    rows = conn.execute(
        "SELECT c.id, j.id AS job, j.status FROM memory_candidates c JOIN memory_jobs j"
        " ON j.id = c.consolidation_job_id WHERE c.origin_store = ? AND j.kind = 'consolidation'"
        " AND j.thread_id IS NULL AND j.parent_job_id IS NULL", (source,)).fetchall()
    open_jobs = {r["job"] for r in rows if r["status"] in ("pending", "retry_wait", "leased")}
    return {r["id"] for r in rows}, open_jobs


def _earlier_failure(conn: sqlite3.Connection, cands: set[str]) -> str | None:
    """The failure category of a job of these candidates that failed before this run."""
    if not cands:
        return None
    row = conn.execute(
        f"SELECT j.failure_category FROM memory_jobs j JOIN memory_candidates c ON c.consolidation_job_id = j.id"
        f" WHERE j.status = 'failed' AND c.id IN ({','.join('?' * len(cands))}) LIMIT 1", tuple(cands)).fetchone()
    return (row[0] or "failed") if row is not None else None


def _candidate_ids(conn: sqlite3.Connection, jobs: set[str]) -> set[str]:
    if not jobs:
        return set()
    return {r[0] for r in conn.execute(
        f"SELECT id FROM memory_candidates WHERE consolidation_job_id IN ({','.join('?' * len(jobs))})", tuple(jobs))}


def _organized(conn: sqlite3.Connection, cands: set[str]) -> int:
    if not cands:
        return 0
    return conn.execute(
        f"SELECT count(*) FROM memory_candidates WHERE status IN ('accepted', 'rejected')"
        f" AND id IN ({','.join('?' * len(cands))})", tuple(cands)).fetchone()[0]


def _release(store: MemoryStore, owner: str, clock: Clock) -> None:
    """Hand back what this owner still holds (a step cut short): the claim is not spent."""
    try:
        released = job_ops.release_leases(store.conn(), owner, now=clock.now())
    except Exception as exc:  # noqa: BLE001 - a locked or damaged file: the lease expires instead
        log.warning("organize: leases not released: %s", type(exc).__name__)
        return
    if released:
        log.info("organize: released %d job lease(s)", released)


def organize_jobs(target_db: Path, jobs: list[str], settings: Settings, model: MemoryModel, *, clock: Clock,
                  source: str | None = None) -> str:
    """Organize the merge's queued conflict jobs and, given the merged `source`'s name, its imported
    items that overlap the target's own by subject (topic candidates, `stores.topic_merge`)."""
    if not target_db.is_file():  # never bootstrap a store here
        return "error: target missing"
    store = MemoryStore.open(StorePaths.for_db(target_db), StoreIdentity(store_name="organize"), clock=clock)
    owner = make_owner_id()
    runner: PipelineRunner | None = None
    try:
        if not store.healthy:
            return "error: target degraded"
        runner = PipelineRunner(
            store, model, owner=owner, clock=clock, events=EventHub(),
            timing=Timing(settings.lease_seconds, settings.heartbeat_seconds, settings.extraction_max_wait_seconds),
            consolidation_task="organize",
        )
        runner.related_limit = TOPIC_RELATED_ITEMS
        conn = store.conn()
        wanted = set(jobs)
        if source is not None:
            topic = queue_topic_candidates(conn, source, now=clock.now())
            if topic is not None:
                wanted.add(topic)
        cands = _candidate_ids(conn, wanted)
        if source is not None:  # the whole merge's work, also what a killed earlier run left behind
            everything, still_open = merge_work(conn, source)
            cands |= everything
            wanted |= still_open
        if not cands:
            return "empty"
        done: set[str] = set()
        failures: list[str] = []
        while True:
            outcome = runner.step(force=True, only=wanted - done)
            if outcome is None:
                break
            done.update(outcome.job_ids)
            wanted.update(outcome.spawned)
            if outcome.status not in ("succeeded", "succeeded_no_output"):
                failures.append(outcome.category or outcome.status)
        organized = _organized(conn, cands)
        earlier = _earlier_failure(conn, cands)
        runner.refresh_summary()
    finally:  # also when a signal (`Terminated`) or an error ends a step: no job is left leased
        if runner is not None:
            runner.stop()
            _release(store, owner, clock)
        store.close()
    total = len(cands)
    if failures:
        return f"error: {failures[0]}: {organized} of {total} candidates organized"
    if not wanted <= done:  # another process was consolidating: the candidates stay queued for it
        return f"error: busy: {organized} of {total} candidates organized"
    if earlier is not None:  # a chunk failed in an earlier run: `memory retry JOB_ID` brings it back
        return f"error: {earlier}: {organized} of {total} candidates organized"
    return f"reorganized: {organized} of {total} candidates"
