"""Regenerate the README screenshots (SVG) from a seeded demo store, headless.
Run: .venv/bin/python assets/make_screenshots.py"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from autopatch_tui.core.manager import MemoryManager  # noqa: E402
from autopatch_tui.core.settings import load_settings  # noqa: E402
from autopatch_tui.tui.app import AutopatchApp  # noqa: E402
from autopatch_tui.tui.services import Services  # noqa: E402
from tests.support.llm_stub import StubLLMServer  # noqa: E402

CONVERSATION = [
    ("以后所有代码注释都用英文写。", "好的，以后注释统一使用英文。"),
    ("The old memory schema is incompatible — just delete it, no migration.",
     "Understood: no backward compatibility for the legacy schema; it will be deleted."),
    ("Should we split the store module by concept? I have not decided yet.",
     "Splitting by concept keeps modules small; we can continue this later."),
]


def extraction(req):
    body = json.loads(req.body["messages"][-1]["content"])
    out = []
    for t in body["turns"]:
        text = t["user"]
        if text.startswith("以后"):
            out.append(dict(kind="user_preference", subject="comment language", statement="Write code comments in English.",
                            strength="hard", origin="explicit", recall_mode="always", aliases=["english comments"],
                            keywords=["comments"], quote="以后所有代码注释都用英文写"))
        elif "schema" in text:
            out.append(dict(kind="project_decision", subject="legacy memory schema",
                            statement="Delete the old memory schema; no migration.", strength="soft",
                            origin="explicit", recall_mode="on_match",
                            aliases=["backward compatibility", "delete legacy schema"], keywords=["schema"],
                            quote="just delete it, no migration"))
        elif "split" in text:
            out.append(dict(kind="discussion_context", subject="store module split",
                            statement="Open question: split the store module by concept?", strength="soft",
                            origin="explicit", recall_mode="on_match", aliases=[], keywords=["modules"],
                            quote="Should we split the store module by concept?"))
        if out and "turn" not in out[-1]:
            out[-1]["turn"] = t["turn_id"]
    cands = [{"kind": c["kind"], "subject": c["subject"], "statement": c["statement"], "content": "",
              "strength": c["strength"], "origin": c["origin"], "recall_mode": c["recall_mode"],
              "applies_to_paths": [], "aliases": c["aliases"], "keywords": c["keywords"],
              "sources": [{"turn_id": c["turn"], "role": "user", "quote": c["quote"]}]} for c in out]
    return {"thread_checkpoint": "Conventions and a schema decision.", "candidates": cands}


def consolidation(req):
    body = json.loads(req.body["messages"][-1]["content"])
    keys = ("kind", "subject", "statement", "content", "strength", "origin", "recall_mode", "applies_to_paths",
            "aliases", "keywords")
    return {"operations": [{"operation": "create", "candidate_ids": [c["candidate_id"]], "target_id": None,
                            **{k: c[k] for k in keys}} for c in body["candidates"]]}


async def shoot(app: AutopatchApp, out: Path) -> None:
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.5)
        for prompt in app.screen.query("PromptInput"):
            prompt.cursor_blink = False
        app.save_screenshot(str(out / "chat.svg"))
        for name, key in (("history", "f3"), ("memory", "f4"), ("jobs", "f5"), ("stores", "f6")):
            await pilot.press(key)
            await pilot.pause(0.8)
            await app.workers.wait_for_complete()
            await pilot.pause(0.3)
            app.save_screenshot(str(out / f"{name}.svg"))


def main() -> None:
    base = Path(tempfile.mkdtemp(prefix="autopatch-shots-"))
    repo = base / "demo-project"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    stub = StubLLMServer()
    stub.default("extraction", extraction)
    stub.default("consolidation", consolidation)
    settings = load_settings({"AUTOPATCH_HOME": str(base / "home"), "AUTOPATCH_LLM_BASE_URL": stub.base_url,
                              "AUTOPATCH_LLM_MODEL": "gpt-4o"})
    mgr = MemoryManager.open(repo, settings)
    for q, a in CONVERSATION:
        h = mgr.begin_turn(q)
        mgr.complete_turn(h, a)
    mgr.process_pending()
    mgr.close()
    app = AutopatchApp(Services(MemoryManager.open(repo, settings), settings))
    asyncio.run(shoot(app, ROOT / "assets"))
    stub.close()
    print("wrote", ", ".join(p.name for p in sorted((ROOT / "assets").glob("*.svg"))))


if __name__ == "__main__":
    main()
