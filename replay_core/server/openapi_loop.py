"""The OpenAPI operations of the evaluation loop (monitors.loop): a review queue's runs as a dataset, a queue
feeding a dataset, experiment schedules and their runs, a monitor's webhook. Given the document's `Op` and
helpers by openapi.py (which lists them with the rest), so this module imports nothing of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def loop_operations(op: Callable[..., Any], content: Callable[[Any], dict], anything: dict) -> dict[tuple[str, str], Any]:
    return {
        ("POST", "/api/v1/queues/{queue_id}/dataset"): op(
            "A review queue's runs (or only those judged bad) as a dataset's new version, each judged by what its reviewers "
            "said it should have done.",
            None,
            status=201,
            media=content(anything),
            tag="experiments",
            body={
                "required": False,
                "content": content(
                    {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string", "maxLength": 200, "description": "default: the queue's name"},
                            "bad_only": {"type": "boolean", "default": False},
                            "verdicts": {"type": "array", "items": {"type": "string"}, "description": "bad ones; default Bad"},
                        },
                    }
                ),
            },
        ),
        ("PUT", "/api/v1/queues/{queue_id}/feed"): op(
            "Feed a queue's bad verdicts to a dataset (null stops it): each new one adds its run to the dataset's next version.",
            None,
            media=content(anything),
            tag="experiments",
            body={
                "required": True,
                "content": content(
                    {
                        "type": "object",
                        "required": ["dataset"],
                        "properties": {
                            "dataset": {"type": ["string", "null"], "maxLength": 200},
                            "verdicts": {"type": "array", "items": {"type": "string"}},
                        },
                    }
                ),
            },
        ),
        ("GET", "/api/v1/schedules"): op(
            "Experiment schedules: what each runs, when, and its last run's status and regressions.",
            None,
            media=content(anything),
            tag="experiments",
        ),
        ("POST", "/api/v1/schedules"): op(
            "Schedule an experiment (daily, on a new dataset version, on a new configured model); each run is compared with "
            "the one before, and its monitor alerts when a pass rate dropped with evidence. See docs/experiments.md.",
            None,
            status=201,
            media=content(anything),
            tag="experiments",
            body={
                "required": True,
                "content": content(
                    {
                        "type": "object",
                        "required": ["name", "dataset"],
                        "properties": {
                            "name": {"type": "string", "maxLength": 150},
                            "dataset": {"type": "string"},
                            "models": {"type": "array", "items": {"type": "string"}},
                            "variants": {"type": "array", "items": anything},
                            "trigger": {"type": "string", "enum": ["daily", "dataset_version", "new_model"], "default": "daily"},
                            "api_base": {"type": "string"},
                            "scorers": {"type": "array", "items": {"type": "string"}},
                            "from": {"type": ["string", "integer"]},
                            "concurrency": {"type": "integer", "minimum": 1},
                            "budget_usd": {"type": "number"},
                            "budget_tokens": {"type": "integer"},
                            "webhook_url": {"type": "string"},
                            "webhook_secret_env": {
                                "type": "string",
                                "description": "the NAME of the variable holding the secret",
                            },
                        },
                    }
                ),
            },
        ),
        ("GET", "/api/v1/schedules/{schedule_id}/runs"): op(
            "A schedule's runs, newest first: pass rates with Wilson intervals, against the previous run, regressions.",
            None,
            media=content(anything),
            tag="experiments",
        ),
        ("POST", "/api/v1/schedules/run-due"): op(
            "Run the schedules due now, in the background (as the server does every few minutes).",
            None,
            status=202,
            media=content(anything),
            tag="experiments",
        ),
        ("PUT", "/api/v1/monitors/{monitor_id}/webhook"): op(
            "Where a monitor's alerts are sent (null: nowhere), the built-in release monitor's too.",
            None,
            media=content(anything),
            tag="monitors",
            body={
                "required": True,
                "content": content(
                    {
                        "type": "object",
                        "properties": {
                            "url": {"type": ["string", "null"]},
                            "secret_env": {"type": "string", "description": "the NAME of the variable holding the secret"},
                        },
                    }
                ),
            },
        ),
    }
