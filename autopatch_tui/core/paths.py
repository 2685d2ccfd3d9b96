"""Where a project's Memory files live, and private file creation (0600 files, 0700 folders)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from autopatch_tui.core import constants as C


@dataclass(frozen=True)
class StorePaths:
    """The files of one project store under `<repo>/.autopatch-j/`."""

    repo: Path

    @property
    def state_dir(self) -> Path:
        return self.repo / C.STATE_DIR_NAME

    @property
    def db(self) -> Path:
        return self.state_dir / C.DB_FILE_NAME

    @property
    def exports_dir(self) -> Path:
        return self.state_dir / C.EXPORT_DIR_NAME

    @property
    def summary(self) -> Path:
        return self.state_dir / C.SUMMARY_FILE_NAME

    @property
    def legacy_json(self) -> Path:
        return self.state_dir / C.LEGACY_JSON_NAME

    def db_artifacts(self) -> list[Path]:
        """memory.db and its side files (-wal, -shm, -journal)."""
        return [self.db] + [self.db.with_name(self.db.name + s) for s in C.DB_SIDE_SUFFIXES]

    @classmethod
    def for_db(cls, db_path: Path) -> StorePaths:
        """Paths for a loose `memory.db` (its folder is taken as the state dir)."""
        return cls(repo=db_path.parent.parent)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 for the folders this call creates."""
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)
    return path


def write_private_text(path: Path, text: str) -> None:
    """Atomically replace `path` with `text` (0600), via a temp file in the same folder."""
    ensure_private_dir(path.parent)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
