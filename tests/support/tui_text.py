"""What a Pilot test reads off the screen, shared by the screen test modules."""

from __future__ import annotations

import html
import re
from typing import Any

from rich.text import Text
from textual.app import App
from textual.widgets import Static


def plain(screen: Any, selector: str) -> str:
    """The plain text of the Static `selector` on `screen` (never parsed as markup)."""
    content = screen.query_one(selector, Static).content
    return content.plain if isinstance(content, Text) else str(content)


def screen_text(app: App) -> str:
    """Everything the terminal shows, as plain text (from the SVG screenshot)."""
    svg = app.export_screenshot()
    return html.unescape("".join(re.findall(r"<text[^>]*>(.*?)</text>", svg, flags=re.DOTALL))).replace("\xa0", " ")
