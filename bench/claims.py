"""Still-true audit and secret detector benchmark (issue 31, deliverables 4 and 5).

    .venv/bin/python bench/claims.py [--items 10000] [--runs 3]

A store of `--items` active decisions and preferences (a quarter of them with a checkable claim: a
package manager, a test runner or linter, a runtime version, a path; a tenth contradicted by the
repository, which holds package.json, package-lock.json, pyproject.toml, pom.xml and go.mod) is
audited:

- **audit**: `MemoryManager.audit()` as `memory audit` runs it, best of `--runs`, wall and CPU; the
  baseline is the same audit without the still-true check (`stale_claims` stubbed out) in the same
  run, so the ratio shows what the check adds.
- **Map doubts**: `claims.store.map_doubts` for 30 Map rows per request (what a turn pays): cold
  (every revision judged, its content read) and warm (the verdicts cached by the manifests' stat).
- **secret check per candidate**: `core.secrets.has_secret` on a typical candidate's text (fields
  and quote, ~600 characters, no secret) and on one holding a key, per call.
Figures are printed, never asserted; on a shared machine they are a direction only.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

from _common import ROOT, bench_settings, environment_line, temp_dir

sys.path.insert(0, str(ROOT))

from autopatch_tui.core.claims import store as claims_store
from autopatch_tui.core.manager import MemoryManager
from autopatch_tui.core.memory import audit as audit_mod
from autopatch_tui.core.secrets import has_secret
from tests.support.recall_seed import seed_many

CLAIMS = [  # (statement, contradicted in the bench repository)
    ("Always use pnpm for installs.", True), ("Use npm for installs.", False),
    ("Tests run with jest.", True), ("Tests run with vitest.", False),
    ("Lint Python with flake8.", True), ("Lint Python with ruff.", False),
    ("Keep supporting Python 3.8.", True), ("Target Python 3.12.", False),
    ("Build with Java 11.", True), ("Go 1.22 is the minimum.", False),
    ("Keep helpers in src/old/util.py.", True), ("Keep helpers in src/app/main.py.", False),
]
WORDS = ("cache", "retry", "parser", "logging", "tests", "build", "deploy", "schema", "queue", "config", "errors",
         "naming", "imports", "docs", "metrics")


def make_repo(repo: Path) -> None:
    repo.mkdir(parents=True)
    (repo / "package.json").write_text(json.dumps({"devDependencies": {"vitest": "1", "eslint": "9"},
                                                   "engines": {"node": ">=18"}}))
    (repo / "package-lock.json").write_text("{}")
    (repo / "pyproject.toml").write_text('[project]\nname = "x"\nrequires-python = ">=3.11"\n'
                                         'dependencies = ["requests"]\n[tool.ruff]\nline-length = 100\n')
    (repo / "pom.xml").write_text('<project xmlns="http://maven.apache.org/POM/4.0.0"><properties>'
                                  "<maven.compiler.release>17</maven.compiler.release></properties></project>")
    (repo / "go.mod").write_text("module x\n\ngo 1.22\n")
    (repo / "src" / "app").mkdir(parents=True)
    (repo / "src" / "app" / "main.py").write_text("")


def specs(n: int) -> list[dict[str, object]]:
    rng = random.Random(31)
    out = []
    for i in range(n):
        a, b = rng.choice(WORDS), rng.choice(WORDS)
        if i % 4 == 0:
            statement = CLAIMS[(i // 4) % len(CLAIMS)][0]
        else:
            statement = f"Prefer clear {a} handling near the {b} code; keep it small and documented ({i})."
        out.append({"kind": "project_decision" if i % 2 else "user_preference", "subject": f"{a} {b} rule {i}",
                    "statement": statement, "content": f"{statement} The team agreed on this for {a} and {b}."})
    return out


def timed(fn):  # -> (wall s, cpu s, result)
    c0, w0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    result = fn()
    w1, c1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    return w1 - w0, (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime), result


def best(fn, runs: int):
    results = [timed(fn) for _ in range(runs)]
    return min(r[0] for r in results), min(r[1] for r in results), results[-1][2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    with temp_dir("autopatch-claims-bench-") as tmp:
        print(environment_line(tmp))
        repo = tmp / "project"
        make_repo(repo)
        mgr = MemoryManager.open(repo, bench_settings(tmp / "home"))
        try:
            t0 = time.perf_counter()
            seed_many(mgr.store.conn(), specs(args.items))
            print(f"built {args.items} items in {time.perf_counter() - t0:.1f} s")
            wall, cpu, report = best(mgr.audit, args.runs)
            real = audit_mod.stale_claims
            audit_mod.stale_claims = lambda conn, repo: []  # the baseline: the audit before this check
            try:
                base_wall, base_cpu, _ = best(mgr.audit, args.runs)
            finally:
                audit_mod.stale_claims = real
            print(f"\nmemory audit, {report.checked} items, best of {args.runs}:")
            print(f"  with stale_claims  wall {wall * 1000:8.1f} ms  CPU {cpu * 1000:8.1f} ms"
                  f"  ({len(report.stale_claims)} stale claims)")
            print(f"  baseline (without) wall {base_wall * 1000:8.1f} ms  CPU {base_cpu * 1000:8.1f} ms"
                  f"  -> the check adds x{cpu / base_cpu if base_cpu else float('nan'):.2f} CPU")

            conn = mgr.store.conn()
            rows = conn.execute("SELECT row_id, id, logical_id, kind, subject, statement, strength, recall_mode,"
                                " applies_to_paths FROM memory_items WHERE status = 'active' ORDER BY row_id").fetchall()
            batches = [rows[i:i + 30] for i in range(0, min(len(rows), 3000), 30)]
            cold = [timed(lambda b=b: claims_store.map_doubts(conn, repo, b)) for b in batches]
            warm = [timed(lambda b=b: claims_store.map_doubts(conn, repo, b)) for b in batches]

            def pct(xs: list[float], p: float) -> float:
                xs = sorted(xs)
                return xs[min(len(xs) - 1, int(p * len(xs)))] * 1000

            print(f"\nMap doubts for 30 rows per request ({len(batches)} requests), ms p50 / p95 wall:")
            print(f"  cold (judged, content read) {pct([c[0] for c in cold], .5):6.3f} / {pct([c[0] for c in cold], .95):6.3f}")
            print(f"  warm (cached verdicts)      {pct([w[0] for w in warm], .5):6.3f} / {pct([w[0] for w in warm], .95):6.3f}")

            plain = ("Keep retry logic in one module; callers never sleep themselves. " * 5
                     + "quote: from now on keep the retry logic in src/retry.py and never sleep in callers")
            keyed = plain + " token 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"
            for name, text in (("no secret", plain), ("with a key", keyed)):
                n = 2000
                w, c, _ = timed(lambda t=text, n=n: [has_secret(t) for _ in range(n)])
                print(f"secret check per candidate ({name}, {len(text)} chars): {w / n * 1000:.3f} ms wall,"
                      f" {c / n * 1000:.3f} ms CPU")
        finally:
            mgr.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
