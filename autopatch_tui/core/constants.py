"""Every fixed number and enumeration of the Memory domain, in one place.

Values named here are part of the schema's CHECK constraints or of the machine contracts
(`shared/spec/contracts.md`); changing one is a schema or contract change.
"""

from __future__ import annotations

SCHEMA_VERSION = 4
STATE_DIR_NAME = ".autopatch-j"
DB_FILE_NAME = "memory.db"
DB_SIDE_SUFFIXES = ("-wal", "-shm", "-journal")
EXPORT_DIR_NAME = "memory-exports"
SUMMARY_FILE_NAME = "memory_summary.md"
AUDIT_FILE_NAME = "audit.json"  # the open audit's drafts (repair/drafts_file.py)
LEGACY_JSON_NAME = "memory.json"
REVIEW_MARKS_NAME = "review_marks.json"  # contracts §8: which revisions the user kept (never in memory.db)
REVIEW_LOCK_NAME = "review_marks.lock"  # the fcntl lock of a read-modify-write of the marks
REFUSED_NAME = "refused.json"  # contracts §10: refused candidates kept for rescue, and the rescues
REFUSED_LOCK_NAME = "refused.lock"
MEMORY_USED_NAME = "memory_used.jsonl"  # contracts §10: which items reached each answer (IDs only)
APP_NAME = "autopatch-tui"

# --- turns ---------------------------------------------------------------------------------
MAX_SCOPE_PATHS = 10
MAX_EVIDENCE_KEYS = 32
ORDINARY_INTENTS = ("general_chat", "code_explain")
REPAIR_INTENTS = ("code_audit", "zero_finding_review", "patch_explain", "patch_revise")
INTENTS = ORDINARY_INTENTS + REPAIR_INTENTS
TURN_STATES = ("open", "completed", "failed", "interrupted")
ENDED_TURN_STATES = ("completed", "failed", "interrupted")
THREAD_STATUSES = ("active", "archived")

# --- jobs ----------------------------------------------------------------------------------
JOB_KINDS = ("extraction", "consolidation")
JOB_STATUSES = ("pending", "leased", "succeeded", "succeeded_no_output", "retry_wait", "failed")
TERMINAL_JOB_STATUSES = ("succeeded", "succeeded_no_output", "failed")
FAILURE_CATEGORIES = (
    "transient_provider",
    "rate_limit",
    "auth",
    "bad_request",
    "context_overflow",
    "timeout",
    "sqlite_lock",
    "contract_violation",
    "capacity",
    "schema",
    "no_model",
    "internal",
)
# categories that allow exactly one durable retry (after the first claim)
RETRYABLE_CATEGORIES = ("transient_provider", "rate_limit", "timeout", "sqlite_lock")
FAILURE_PHASES = ("prepare", "provider", "validate", "commit")
FAILURE_STAGES = ("primary", "repair")
NO_OUTPUT_REASONS = ("no_candidates", "all_rejected", "capacity", "no_related")

DEFAULT_LEASE_SECONDS = 120.0
DEFAULT_HEARTBEAT_SECONDS = 30.0
DEFAULT_EXTRACTION_MAX_WAIT_SECONDS = 30.0
EXTRACTION_MIN_PENDING_TURNS = 2
EXTRACTION_MAX_BATCH = 4
MAX_CLAIMS = 2  # first claim + one durable retry

# --- items and candidates ------------------------------------------------------------------
ITEM_KINDS = ("user_preference", "project_decision", "discussion_context")
PROJECT_KINDS = ("user_preference", "project_decision")
STRENGTHS = ("hard", "soft")
ORIGINS = ("explicit", "adopted_proposal", "inferred_repetition")
RECALL_MODES = ("always", "on_match")
ITEM_STATUSES = ("active", "superseded", "forgotten")
CANDIDATE_STATUSES = ("pending", "accepted", "rejected", "suppressed")
SOURCE_ROLES = ("user", "assistant")
# the fields of the recall index, weakest first: `recall_postings.field` stores 1 + the index (the
# match rank, so the strongest field of a match is `max(field)`)
RECALL_FIELDS = ("content", "keyword", "alias", "subject", "check_id")
MAX_CANDIDATES_PER_EXTRACTION = 32
MAX_SOURCES_PER_CANDIDATE = 8
MAX_CHECKPOINT_CHARS = 4000

# --- audit ---------------------------------------------------------------------------------
AUDIT_EVENTS = ("memory_stores_merged", "memory_cleared", "store_retired")
