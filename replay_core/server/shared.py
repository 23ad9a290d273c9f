"""What a share link shows: one run, one comparison or one queue's results, as stored.

One definition for the JSON route (`GET /api/v1/share/{token}`) and the share page, so the
page never shows more than the link was made for: the object is built from the link's own
target, never from anything the visitor sends. Text is as stored (redacted on the way in);
a queue's results carry no run contents, only each run's id, name and status beside the
verdicts.
"""

from __future__ import annotations

from ..storage.store import Store
from ..team import queues, shares
from ..understand.compare import compare
from ..understand.timeline import Timeline, open_timeline

SESSION_FIELDS = (
    "id",
    "name",
    "status",
    "outcome",
    "error_class",
    "agent_id",
    "model",
    "workflow",
    "environment",
    "agent_version",
    "tags",
    "started_at",
    "ended_at",
    "duration_s",
    "steps",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "cost_estimated",
    "replay_of",
)


def run_body(timeline: Timeline) -> dict:
    s = timeline.session
    return {
        "session": {k: s.get(k) for k in SESSION_FIELDS},
        "summary": timeline.summary(),
        "steps": [step.to_json_dict() for step in timeline.steps],
        "cycles": [c.to_dict() for c in timeline.cycles],
        "gaps": [g.to_dict() for g in timeline.gaps],
    }


def shared_object(store: Store, link: dict) -> dict:
    """The JSON of what `link` (from `shares.open_link`) shows."""
    target, kind = link["target"], link["kind"]
    head = {"kind": kind, "expires_at": link["expires_at"]}
    if kind == shares.RUN:
        return head | {"run": run_body(open_timeline(store, target["session"]))}
    if kind == shares.COMPARE:
        runs = [run_body(open_timeline(store, target[k])) for k in ("session", "other")]
        return head | {"runs": runs, "comparison": compare(store, target["session"], target["other"]).to_dict(with_diffs=True)}
    res = queues.results(store, int(target["queue"]))
    q = res["queue"]
    return head | {
        "queue": {
            "name": q["name"],
            "rubric": q["rubric"],
            "reviews_per_item": q["reviews_per_item"],
            "progress": {k: q[k] for k in ("items", "items_done", "reviews", "needed", "percent", "done")},
        },
        "items": [{k: v for k, v in it.items() if k != "held_by"} for it in res["items"]],
        "reviewers": res["reviewers"],
        "agreement": res["agreement"],
    }
