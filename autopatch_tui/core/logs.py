"""The log file: `$AUTOPATCH_HOME/logs/autopatch.log` (or the platformdirs data dir when
AUTOPATCH_HOME is unset, as `settings.default_home` resolves it), rotated, private (0600 files in a
0700 folder), never opened through a symlink.

Only the package's own loggers (`autopatch_tui.*`) write here; the HTTP and SDK loggers, which
would log endpoints and prompts, never reach it. Every record passes `SafeRecords` first
(contracts §6): an exception — as an argument or as `exc_info` — is reduced to its type and safe
attributes (category, status, rule); its message and the provider body behind it never appear;
the configured key and endpoint are masked if anything tried to log them. With AUTOPATCH_DEBUG the
level is DEBUG and tracebacks show their frames (file, line, function) — still no message text."""

from __future__ import annotations

import logging
import os
import stat
import traceback
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autopatch_tui.core.settings import Settings

LOGGER_NAME = "autopatch_tui"
LOG_DIR_NAME = "logs"
LOG_FILE_NAME = "autopatch.log"
MAX_LOG_BYTES = 1_000_000
LOG_BACKUPS = 3
REDACTED = "[redacted]"
FORMAT = "%(asctime)s %(levelname)s %(name)s pid=%(process)d: %(message)s"
DEBUG_FORMAT = "%(asctime)s %(levelname)s %(name)s pid=%(process)d %(threadName)s %(module)s:%(lineno)d: %(message)s"
# safe attributes of an exception: our own (categories, HTTP status, rule names) and SQLite's result
# code name (`SQLITE_BUSY`, `SQLITE_IOERR_…`: an enum, while the message may quote SQL or a path)
SAFE_ATTRS = ("category", "status_code", "rule", "phase", "stage", "sqlite_errorname")

_installed: PrivateRotatingFileHandler | None = None


def log_path(home: Path) -> Path:
    return home / LOG_DIR_NAME / LOG_FILE_NAME


def describe_exception(exc: BaseException) -> str:
    """An exception as safe structure: its type and its safe attributes, never its message."""
    parts = [type(exc).__name__]
    for attr in SAFE_ATTRS:
        value = getattr(exc, attr, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
            parts.append(f"{attr}={value}")
    return " ".join(parts)


def _frames(tb: TracebackType | None) -> str:
    return " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}"
                       for f in reversed(traceback.extract_tb(tb)))


