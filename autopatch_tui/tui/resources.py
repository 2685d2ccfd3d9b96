"""Where the `.tcss` files are: packaged as `autopatch_tui/styles` in the wheel, `styles/` at the
top of a source checkout."""

from __future__ import annotations

from pathlib import Path


def styles_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    packaged = here / "styles"
    if packaged.is_dir():
        return packaged
    return here.parent / "styles"


def style(name: str) -> str:
    return str(styles_dir() / name)
