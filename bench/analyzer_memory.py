"""Smallest RLIMIT_AS (MiB, to 64 MiB) with which each analyzer audits a real repository as without a limit."""
import sys, time
from pathlib import Path
from autopatch_tui.core.repair.analyzers.ruff import RuffAnalyzer
from autopatch_tui.core.repair.analyzers.semgrep import SemgrepAnalyzer
from autopatch_tui.core.repair.scanner import Scanner
from autopatch_tui.core.repair.analyzers.base import AnalyzerError

def files(repo, lang_ok):
    return [f for f in Scanner(repo, []).files() if lang_ok(f)]

def works(make, repo, fs, limit):
    try:
        a = make(limit).analyze(repo, fs)
        return len(a.findings), len(a.unparsed)
    except AnalyzerError as e:
        return None

for name, make, repo, ok in [
    ("ruff", lambda l: RuffAnalyzer(memory_limit=l), Path(sys.argv[1]), lambda f: f.endswith(".py")),
    ("semgrep", lambda l: SemgrepAnalyzer(memory_limit=l), Path(sys.argv[2]), lambda f: f.endswith(".java")),
]:
    fs = files(repo, ok)
    t = time.time(); base = works(make, repo, fs, None); t = time.time() - t
    lo, hi = 64, 16384
    while hi - lo > 64:
        mid = (lo + hi) // 2
        if works(make, repo, fs, mid << 20) == base: hi = mid
        else: lo = mid
    print(f"{name}: {len(fs)} files, {base} (findings, unparsed), {t:.1f} s; smallest working RLIMIT_AS ~{hi} MiB")
