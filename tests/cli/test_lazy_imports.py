"""`memory status` and `memory list` import only what they need: no agent, no model SDK or HTTP
layer, no Textual, no pydantic (settings and the contract shapes validate without it), no pipeline
runner (start-up time is mostly imports). One subprocess runs both commands in-process and reports
which heavy modules got loaded (platformdirs too: with AUTOPATCH_HOME set it is not needed)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("openai", "httpx2", "httpx", "textual", "pydantic", "pydantic_core", "platformdirs",
         "autopatch_tui.core.agent.chat", "autopatch_tui.core.agent.loop",
         "autopatch_tui.core.pipeline.runner", "autopatch_tui.core.pipeline.consolidation",
         "autopatch_tui.core.stores.service", "autopatch_tui.core.repair.workflows")

PROBE = """
import contextlib, io, json, sys
from autopatch_tui.cli.main import main
codes = []
for argv in (["memory", "status", "--json"], ["memory", "list", "--json"]):
    with contextlib.redirect_stdout(io.StringIO()):
        codes.append(main(argv))
print(json.dumps({"codes": codes, "loaded": [m for m in HEAVY if m in sys.modules]}))
"""


def test_status_and_list_import_no_agent_sdk_textual_or_pipeline(repo, isolated_env) -> None:
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + PROBE], cwd=repo, capture_output=True,
                         text=True, timeout=60, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"codes": [0, 0], "loaded": []}
