"""Paging through a thread's turns: the reads from the manager (run in thread workers) of a window
of turns, in calls of at most `MAX_WINDOW_FETCH`, and of the page that holds a given turn; and how a
page that came back joins the loaded window."""

from __future__ import annotations

from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory.history import ThreadInfo, TurnInfo

MAX_WINDOW_FETCH = 500  # one manager call returns at most this many turns (history.MAX_PAGE)


def read_turns(manager: MemoryManager, thread_id: str, offset: int, count: int) -> list[TurnInfo]:
    """Up to `count` turns of the thread from `offset`, fetched `MAX_WINDOW_FETCH` at a time."""
    turns: list[TurnInfo] = []
    while count > 0:  # the manager returns at most MAX_WINDOW_FETCH per call
        chunk = manager.thread_turns(thread_id, offset=offset + len(turns), limit=min(count, MAX_WINDOW_FETCH))
        turns += chunk
        count -= len(chunk)
        if len(chunk) < MAX_WINDOW_FETCH:
            break
    return with_memory_used(manager, turns)


def with_memory_used(manager: MemoryManager, turns: list[TurnInfo]) -> list[TurnInfo]:
    """The turns with the Memory items that reached each answer (issue 31.3; one bounded read of
    the side file per page). A file that cannot be read leaves them as they are."""
    import dataclasses

    from autopatch_tui.core.errors import AutopatchError
    from autopatch_tui.core.memory.memory_used import for_turns

    if not turns:
        return turns
    try:
        used = for_turns(manager.paths, [t.id for t in turns])
    except (OSError, AutopatchError):
        return turns
    return [dataclasses.replace(t, memory_used=tuple(used[t.id])) if t.id in used else t for t in turns]


def read_threads_and_window(manager: MemoryManager, thread_id: str | None, offset: int,
                            count: int) -> tuple[list[ThreadInfo], list[TurnInfo] | None]:
    """Every thread, and the thread's window read again (None when there is no such thread now)."""
    threads = manager.threads()
    turns: list[TurnInfo] | None = None
    if thread_id is not None and any(t.id == thread_id for t in threads):
        turns = read_turns(manager, thread_id, offset, count)
    return threads, turns


def find_turn_page(manager: MemoryManager, turn_id: str, page_size: int) -> tuple[TurnInfo, int, list[TurnInfo]]:
    """The turn, and the offset and turns of a page of its thread that holds it (centred on it when
    the thread's sequence has no gaps)."""
    info = manager.turn_info(turn_id)
    offset = max(0, info.sequence - 1 - page_size // 2)  # sequences count from 1 in a thread
    turns = manager.thread_turns(info.thread_id, offset=offset, limit=page_size)
    if not any(t.id == turn_id for t in turns):  # gaps in the sequence: walk the pages
        offset = 0
        while True:
            turns = manager.thread_turns(info.thread_id, offset=offset, limit=page_size)
            if not turns or any(t.id == turn_id for t in turns):
                break
            offset += page_size
    return info, offset, with_memory_used(manager, turns)


def merge_page(window: list[TurnInfo], start: int, page: list[TurnInfo], offset: int,
               how: str) -> tuple[list[TurnInfo], int]:
    """The loaded window and its start once `page` (read from `offset`) is appended, prepended or
    replaces it; turns already in the window are not added twice."""
    if how == "append":
        known = {t.id for t in window}
        return window + [t for t in page if t.id not in known], start
    if how == "prepend":
        known = {t.id for t in window}
        return [t for t in page if t.id not in known] + window, offset
    return list(page), offset  # replace
