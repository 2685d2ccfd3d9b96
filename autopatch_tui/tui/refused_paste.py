"""Where a paste too large for the prompt goes, so nothing the user pasted is lost: a private file
`<home>/refused-pastes/<UTC time>-<n>.txt` (folder 0700, file 0600), written as the paste arrives
(a paste typed as keystrokes comes in many pieces). Its path is shown to the user; its text never is
logged."""

from __future__ import annotations

import os
import time
from pathlib import Path

from autopatch_tui.core.paths import ensure_private_dir

FOLDER = "refused-pastes"


class RefusedPaste:
    """One refused paste's file, created with its first piece."""

    def __init__(self, home: Path, first: str) -> None:
        folder = ensure_private_dir(Path(home) / FOLDER)
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        for n in range(1000):
            path = folder / f"{stamp}-{n}.txt"
            try:
                self._fd = os.open(path, flags, 0o600)
            except FileExistsError:
                continue
            break
        else:  # pragma: no cover - a thousand refused pastes in one second
            raise FileExistsError(str(folder))
        self.path = path
        self.chars = 0
        self.add(first)

    def add(self, text: str) -> None:
        data = text.encode("utf-8", "surrogatepass")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]
        self.chars += len(text)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
