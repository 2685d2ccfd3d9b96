"""Instruction files (`AGENTS.md`, a root `CLAUDE.md`): read into every chat and repair request
(`files`), and the marked section of reviewed Memory items that `memory promote` writes into one
(`section`, `promote`). Contracts §9."""
