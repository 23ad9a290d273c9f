"""The stored shape of sessions and steps, shared by the sections that write and read them: the
session fields an event sets, the steps table's columns in the order rows are built and read in,
and a step's values picked out of its fields."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from . import rollups

SESSION_FIELDS = (
    "name",
    "agent_id",
    "model",
    "workflow",
    "environment",
    "agent_version",
    "status",
    "outcome",
    "error_class",
    "started_at",
    "ended_at",
    "tags",
    "metadata",
    "source",
    "replay_of",
    "replay_from",
    "replay_to",
    "replay_config",
    "user_id",
    "thread_id",
)
STEP_COLUMNS = (
    "seq",
    "event_id",
    "parent_id",
    "type",
    "timestamp",
    "duration_ms",
    "agent_id",
    "model",
    "content",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "status",
    "error_class",
    "retry",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "metadata",
    "redacted",
)
SEQ_AT, EVENT_ID_AT, TIMESTAMP_AT = STEP_COLUMNS.index("seq"), STEP_COLUMNS.index("event_id"), STEP_COLUMNS.index("timestamp")
step_values = itemgetter(*STEP_COLUMNS)  # a step's fields (a dict) as a row of STEP_COLUMNS
# a step row as `Store.write` inserts it; `place` only an OTLP step has (its run's order, ingest_state)
ROW_COLUMNS = (*STEP_COLUMNS, "session_id", "call_key", "place")
rollup_values = itemgetter(*(ROW_COLUMNS.index(name) for name in rollups.FIELDS))  # a step row as rollups read it


def call_key(values: dict[str, Any]) -> str | None:
    return rollups.call_key(values["type"], values["tool_name"], values["tool_args"])
