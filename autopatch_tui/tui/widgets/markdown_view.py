"""Saved answers as Markdown shows them. The repair summaries are plain lines (a list of findings,
then "Pending patches: …" and "Next: …"); in Markdown a line right after a list item is a lazy
continuation of that item, so the closing lines ran into the last bullet. Only the view changes:
a blank line is put between a list and a plain line that follows it, and between the plain lines
after a list (each closing line is its own paragraph); the saved text stays as is."""

from __future__ import annotations

import re

LIST_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def markdown_view(text: str) -> str:
    out: list[str] = []
    in_list = False
    after_list = False  # plain lines after a list: one paragraph each
    in_fence = False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
            in_list = after_list = False
        elif not in_fence:
            if LIST_ITEM.match(line):
                in_list, after_list = True, False
            elif not line.strip():
                if in_list:
                    after_list = True
                in_list = False
            elif in_list and not line.startswith((" ", "\t")):
                out.append("")  # the list ends here
                in_list, after_list = False, True
            elif after_list and out and out[-1].strip():
                out.append("")
        out.append(line)
    return "\n".join(out)