class SafeRecords(logging.Filter):
    """Reduces a record to safe structure before any handler formats it (see the module docstring)."""

    def __init__(self, secrets: tuple[str, ...] = (), *, debug: bool = False) -> None:
        super().__init__()
        self.secrets = tuple(s for s in secrets if s and len(s) >= 4)
        self.debug = debug

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(describe_exception(a) if isinstance(a, BaseException) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {k: describe_exception(v) if isinstance(v, BaseException) else v
                           for k, v in record.args.items()}
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            message = f"{record.msg!s} (unformattable arguments)"
        if record.exc_info and record.exc_info[1] is not None:
            _, exc, tb = record.exc_info
            message += f" [{describe_exception(exc)}]"
            if self.debug:
                message += f" at {_frames(tb)}"
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        for secret in self.secrets:
            message = message.replace(secret, REDACTED)
        record.msg, record.args = message, None
        return True


class PrivateRotatingFileHandler(logging.FileHandler):
    """The standard library's RotatingFileHandler, with files created 0600 and never opened through
    a symlink. Its rotation (`shouldRollover`, `doRollover`, as in `logging.handlers`) is repeated
    here because importing `logging.handlers` brings sockets, pickling and queues into every
    command (issue 23)."""

    def __init__(self, filename: Path, *, maxBytes: int, backupCount: int, encoding: str) -> None:  # noqa: N803
        self.maxBytes = maxBytes
        self.backupCount = backupCount
        super().__init__(filename, mode="a", encoding=encoding)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            if self.shouldRollover(record):
                self.doRollover()
            super().emit(record)
        except Exception:  # noqa: BLE001 - logging's own convention: report, never raise
            self.handleError(record)

    def shouldRollover(self, record: logging.LogRecord) -> bool:  # noqa: N802
        if os.path.exists(self.baseFilename) and not os.path.isfile(self.baseFilename):
            return False  # never roll over anything but a regular file
        if self.stream is None:
            self.stream = self._open()
        if self.maxBytes > 0:
            self.stream.seek(0, 2)
            return self.stream.tell() + len(f"{self.format(record)}\n") >= self.maxBytes
        return False

    def doRollover(self) -> None:  # noqa: N802
        if self.stream:
            self.stream.close()
            self.stream = None  # type: ignore[assignment]
        for i in range(self.backupCount - 1, 0, -1):
            src, dst = f"{self.baseFilename}.{i}", f"{self.baseFilename}.{i + 1}"
            if os.path.exists(src):
                if os.path.exists(dst):
                    os.remove(dst)
                os.rename(src, dst)
        if self.backupCount > 0:
            dst = f"{self.baseFilename}.1"
            if os.path.exists(dst):
                os.remove(dst)
            os.rename(self.baseFilename, dst)
        self.stream = self._open()

    def _open(self):  # type: ignore[no-untyped-def]
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(self.baseFilename, flags, 0o600)
        try:
            os.fchmod(fd, 0o600)  # a file another tool created wider; one we may not change is not used
        except OSError:
            os.close(fd)
            raise
        return os.fdopen(fd, "a", encoding=self.encoding or "utf-8", errors=self.errors)


def _private_log_dir(path: Path) -> bool:
    """Create the logs folder 0700 (the home too, when missing); False when it is a symlink or
    cannot be made, then nothing is written."""
    from autopatch_tui.core.paths import ensure_private_dir

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        try:
            ensure_private_dir(path)
        except OSError:
            return False
        return True
    except OSError:
        return False
    if not stat.S_ISDIR(mode):
        return False  # a symlink (or a file) where the folder should be
    try:
        os.chmod(path, 0o700)
    except OSError:
        return False  # not ours to make private: no log rather than a readable one
    return True


def _secrets(settings: Settings) -> tuple[str, ...]:
    out: list[str] = []
    if settings.llm_api_key is not None:
        out.append(settings.llm_api_key.get_secret_value())
    if settings.llm_base_url:
        url = settings.llm_base_url.rstrip("/")
        out.append(url)
        rest = url.split("://", 1)[-1]
        out.append(rest)  # host[:port]/path, however it is written
        if "/" in rest:
            out.append(rest.split("/", 1)[1])  # the endpoint's path alone
    return tuple(sorted(set(out), key=len, reverse=True))


def guard_handler(handler: logging.Handler) -> None:
    """Make `handler` (e.g. the CLI's stderr handler) see safe records only, whatever logger they
    come from — also when no log file could be set up to reduce them first."""
    if not any(isinstance(f, SafeRecords) for f in handler.filters):
        handler.addFilter(SafeRecords())


def setup_file_log(settings: Settings) -> Path | None:
    """Send the package's log records to the log file of `settings.home`. Idempotent: a second
    call for the same file keeps one handler (a new home or mode replaces it). Returns the file's
    path, or None when it cannot be written (the app and CLI work on without a log)."""
    global _installed
    path = log_path(settings.home)
    logger = logging.getLogger(LOGGER_NAME)
    level = logging.DEBUG if settings.debug else logging.INFO
    logger.setLevel(level)
    old = _installed
    for h in logging.getLogger().handlers:  # the terminal's handler (see `guard_handler`) learns the secrets
        for f in h.filters:
            if isinstance(f, SafeRecords):
                f.secrets = SafeRecords(_secrets(settings)).secrets
    same_file = old is not None and old.baseFilename == str(path.absolute())
    if old is not None and same_file and getattr(old, "autopatch_debug", None) == settings.debug:
        for f in old.filters:
            if isinstance(f, SafeRecords):
                f.secrets = SafeRecords(_secrets(settings)).secrets
        return path
    if old is not None:
        logger.removeHandler(old)
        old.close()
        _installed = None
    if not _private_log_dir(path.parent):
        return None
    try:
        handler = PrivateRotatingFileHandler(path, maxBytes=MAX_LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8")
    except OSError:
        return None
    handler.autopatch_debug = settings.debug  # type: ignore[attr-defined]
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(DEBUG_FORMAT if settings.debug else FORMAT))
    handler.addFilter(SafeRecords(_secrets(settings), debug=settings.debug))
    logger.addHandler(handler)
    _installed = handler
    return path
