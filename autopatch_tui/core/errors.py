"""Typed errors. Messages carry safe structure only (contracts §6): never a key, endpoint,
prompt, model reply, provider error body or user quote."""

from __future__ import annotations


class AutopatchError(Exception):
    """Base of every error this package raises on purpose. `turn_id` is set when the error ended
    a turn whose RAW user text was already saved (the turn is then `failed`)."""

    exit_code = 1
    turn_id: str | None = None


class UsageError(AutopatchError):
    exit_code = 2


class ConfigError(AutopatchError):
    """Settings are missing or invalid."""


class NoModelError(ConfigError):
    """No model endpoint is configured."""


class RepoPathError(AutopatchError):
    """A path given as the repository does not exist or is not a directory."""

    exit_code = 2


class MemoryStoreError(AutopatchError):
    """Base of Memory store errors."""


class MemoryDegradedError(MemoryStoreError):
    """The store failed validation; it is left untouched. `diagnostic` says why, `cause` is the
    stable word of `memory status` (e.g. "read_only", "symlink"), when known."""

    exit_code = 3

    def __init__(self, diagnostic: str, cause: str | None = None) -> None:
        super().__init__(diagnostic)
        self.diagnostic = diagnostic
        self.cause = cause


class UnsafePathError(MemoryStoreError):
    """A Memory or per-user path that must not be used as it is; `cause` as in `memory status`."""

    cause = "unreadable"

    def __init__(self, message: str, path: object) -> None:
        super().__init__(message)
        self.path = path


class SymlinkRefusedError(UnsafePathError):
    """A symlink below `<repo>/.autopatch-j/` or `$AUTOPATCH_HOME`: never followed (contracts §1)."""

    cause = "symlink"


class ReadOnlyPathError(UnsafePathError):
    """A file or folder the app must write is not writable for this user."""

    cause = "read_only"


class MemorySchemaError(MemoryStoreError):
    """A healthy store lost an invariant at run time (active thread, meta row, catalog)."""

    exit_code = 3


class MemoryBusyError(MemoryStoreError):
    """SQLite stayed locked past the busy timeout."""


class MemoryNotFoundError(MemoryStoreError):
    """No item, thread or turn with that ID."""


class MemoryFencedError(MemoryStoreError):
    """A lease owner or clear generation is no longer valid; the result must not be written."""


class TurnLeaseLostError(MemoryFencedError):
    """An open turn's lease ran out while its request was still running (the owner stalled or
    could not renew it), and another Memory process recovered the turn as `interrupted`."""


class StoreRetiredError(MemoryStoreError):
    """The store was merged into another one; writes here must fail loudly."""

    def __init__(self, store: str, holder: str | None) -> None:
        where = f" into {holder}" if holder else ""
        super().__init__(f"this Memory store ({store}) was merged{where}; it is retired and read-only")
        self.store = store
        self.holder = holder


class MemoryContractError(AutopatchError):
    """Model output or a requested operation violates the Memory contract. `rule` names the rule."""

    def __init__(self, rule: str, detail: str = "") -> None:
        super().__init__(f"{rule}: {detail}" if detail else rule)
        self.rule = rule
        self.detail = detail
