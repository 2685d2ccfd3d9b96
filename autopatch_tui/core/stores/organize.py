"""Post-merge organize (FR-059): the imported candidates run through the consolidation logic
against the target's related items, with the `organize` task header. A failure never fails the
merge: the jobs stay in the target's queue and the status says what happened."""

from __future__ import annotations

from pathlib import Path

from autopatch_tui.core.clock import Clock
from autopatch_tui.core.events import EventHub
from autopatch_tui.core.manager import make_owner_id
from autopatch_tui.core.memory.bootstrap import StoreIdentity
from autopatch_tui.core.memory.store import MemoryStore
from autopatch_tui.core.paths import StorePaths
from autopatch_tui.core.pipeline.model_io import MemoryModel
from autopatch_tui.core.pipeline.runner import PipelineRunner, Timing
from autopatch_tui.core.settings import Settings


def organize_jobs(target_db: Path, jobs: list[str], settings: Settings, model: MemoryModel, *, clock: Clock) -> str:
    if not target_db.is_file():  # never bootstrap a store here
        return "error: target missing"
    store = MemoryStore.open(StorePaths.for_db(target_db), StoreIdentity(store_name="organize"), clock=clock)
    try:
        if not store.healthy:
            return "error: target degraded"
        runner = PipelineRunner(
            store, model, owner=make_owner_id(), clock=clock, events=EventHub(),
            timing=Timing(settings.lease_seconds, settings.heartbeat_seconds, settings.extraction_max_wait_seconds),
            consolidation_task="organize",
        )
        done: set[str] = set()
        failures: list[str] = []
        while True:
            outcome = runner.step(force=True, only=set(jobs) - done)
            if outcome is None:
                break
            done.update(outcome.job_ids)
            if outcome.status not in ("succeeded", "succeeded_no_output"):
                failures.append(outcome.category or outcome.status)
        runner.refresh_summary()
        runner.stop()
    finally:
        store.close()
    if failures:
        return f"error: {failures[0]}"
    if not set(jobs) <= done:  # another process was consolidating: the candidates stay queued for it
        return "error: busy"
    return "reorganized"
