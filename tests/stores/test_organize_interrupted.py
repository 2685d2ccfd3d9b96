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


# --- issue #24 item 5: a merge run again after a kill during organize finishes it, truthfully --------

class Killed(BaseException):
    """The process died here (kill -9: nothing after this line of the organize step runs)."""


N = 30  # two chunks: the organize job keeps 24, a chunk job of 6 is split off before the first call


@pytest.mark.parametrize("kill_at", ["before_organize", "first_call", "second_call"])
@pytest.mark.parametrize("leases", ["released", "left_leased"])
def test_a_merge_run_again_after_a_kill_finishes_organize_and_says_so(tmp_path, open_mgr, clock, model_settings,
                                                                       llm_stub, monkeypatch, kill_at, leases):
    from autopatch_tui.core.stores import organize as organize_module
    from tests.stores.test_organize_scale import _conflicting_stores
    from tests.support.pipeline_helpers import revise_holders

    na, nb, bdb, _ = _conflicting_stores(tmp_path, open_mgr, clock, N)
    llm_stub.default("organize", revise_holders)
    llm_stub.default("consolidation_repair", revise_holders)
    real_call = MemoryModel.call
    calls: list[str] = []

    def dying(self, task, *args, **kwargs):
        calls.append(task)
        if kill_at == {1: "first_call", 2: "second_call"}.get(len(calls)):
            raise Killed
        return real_call(self, task, *args, **kwargs)

    with monkeypatch.context() as mp:
        mp.setattr(MemoryModel, "call", dying)
        if leases == "left_leased":  # kill -9: no `finally` hands the lease back
            mp.setattr(organize_module, "_release", lambda *a, **k: None)
        if kill_at == "before_organize":
            mp.setattr(organize_module, "organize_jobs", lambda *a, **k: (_ for _ in ()).throw(Killed()))
        with pytest.raises(Killed):
            service_for(model_settings, clock=clock).merge(na, nb)

    again = service_for(model_settings, clock=clock).merge(na, nb)
    if leases == "left_leased" and kill_at != "before_organize":
        # the killed process still holds a chunk until its lease runs out: the merge says so, truthfully
        assert again.reorg_status.startswith("error: busy: ") and again.reorg_status.endswith(f" of {N} candidates "
                                                                                             "organized")
        clock.advance(model_settings.lease_seconds + 1)
        again = service_for(model_settings, clock=clock).merge(na, nb)
    assert again.reorg_status == f"reorganized: {N} of {N} candidates"
    pending = rows(bdb, "SELECT count(*) AS n FROM memory_candidates WHERE status = 'pending'")
    assert pending == [{"n": 0}]
    revised = rows(bdb, "SELECT count(*) AS n FROM memory_items WHERE status = 'active'"
                        " AND subject LIKE 'tool choice %' AND statement LIKE '%version two.'")
    assert revised == [{"n": N}]
