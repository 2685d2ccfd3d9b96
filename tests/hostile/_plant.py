"""A repository that runs code as the user if anything imports from it: modules named like ours and
like the standard library's, each touching a marker file when imported."""

from __future__ import annotations

from pathlib import Path

_BODY = "import pathlib\npathlib.Path({marker!r}).touch()\n"


def plant_modules(repo: Path, marker: Path) -> None:
    """`autopatch_tui/` (with `cli/`), `json.py` and `sqlite3/` at the top of `repo`."""
    body = _BODY.format(marker=str(marker))
    for package in ("autopatch_tui", "autopatch_tui/cli", "sqlite3"):
        (repo / package).mkdir(parents=True, exist_ok=True)
        (repo / package / "__init__.py").write_text(body)
    (repo / "autopatch_tui" / "cli" / "check_later.py").write_text(body + "def main(argv):\n    return 0\n")
    (repo / "json.py").write_text(body)
