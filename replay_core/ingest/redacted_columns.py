"""Every column that can hold text, and why no secret from a trace rests in it.

A column is in exactly one of three registries, and tests/test_redact_columns.py checks them
against the tables (storage/tables.py): a new text, JSON or bytes column with no entry fails it.

- REDACTED: trace text, passed through the Redactor (ingest/redact.py) on the way in, by the code named;
- DERIVED: copied or computed from redacted columns only;
- NO_TRACE_TEXT: what holds no trace text, and why (a vocabulary word, a hash, a count, a name
  from a credential or the configuration, something an editor typed).

UNREDACTED lists what holds text from outside a trace that is not redacted, with why it is kept
so: the test requires it to be exactly this list, so a gap is never silent.
"""

from __future__ import annotations

_RUN = "ingest.pipeline.ingest (Redactor.event) or ingest.step_rows.step_row_of, for every way in"

REDACTED: dict[str, str] = {
    **{
        f"sessions.{c}": _RUN
        for c in ("id", "name", "agent_id", "model", "workflow", "environment", "agent_version")
        + ("outcome", "error_class", "tags", "metadata", "source")
    },
    # who and which conversation a run served come from the trace (an e-mail as `user.id` is common):
    # scrubbed like every identifier, a scrubbed one keeping a hash so users and threads stay apart
    **{f"sessions.{c}": _RUN for c in ("user_id", "thread_id")},
    **{
        f"steps.{c}": _RUN
        for c in ("session_id", "event_id", "parent_id", "agent_id", "model", "content", "tool_name", "tool_args")
        + ("tool_call_id", "error_class", "metadata")
    },
    "step_contexts.session_id": _RUN,
    "step_contexts.event_id": _RUN,
    "step_contexts.context": _RUN,
    "otlp_open_calls.name": "ingest.otlp_receiver._row",
    "otlp_open_calls.call_id": "ingest.otlp_receiver._row",
    "otlp_open_calls.arguments": "ingest.otlp_receiver._row",
    "attachments.name": "ingest.pipeline._store_attachments",
    "attachments.target": "ingest.pipeline._store_attachments",
    "annotations.text": "ingest.annotate.annotate",
    "annotations.author": "ingest.annotate.annotate",
    "queue_reviews.note": "team.queues.save_review",
    "experiments.message": "whatif.experiment.run scrubs an error's text (the runner's other messages are its own words)",
    "queue_reviews.should_have": "team.queues.save_review",
}

DERIVED: dict[str, str] = {
    **{f"daily_cells.{c}": "storage.daily, from sessions" for c in ("cell", "day", "model", "agent_id", "status", "source")},
    **{f"daily_members.{c}": "storage.daily, from sessions" for c in ("session_id", "cell", "day", "model", "agent_id")},
    "daily_members.status": "storage.daily, from sessions",
    "daily_members.source": "storage.daily, from sessions",
    "daily_members.durations_us": "storage.daily, step durations (numbers)",
    "daily_errors.cell": "storage.daily",
    "daily_errors.error_class": "storage.daily, from steps.error_class",
    "daily_tools.cell": "storage.daily",
    "daily_tools.tool_name": "storage.daily, from steps.tool_name",
    "run_breakdown.session_id": "storage.rollups, from steps",
    "run_breakdown.tool_name": "storage.rollups, from steps",
    "run_breakdown.error_class": "storage.rollups, from steps",
    "run_rollups.session_id": "storage.rollups, from steps",
    "run_rollups.durations_us": "storage.rollups, step durations (numbers)",
    "steps.call_key": "storage.rollups.call_key: a hash of the redacted tool name and arguments",
    "otlp_traces.session_id": "the session a trace was stored in (sessions.id)",
    "otlp_open_calls.event_id": "the stored step's event id or a span id (hex)",
    "sessions.replay_of": "the replayed run's id (sessions.id)",
    "annotations.session_id": "a stored run's id",
    "annotations.event_id": "a stored step's id",
    "attachments.session_id": "a stored run's id",
    "attachments.event_id": "a stored step's id",
    "queue_items.session_id": "a stored run's id",
    "dataset_cases.session_id": "a stored run's id",
    "dataset_cases.expected": "a run's redacted outcome or final answer, a review's redacted should_have, or --expected",
    "experiment_runs.case_session": "a stored run's id",
    "experiment_runs.replay_session": "the replay's run id (sessions.id)",
    "share_links.target": "stored run ids or a queue id",
    "audit_log.target": "stored run ids, a file or dataset name, a queue or experiment id: never a body",
    "monitors.last_result": "computed from the runs' redacted columns: figures, intervals, the rule's sentence",
    "monitor_alerts.figure": "computed from the runs' redacted columns: figures, a runs-page link, explain's patterns",
    "schedule_runs.experiment_id": "made here (experiments.id)",
    "schedule_runs.result": "computed from an experiment's stored rows: pass rates, intervals, case ids, scrubbed errors",
}

