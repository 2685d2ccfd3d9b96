"""The one current audit of an app session (`ReviewState`): which workspace is open, its saved
drafts in `.autopatch-j/audit.json`, and their restore at the next start.

Its own module so that building the app's services imports nothing of the audit itself (the
workspace, patching, the scanner and its analyzers, the `regex` engine: ~30-80 ms of the first
frame's CPU): those are imported when an audit starts, is restored or is ended (issue 33)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from autopatch_tui.core.paths import StorePaths

if TYPE_CHECKING:
    from autopatch_tui.core.repair.workspace import AuditWorkspace


log = logging.getLogger(__name__)


def _drafts() -> ModuleType:
    """`drafts_file` (its pydantic models), imported when an audit is saved, restored or ended."""
    from autopatch_tui.core.repair import drafts_file

    return drafts_file


def _w() -> ModuleType:
    from autopatch_tui.core.repair import workspace

    return workspace


class ReviewState:
    """The one current audit workspace of an app session (or none). With `persist_to(repo)` the
    current audit is saved to `.autopatch-j/audit.json` after every change and `restore` reads it
    back at the next start."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._workspace: AuditWorkspace | None = None
        self._generation = 0  # +1 at each end(): a request can tell that /new or /reset ran meanwhile
        self._repo: Path | None = None
        self.persist_error = ""  # why the current audit's drafts are not kept across a restart ("" = they are)

    def persist_to(self, repo: Path) -> None:
        """Keep the current audit in `repo`'s `.autopatch-j/` (the app; tests and the CLI keep it in memory)."""
        self._repo = repo

    def _save(self, ws: AuditWorkspace) -> None:
        """The listener of the current workspace (called under its lock, so saves keep their order)."""
        if self._repo is None or self._workspace is not ws:
            return
        try:
            _drafts().save(self._repo, _drafts().document(ws.thread_id, ws))
            self.persist_error = ""
        except _drafts().DraftsFileError as exc:
            if str(exc) != self.persist_error:
                log.warning("audit drafts not saved: %s", type(exc).__name__)
            self.persist_error = str(exc)

    def pending_patches(self) -> int:
        ws = self.workspace
        return ws.count(_w().PATCHED) if ws is not None else 0

    def restore(self, thread_id: str | None) -> str:
        """At the start of a session: make the saved audit current again when it belongs to the
        active thread (a saved audit of another thread ended with it: its file is removed, and the
        note says how many pending patches went). Returns what the chat says about it ("" when
        there was nothing to say)."""
        if self._repo is None:
            return ""
        try:  # the usual start: no saved audit, nothing to validate (no pydantic import; issue 33)
            os.lstat(StorePaths(self._repo).saved_audit)
        except FileNotFoundError:
            return ""
        except OSError:
            pass  # unreadable: `load` says why
        try:
            saved = _drafts().load(self._repo)
        except _drafts().DraftsFileError as exc:
            text = str(exc)
            return f"{text[:1].upper()}{text[1:]}."
        if saved is None:
            return ""
        if not thread_id or saved.thread_id != thread_id:  # its thread ended (`autopatch-tui new` meanwhile)
            _drafts().remove(self._repo)
            gone = sum(1 for s in saved.states if s.status == _w().PATCHED)
            return (f"The saved audit of an earlier thread was closed; {gone} pending patch(es) were not applied."
                    if gone else "")
        ws = _w().workspace_of(saved)
        checked = ws.recheck_drafts(self._repo)
        with self._lock:
            if self._workspace is not None:
                return ""  # an audit started meanwhile: it is the current one
            self._workspace = ws
        ws.listen(self._save)
        with ws._lock:
            self._save(ws)
        pending = ws.count(_w().PATCHED)
        text = (f"The open audit of {', '.join(ws.scope) or 'the repository'} was restored: {pending} pending "
                "patch(es)" + (f", {len(checked.stale)} stale" if checked.stale else "") + " (/patch list).")
        if checked.applied:
            text += f" Applied before the restart (not verified again): {', '.join(checked.applied)}."
        if checked.rebased:
            text += (f" Re-based on files that changed since the drafts: {', '.join(checked.rebased)} "
                     "(/patch show ID).")
        if checked.stale:
            text += f" Stale (their text changed): {', '.join(checked.stale)}; /patch discard ID, then /audit again."
        return text

    @property
    def workspace(self) -> AuditWorkspace | None:
        with self._lock:
            return self._workspace

    def require(self) -> AuditWorkspace:
        ws = self.workspace
        if ws is None:
            raise _w().WorkspaceError("no audit is open; start one with /audit [@path]")
        return ws

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def start(self, workspace: AuditWorkspace, *, since: int | None = None,
              still_current: Callable[[], bool] | None = None) -> bool:
        """Make `workspace` the current audit. With `since` (a `generation` read when the request
        began), refused when the review state ended after it; with `still_current`, refused when
        it answers False (checked under the lock). A refused request keeps its workspace to itself.
        True when the workspace became current."""
        with self._lock:
            if since is not None and since != self._generation:
                return False
            if still_current is not None and not still_current():
                return False
            previous, self._workspace = self._workspace, workspace
        if previous is not None:
            previous.listen(None)
        workspace.listen(self._save)
        with workspace._lock:
            self._save(workspace)
        return True

    def end(self) -> bool:
        """End the current audit (on /new and /reset); True when there was one."""
        with self._lock:
            ended, self._workspace = self._workspace, None
            self._generation += 1
        if ended is not None:
            ended.listen(None)
        if self._repo is not None:
            _drafts().remove(self._repo)
            self.persist_error = ""
        return ended is not None
