"""The languages the audit covers, by file suffix, and their display names. One table for the
scanner (which files a scope holds), the analyzers (which files each one reads) and the syntax
check of patch drafts."""

from __future__ import annotations

from pathlib import PurePosixPath

PYTHON, JAVA, JAVASCRIPT, TYPESCRIPT, TSX, GO = "python", "java", "javascript", "typescript", "tsx", "go"

SUFFIXES: dict[str, str] = {
    ".py": PYTHON,
    ".java": JAVA,
    ".js": JAVASCRIPT, ".jsx": JAVASCRIPT, ".mjs": JAVASCRIPT, ".cjs": JAVASCRIPT,
    ".ts": TYPESCRIPT, ".mts": TYPESCRIPT, ".cts": TYPESCRIPT,
    ".tsx": TSX,
    ".go": GO,
}
NAMES = {PYTHON: "Python", JAVA: "Java", JAVASCRIPT: "JavaScript", TYPESCRIPT: "TypeScript", TSX: "TypeScript",
         GO: "Go"}


def language_of(path: str) -> str | None:
    """The audit language of a file by its suffix (case-insensitive), or None."""
    return SUFFIXES.get(PurePosixPath(path).suffix.lower())


def counts_text(counts: dict[str, int]) -> str:
    """"3 Python, 2 Java" — display names merged (TypeScript and TSX are one), in table order."""
    merged: dict[str, int] = {}
    for lang in dict.fromkeys(SUFFIXES.values()):
        if counts.get(lang):
            merged[NAMES[lang]] = merged.get(NAMES[lang], 0) + counts[lang]
    return ", ".join(f"{n} {name}" for name, n in merged.items())