NO_TRACE_TEXT: dict[str, str] = {
    "sessions.status": "a word of the contract's vocabulary",
    "sessions.replay_config": "a replay's settings, chosen by an editor (model, fallbacks, edits of redacted steps)",
    "steps.type": "a word of the contract's vocabulary",
    "steps.status": "a word of the contract's vocabulary",
    "otlp_traces.trace_id": "hex",
    "otlp_open_calls.trace_id": "hex",
    "otlp_open_calls.side": "call or tool",
    "attachments.mime_type": "an image type the media checks accepted",
    "attachments.sha256": "a hash",
    "attachments.data": "image bytes (checked, re-encoded or kept as sent: pixels, not text)",
    "media_blobs.sha256": "a hash",
    "media_blobs.mime_type": "an image type the media checks accepted",
    "media_blobs.data": "image bytes",
    "media_blobs.thumbnail": "image bytes made here",
    "annotations.label": "good, bad or a word an editor chose",
    "audit_log.who": "a name from a credential or the configuration (token holder, token hash, e-mail, local user)",
    "audit_log.role": "a role",
    "audit_log.origin": "a client address, cli, retention",
    "audit_log.action": "an action word",
    "audit_log.outcome": "an outcome word",
    "audit_log.detail": "counts, names and words (team/audit.py): never a body, a password or a token",
    "datasets.name": "typed by an editor",
    "datasets.description": "typed by an editor",
    "datasets.match": "equals, contains or regex",
    "datasets.made_from": "the filter or run ids an editor chose",
    "experiments.id": "made here",
    "experiments.settings": "the variants, scorers and budgets an editor chose",
    "experiments.status": "a status word",
    "experiment_runs.experiment_id": "made here (experiments.id)",
    "experiment_runs.state": "a state word",
    "experiment_runs.outcome": "a scorer's verdict word",
    "experiment_runs.error_class": "an exception class name",
    "experiment_runs.scores": "scorers' numbers and verdict words",
    "job_runs.name": "a job's name",
    "review_queues.name": "typed by an editor",
    "review_queues.made_from": "the filter or run ids an editor chose",
    "review_queues.rubric": "verdicts and criteria an editor chose",
    "review_queues.assignees": "reviewers' names an editor chose",
    "review_queues.created_by": "an actor's name (as audit_log.who)",
    "queue_items.held_by": "the reviewer's name (from the credential)",
    "queue_reviews.reviewer": "the reviewer's name (from the credential)",
    "queue_reviews.verdict": "one of the rubric's verdicts",
    "queue_reviews.criteria": "the rubric's criteria: pass or fail",
    "share_links.token_hash": "a hash",
    "share_links.kind": "run, compare or queue",
    "share_links.created_by": "an actor's name (as audit_log.who)",
    "share_links.revoked_by": "an actor's name (as audit_log.who)",
    "watch_offsets.path": "a local file path given to `watch`",
    "watch_offsets.format": "a reader's name",
    "steps.place": "a sort key: times, a span's id (hex) and a part's role word (otel.ordering.place)",
    "watch_offsets.fingerprint": "a hash of the file's first bytes and of those before the offset",
    "monitors.name": "an editor typed it",
    "monitors.rule": "an editor typed it: a metric, a window, thresholds, filters",
    "monitors.webhook_url": "an editor typed it",
    "monitors.webhook_secret_env": "the NAME of a variable, never the secret",
    "monitor_alerts.acked_by": "an actor's name (as audit_log.who)",
    "monitor_alerts.delivered": "what the webhook answered: HTTP statuses and transport errors",
    "experiment_schedules.name": "an editor typed it",
    "experiment_schedules.dataset": "a dataset's name (datasets.name)",
    "experiment_schedules.trigger": "daily, dataset_version or new_model",
    "experiment_schedules.settings": "the variants, scorers and budgets an editor chose",
    "experiment_schedules.models_seen": "model names from the server's configuration",
    "experiment_schedules.created_by": "an actor's name (as audit_log.who)",
    "schedule_runs.reason": "made here: why the schedule ran (a day since, a dataset version, a model name)",
    "queue_feeds.dataset": "a dataset's name an editor chose",
    "queue_feeds.verdicts": "the rubric's verdict labels an editor chose",
    "queue_feeds.created_by": "an actor's name (as audit_log.who)",
}

UNREDACTED: dict[str, str] = {}
