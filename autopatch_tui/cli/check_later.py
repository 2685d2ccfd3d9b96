"""The deep store check a command could not finish within its bound after the answer, continued in
a process of its own, as `git gc --auto` detaches: low priority (nice 10), its own session (no
terminal, output to /dev/null), one at a time per store (`check_lock`), bounded by
`LATER_SECONDS`. It opens the store as a command does (the open-time check first, so it never
creates a side file beside a degraded store), runs the deep check, remembers the verdict in
`$AUTOPATCH_HOME/store-checks.json`, and exits. The next command or app start finds the verdict.

Started by `continue_later` isolated from the repository it was asked in (contracts §1): `python -I`
(no working folder, script folder, `PYTHON*` variables or user site on `sys.path`) with `/` as its
working folder, so a repository's `autopatch_tui/`, `json.py` or `sqlite3/` never shadows ours; the
folder our own package was imported from is appended to `sys.path` (after the standard library and
site-packages), so an install the parent found only through `PYTHONPATH` still works. By hand:
`python -I -m autopatch_tui.cli.check_later DB HOME` (absolute paths)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

LATER_SECONDS = 600.0
LOCK_DIR = "store-checks"
HELD = -1  # `check_lock`: another process holds the lock
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def check_lock(home: Path, db: Path, *, wait: bool = False) -> int | None:
    """An exclusive lock on this store's check (a file under `home`): its descriptor (the caller
    closes it to release the lock), HELD when another process holds it (`wait`: block until it is
    free), or None when no lock can be had here (a read-only home, a link: check without one)."""
    import fcntl

    from autopatch_tui.core.errors import AutopatchError
    from autopatch_tui.core.ids import sha256_hex
    from autopatch_tui.core.paths import create_private_file

    name = sha256_hex(os.path.realpath(db).encode("utf-8", "surrogateescape"))[:24]
    path = home / LOCK_DIR / f"{name}.lock"
    try:
        create_private_file(home, path)
        fd = os.open(path, os.O_RDWR | _NOFOLLOW)
    except (OSError, AutopatchError):
        return None  # no lock to be had (a read-only home, a link): the caller checks without one
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except OSError:
        os.close(fd)
        return HELD
    return fd


# The child's first code: leave the caller's working folder, find our package where the parent
# found it (last on the path, so it shadows nothing), run the check.
_BOOT = ("import os, sys\n"
         "os.chdir('/')\n"
         "sys.path.append(sys.argv[1])\n"
         "from autopatch_tui.cli.check_later import main\n"
         "raise SystemExit(main(sys.argv[2:]))\n")


def isolated_argv(db: Path, home: Path) -> list[str]:
    """The detached check's command line (see the module doc); paths made absolute, since the child
    runs in `/`."""
    import autopatch_tui

    package_root = os.path.dirname(os.path.dirname(os.path.abspath(autopatch_tui.__file__)))
    return [sys.executable, "-I", "-c", _BOOT, package_root, os.path.abspath(db), os.path.abspath(home)]


def continue_later(db: Path, home: Path) -> int | None:
    """Start the detached check of `db`; its process ID, or None when it could not be started."""
    argv = isolated_argv(db, home)
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return None
    try:
        actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
                   (os.POSIX_SPAWN_DUP2, devnull, 2)]
        return os.posix_spawn(sys.executable, argv, dict(os.environ), file_actions=actions, setsid=True)
    except OSError:
        return None
    finally:
        os.close(devnull)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        return 2
    db, home = Path(argv[0]), Path(argv[1])
    try:
        os.nice(10)
    except OSError:
        pass
    from autopatch_tui.core.logs import setup_file_log
    from autopatch_tui.core.settings import load_settings

    try:
        setup_file_log(load_settings())
    except Exception:  # noqa: BLE001 - no log: the check still runs
        pass
    lock = check_lock(home, db, wait=True)
    try:
        if not os.path.isfile(db) or os.path.getsize(db) == 0:
            return 0  # nothing to check (and nothing is ever created here)
        from autopatch_tui.core.memory.bootstrap import StoreIdentity
        from autopatch_tui.core.memory.store import MemoryStore
        from autopatch_tui.core.memory.verdicts import VerdictMemo
        from autopatch_tui.core.paths import StorePaths

        store = MemoryStore.open(StorePaths.for_db(db), StoreIdentity(store_name="check"), memo=VerdictMemo(home))
        try:
            store.verify(LATER_SECONDS)
        finally:
            store.close()
    finally:
        if lock is not None and lock != HELD:
            os.close(lock)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
