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
target's consolidation (`busy`)."""

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
    return f"reorganized: {organized} of {total} candidates"
