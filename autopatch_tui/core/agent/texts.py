"""Texts the agent and the chat screen show (a module of its own: the chat screen shows them at
its first frame without importing the agent)."""

from __future__ import annotations

NO_MODEL_HELP = (
    "No model is configured. Set AUTOPATCH_LLM_BASE_URL (an OpenAI-compatible endpoint, e.g. "
    "http://127.0.0.1:11434/v1), AUTOPATCH_LLM_MODEL and, if needed, AUTOPATCH_LLM_API_KEY — in the environment "
    "or in config.toml. Memory commands work without a model."
)
