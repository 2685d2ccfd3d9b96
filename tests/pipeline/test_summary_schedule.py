"""The review summary is re-rendered off the commit path: a consolidation step only marks it due;
the worker renders it coalesced (at most once per interval, however many commits) and the exit
flush / `close` render what is still due."""

from __future__ import annotations

from autopatch_tui.core.pipeline.summary_schedule import SummarySchedule
from tests.support.pipeline_helpers import add_turn, cand, create_all, ext_reply, src


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_commits_are_coalesced_into_one_render_per_interval() -> None:
    clock, renders = FakeTime(), []
    s = SummarySchedule(lambda: renders.append(clock.now), interval=3.0, monotonic=clock)
    assert s.run_if_due() is None and renders == []  # nothing due: nothing rendered
    s.mark()
    assert s.run_if_due() is None and renders == [100.0]  # the first refresh runs at once
    for _ in range(5):  # a burst of commits within the interval
        s.mark()
        clock.now += 0.5
        wait = s.run_if_due()
        assert wait is not None and 0 < wait <= 3.0
    assert renders == [100.0]
    clock.now = 103.0
    assert s.run_if_due() is None and renders == [100.0, 103.0]  # one render for the whole burst
    assert s.run_if_due() is None and renders == [100.0, 103.0]


def test_flush_renders_only_what_is_due() -> None:
    clock, renders = FakeTime(), []
    s = SummarySchedule(lambda: renders.append(clock.now), interval=3.0, monotonic=clock)
    s.flush()
    assert renders == []
    s.mark()
    s.run_if_due()
    s.mark()
    s.flush()  # within the interval, but exit/close does not wait
    assert renders == [100.0, 100.0] and not s.due


def test_a_consolidation_step_does_not_render_and_close_does(make_manager, llm_stub) -> None:
    mgr = make_manager()
    llm_stub.default("consolidation", create_all)
    t = add_turn(mgr, "From now on always use tabs.", "ok")
    llm_stub.script("extraction", ext_reply(cand(src(t, "user", "always use tabs"), subject="indentation style")))
    while mgr.runner.step(force=True) is not None:  # what the worker's steps do, without its loop
        pass
    assert mgr.list_items()  # the item was committed ...
    assert not mgr.paths.summary.exists()  # ... and the commit path did not render the summary
    assert mgr.runner.summary_schedule.due and mgr.status().summary.status == "missing"
    mgr.close()
    assert "indentation style" in mgr.paths.summary.read_text(encoding="utf-8")
