"""The chat screen's own words: its welcome, and what a failed, cancelled or refused line says."""

from __future__ import annotations

RESEND_HINT = "Shift+Tab to this note and Enter, or send /retry, to send it again."
UNEXPECTED_NOTE = f"The request failed unexpectedly (the error is in the log). Your message is kept here. {RESEND_HINT}"
BUSY_KEEPS_TEXT = "A request is still running: your text was kept. Press Escape to cancel the request."
CANCELLED_NOTE = f"Cancelled. Your message was saved as a failed turn. {RESEND_HINT}"
WELCOME = ("Welcome. Ask anything about this repository; what you decide and prefer is kept in its Memory "
           "(F4 shows it). Type / for commands (/help lists them), @ to mention a file, F1 for the keys.")
