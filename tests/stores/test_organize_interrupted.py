"""Organize ended by a signal (SIGTERM/SIGHUP raise `Terminated` in the main thread, a BaseException)
in the middle of its model call: the runner stops and the organize job it leased is handed back —
not left `leased`, its claim not spent — before the target store closes."""

from __future__ import annotations

import signal

import pytest

from autopatch_tui.cli.signals import Terminated
from autopatch_tui.core.pipeline.model_io import MemoryModel
from tests.support.store_helpers import rows, service_for


def test_a_signal_during_organize_hands_its_job_back(pair, model_settings, llm_stub, clock, monkeypatch):
    calls: list[str] = []

    def terminated(self, task, *args, **kwargs):
        calls.append(task)
        raise Terminated(signal.SIGTERM)

    monkeypatch.setattr(MemoryModel, "call", terminated)
    with pytest.raises(Terminated):
        service_for(model_settings, clock=clock).merge(pair.na, pair.nb)
    assert calls == ["organize"]
    organize_jobs = rows(pair.bdb, "SELECT status, attempts, lease_owner FROM memory_jobs"
                                   " WHERE kind = 'consolidation' AND id IN (SELECT consolidation_job_id"
                                   " FROM memory_candidates WHERE statement = 'Use tabs.')")
    assert organize_jobs == [{"status": "pending", "attempts": 0, "lease_owner": None}]
