"""The app's first frame imports only what it draws (issue 23, deliverable 3): building the app
and its services on a store imports no pydantic, no model SDK, no pipeline runner, no agent or
repair workflow, no Markdown parser and no saved-audit file format — each of those is imported
with its first use, after the first frame. One fresh process reports what got loaded."""

from __future__ import annotations

import json
import subprocess
import sys

LATER = ("pydantic", "pydantic_core", "openai", "httpx", "markdown_it",
         "autopatch_tui.core.pipeline.runner", "autopatch_tui.core.agent.chat", "autopatch_tui.core.repair.workflows",
         "autopatch_tui.core.repair.drafts_file", "autopatch_tui.core.recall.terms",
         # issue 33: the audit itself (workspace, patching, the scanner's analyzers) and the search engine
         "autopatch_tui.core.repair.workspace", "autopatch_tui.core.repair.scanner", "regex")

PROBE = """
import json, sys
from pathlib import Path
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.settings import load_settings
from autopatch_tui.tui.app import AutopatchApp
from autopatch_tui.tui.services import Services
settings = load_settings()
app = AutopatchApp(Services(MemoryManager.open(Path.cwd(), settings), settings))
print(json.dumps([m for m in LATER if m in sys.modules]))
app.services.manager.close()
"""


def test_building_the_app_imports_nothing_its_first_frame_does_not_draw(repo, isolated_env) -> None:
    out = subprocess.run([sys.executable, "-c", f"LATER = {LATER!r}\n" + PROBE], cwd=repo, capture_output=True,
                         text=True, timeout=120, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
