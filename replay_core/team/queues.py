"""Review queues: a frozen list of runs, a rubric, and reviewers working through it one run at a time.

An editor makes a queue from a `SessionFilter` or a list of run ids; the items are the runs
that matched *then* (a run recorded later does not slip in, so "reviewed: 4 of 4" stays true).
A reviewer asks for the next item, which is held for them in the database (`held_until`)
so two people never review the same run at once; a hold left by a closed tab expires by
itself. Each item wants `reviews_per_item` verdicts from different reviewers; with more
than one, the results say how often they agreed. Reviewers and editors work queues, only
editors make and delete them (`storage.actor`); both are in the audit log.
"""

from __future__ import annotations

import csv
import io
import json
import tomllib
from collections import Counter
from dataclasses import asdict
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path
from typing import Any

from ..ingest.redact import default_redactor
from ..storage.actor import MANAGE_QUEUES, WORK_QUEUE, Actor
from ..storage.store import SessionFilter, Store
from .audit import REVIEW

DEFAULT_VERDICTS = ("Good", "Bad", "Needs attention")
MAX_VERDICTS = 9  # one digit key each
MAX_CRITERIA = 20
MAX_ITEMS = 5000
MAX_REVIEWS_PER_ITEM = 10
HOLD = timedelta(minutes=15)  # how long an opened item stays held without a save
NAME_MAX = 200
TEXT_MAX = 20_000
PASS, FAIL = "pass", "fail"


class QueueError(ValueError):
    """A queue that cannot be made or worked as asked; the message names the field."""


# ---------------------------------------------------------------- the rubric


def _text(value: Any, field: str, limit: int = NAME_MAX, *, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise QueueError(f"{field}: expected a non-empty text")
    value = value.strip()
    if len(value) > limit or "\x00" in value:
        raise QueueError(f"{field}: at most {limit} characters, no NUL")
    return value


def parse_rubric(data: Any) -> dict:
    """A rubric from its JSON/TOML shape, checked: `verdicts` (labels, 1–9), `criteria`
    ([{name, description}], each answered pass or fail), `note` and `should_have` (ask for
    a free note / "what should it have done"; both on unless false)."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise QueueError("rubric: expected an object with verdicts, criteria, note, should_have")
    unknown = sorted(set(data) - {"verdicts", "criteria", "note", "should_have"})
    if unknown:
        raise QueueError(f"rubric.{unknown[0]}: not a rubric field (verdicts, criteria, note, should_have)")
    verdicts = data.get("verdicts", list(DEFAULT_VERDICTS))
    if not isinstance(verdicts, list) or not 1 <= len(verdicts) <= MAX_VERDICTS:
        raise QueueError(f"rubric.verdicts: expected a list of 1 to {MAX_VERDICTS} labels")
    verdicts = [_text(v, f"rubric.verdicts[{i}]") for i, v in enumerate(verdicts)]
    if len({v.casefold() for v in verdicts}) != len(verdicts):
        raise QueueError("rubric.verdicts: labels must differ")
    criteria = data.get("criteria", [])
    if not isinstance(criteria, list) or len(criteria) > MAX_CRITERIA:
        raise QueueError(f"rubric.criteria: expected a list of at most {MAX_CRITERIA} criteria")
    parsed = []
    for i, c in enumerate(criteria):
        c = {"name": c} if isinstance(c, str) else c
        if not isinstance(c, dict) or set(c) - {"name", "description"}:
            raise QueueError(f"rubric.criteria[{i}]: expected {{name, description}}")
        parsed.append(
            {
                "name": _text(c.get("name"), f"rubric.criteria[{i}].name"),
                "description": _text(c.get("description"), f"rubric.criteria[{i}].description", 2000, required=False),
            }
        )
    if len({c["name"] for c in parsed}) != len(parsed):
        raise QueueError("rubric.criteria: names must differ")
    flags = {}
    for key in ("note", "should_have"):
        value = data.get(key, True)
        if not isinstance(value, bool):
            raise QueueError(f"rubric.{key}: expected true or false")
        flags[key] = value
    return {"verdicts": verdicts, "criteria": parsed, **flags}


def load_rubric(path: str | Path) -> dict:
    """A rubric file: JSON, or TOML when it ends in .toml."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise QueueError(f"{path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode()) if path.suffix == ".toml" else json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise QueueError(f"{path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'} ({exc})") from None
    try:
        return parse_rubric(data)
    except QueueError as exc:
        raise QueueError(f"{path}: {exc}") from None


# ---------------------------------------------------------------- making and listing


def filter_options(flt: SessionFilter) -> dict:
    """The filter as its set options (dates as ISO text): what a queue says it was made from."""
    out = {}
    for key, value in asdict(flt).items():
        if value in (None, False, ()):
            continue
        out[key] = value.isoformat() if isinstance(value, datetime) else list(value) if isinstance(value, tuple) else value
    return out


def create(
    store: Store,
    name: str | None,  # None (a body without one) is refused as any other non-text
    *,
    flt: SessionFilter | None = None,
    ids: list[str] | None = None,
    rubric: dict | None = None,
    reviews_per_item: int = 1,
    assignees: list[str] | tuple[str, ...] = (),
    actor: Actor | None = None,
) -> dict:
    """Make a queue (editors only) of the runs `flt` matches now, or of `ids`; returns {id, items}."""
    actor = store.authorize(actor, MANAGE_QUEUES, f"queue {name!r}"[:200])
    name = _text(name, "name")
    rubric = parse_rubric(rubric)
    if not isinstance(reviews_per_item, int) or not 1 <= reviews_per_item <= MAX_REVIEWS_PER_ITEM:
        raise QueueError(f"reviews_per_item: expected 1 to {MAX_REVIEWS_PER_ITEM}, got {reviews_per_item!r}")
    names = list(dict.fromkeys(_text(a, f"assign[{i}]") for i, a in enumerate(assignees)))
    if (flt is None) == (ids is None):
        raise QueueError("name the runs (ids) or a filter, not both")
    if ids is not None:
        ids = list(dict.fromkeys(i.strip() for i in ids if i.strip()))
        known = set(store.session_ids(SessionFilter(ids=tuple(ids), experiments=True))) if ids else set()
        missing = [i for i in ids if i not in known]
        if missing:
            raise QueueError(f"no run {missing[0]!r}" + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        made_from: dict = {"ids": ids}
    elif flt is not None:
        ids = store.session_ids(flt)
        made_from = {"filter": filter_options(flt)}
    if not ids:
        raise QueueError("no run matches: a queue needs at least one run")
    if len(ids) > MAX_ITEMS:
        raise QueueError(f"{len(ids)} runs match; a queue holds at most {MAX_ITEMS}: narrow the filter")
    queue_id = store.create_queue(
        name, ids, actor=actor, made_from=made_from, rubric=rubric, reviews_per_item=reviews_per_item, assignees=names
    )
    return {"id": queue_id, "name": name, "items": len(ids)}


def delete(store: Store, queue_id: int, *, actor: Actor | None = None) -> bool:
    """Delete a queue with its reviews (editors only); False when there is none."""
    actor = store.authorize(actor, MANAGE_QUEUES, f"queue {queue_id}")
    return store.delete_queue(queue_id, actor=actor)


def get(store: Store, queue_id: int) -> dict:
    rows = store.list_queues(queue_id)
    if not rows:
        raise QueueError(f"no queue {queue_id}")
    return _with_progress(rows[0])


def _with_progress(row: dict) -> dict:
    needed = row["items"] * row["reviews_per_item"]
    return {
        **row,
        "needed": needed,
        "done": row["items_done"] == row["items"],
        "percent": round(100 * row["reviews"] / needed) if needed else 100,
    }


def list_queues(store: Store) -> list[dict]:
    """Every queue with its progress: items, items_done, reviews given of needed."""
    return [_with_progress(r) for r in store.list_queues()]


def may_work(queue: dict, reviewer: str | None) -> bool:
    """An open queue takes anyone; an assigned one only the names it was given (case aside)."""
    assigned = queue.get("assignees") or []
    return not assigned or (reviewer or "").strip().casefold() in {a.casefold() for a in assigned}


def queue_progress(store: Store, actor: Actor | None = None, reviewer: str | None = None) -> list[dict]:
    """For the first screen: queues not finished, each {id, name, items, items_done, reviews, needed, percent,
    yours} (`yours`: open to, or assigned to, `reviewer`), the reviewer's own first. Empty for a role
    that does not work queues."""
    from ..storage.actor import local

    actor = actor or local()
    if not actor.may(WORK_QUEUE):
        return []
    rows = [
        {
            **{k: q[k] for k in ("id", "name", "items", "items_done", "reviews", "needed", "percent")},
            "yours": may_work(q, reviewer),
        }
        for q in list_queues(store)
        if not q["done"]
    ]
    return sorted(rows, key=lambda r: not r["yours"])


# ---------------------------------------------------------------- working a queue


def _reviewer(reviewer: str | None) -> str:
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise QueueError("reviewer: say who is reviewing (a name)")
    return _text(reviewer, "reviewer")  # a name too wide for its column is refused as such


def _workable(store: Store, queue_id: int, reviewer: str | None, actor: Actor | None) -> tuple[dict, str, Actor]:
    actor = store.authorize(actor, WORK_QUEUE, f"queue {queue_id}")
    queue, reviewer = get(store, queue_id), _reviewer(reviewer)
    if not may_work(queue, reviewer):
        raise QueueError(f"this queue is assigned to {', '.join(queue['assignees'])}; {reviewer} is not one of them")
    return queue, reviewer, actor


def next_item(
    store: Store,
    queue_id: int,
    reviewer: str | None,
    *,
    actor: Actor | None = None,
    hold: timedelta = HOLD,
    now: datetime | None = None,
    item_id: int | None = None,
) -> dict | None:
    """Hold and return the next item for `reviewer` ({id, position, session_id, held_until}), None when
    nothing is left for them. `item_id` re-takes the item they have open (after a page reload)."""
    _, reviewer, _ = _workable(store, queue_id, reviewer, actor)
    return store.claim_queue_item(queue_id, reviewer, hold, now=now, item_id=item_id)


def save_review(
    store: Store,
    queue_id: int,
    item_id: int,
    reviewer: str | None,
    verdict: str | None,  # None (a body without one) is refused as any other non-verdict
    *,
    criteria: dict[str, str] | None = None,
    note: str | None = None,
    should_have: str | None = None,
    actor: Actor | None = None,
) -> None:
    """Record `reviewer`'s verdict on one item (replacing their earlier one); the hold is let go. The note and
    what it should have done are redacted like review notes on runs (they quote runs); the save is in the audit log."""
    queue, reviewer, actor = _workable(store, queue_id, reviewer, actor)
    rubric = queue["rubric"]
    if verdict not in rubric["verdicts"]:
        raise QueueError(f"verdict: expected one of {', '.join(rubric['verdicts'])}, got {verdict!r}")
    names = {c["name"] for c in rubric["criteria"]}
    criteria = {k: v for k, v in (criteria or {}).items() if v is not None}
    for key, value in criteria.items():
        if key not in names:
            raise QueueError(f"criteria.{key}: not a criterion of this queue")
        if value not in (PASS, FAIL):
            raise QueueError(f"criteria.{key}: expected pass or fail, got {value!r}")
    scrub = default_redactor().scrub
    note = scrub(_text(note, "note", TEXT_MAX, required=False))[0] if rubric["note"] else ""
    should_have = scrub(_text(should_have, "should_have", TEXT_MAX, required=False))[0] if rubric["should_have"] else ""
    try:
        store.save_queue_review(
            queue_id, item_id, reviewer, verdict=verdict, criteria=criteria, note=note, should_have=should_have
        )
    except KeyError:
        raise QueueError(f"queue {queue_id} has no item {item_id}") from None
    detail = {"reviewer": reviewer, "verdict": verdict}
    store.record_audit(actor, REVIEW, target=f"queue {queue_id} item {item_id}", detail=detail)


def skip(store: Store, queue_id: int, item_id: int, reviewer: str | None, *, actor: Actor | None = None) -> None:
    """Pass an item by: it comes back to this reviewer only after every other item."""
    _, reviewer, actor = _workable(store, queue_id, reviewer, actor)
    try:
        store.save_queue_review(queue_id, item_id, reviewer, verdict=None)
    except KeyError:
        raise QueueError(f"queue {queue_id} has no item {item_id}") from None
    store.record_audit(actor, REVIEW, target=f"queue {queue_id} item {item_id}", detail={"reviewer": reviewer, "skipped": True})


def release(store: Store, item_id: int, reviewer: str) -> None:
    """Let go of a held item (the reviewer closed it without a verdict)."""
    store.release_queue_item(item_id, reviewer)


# ---------------------------------------------------------------- results


def agreement(verdicts: list[str]) -> float | None:
    """Share of reviewer pairs that gave the same verdict (1.0: all agree); None under two reviews."""
    pairs = list(combinations(verdicts, 2))
    return sum(a == b for a, b in pairs) / len(pairs) if pairs else None


def results(store: Store, queue_id: int, *, now: datetime | None = None) -> dict:
    """The queue with its progress, `items` (each with its reviews, verdict counts, agreement, whether the run
    is still stored and who holds it), `reviewers` (per reviewer: reviews, skips, verdict counts) and
    `agreement` (mean over items with two reviews or more, with how many that is)."""
    from ..events import now_utc

    queue = get(store, queue_id)
    now = now or now_utc()
    by_item: dict[int, list[dict]] = {}
    for r in store.queue_reviews(queue_id):
        by_item.setdefault(r["item_id"], []).append(r)
    items: list[dict] = []
    people: dict[str, dict] = {}
    for it in store.queue_items(queue_id):
        given = [r for r in by_item.get(it["id"], []) if r["verdict"] is not None]
        held = it["held_by"] if it["held_until"] is not None and it["held_until"] > now else None
        items.append(
            {
                "id": it["id"],
                "position": it["position"],
                "session_id": it["session_id"],
                "name": it["name"],
                "status": it["status"],
                "stored": it["stored"] is not None,
                "held_by": held,
                "reviews": [_review_row(r) for r in given],
                "verdicts": dict(Counter(r["verdict"] for r in given)),
                "agreement": agreement([r["verdict"] for r in given]),
                "complete": len(given) >= queue["reviews_per_item"],
            }
        )
        for r in by_item.get(it["id"], []):
            p = people.setdefault(r["reviewer"], {"reviewer": r["reviewer"], "reviews": 0, "skipped": 0, "verdicts": Counter()})
            if r["verdict"] is None:
                p["skipped"] += 1
            else:
                p["reviews"] += 1
                p["verdicts"][r["verdict"]] += 1
    scored = [i["agreement"] for i in items if i["agreement"] is not None]
    return {
        "queue": {k: v for k, v in queue.items()},
        "items": items,
        "reviewers": [{**p, "verdicts": dict(p["verdicts"])} for p in sorted(people.values(), key=lambda p: p["reviewer"])],
        "agreement": {"mean": sum(scored) / len(scored) if scored else None, "items": len(scored)},
    }


def dataset_cases(result: dict) -> tuple[list[str], dict[str, str]]:
    """A queue's runs still stored, for a dataset (whatif.dataset.dataset_from_sessions), and per run the
    reviewers' "what should it have done" (their texts joined; a run without one keeps its own outcome)."""
    ids, expected = [], {}
    for it in result["items"]:
        if not it["stored"]:
            continue
        ids.append(it["session_id"])
        wanted = [r["should_have"] for r in it["reviews"] if r["should_have"]]
        if wanted:
            expected[it["session_id"]] = " / ".join(dict.fromkeys(wanted))
    return ids, expected


def _review_row(r: dict) -> dict:
    return {
        "reviewer": r["reviewer"],
        "verdict": r["verdict"],
        "criteria": r["criteria"] or {},
        "note": r["note"],
        "should_have": r["should_have"],
        "at": r["created_at"],
    }


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> Any:
    """A spreadsheet opens a cell starting with = + - @ as a formula: such text gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def to_csv(result: dict) -> str:
    """One row per review (an item without reviews: one row with an empty verdict); one column per criterion."""
    criteria = [c["name"] for c in result["queue"]["rubric"]["criteria"]]
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(
        [
            "position",
            "session_id",
            "run",
            "run_status",
            "reviewer",
            "verdict",
            *[f"criterion: {c}" for c in criteria],
            "note",
            "should_have",
            "reviewed_at",
            "item_agreement",
        ]
    )
    for item in result["items"]:
        head = [
            item["position"],
            item["session_id"],
            item["name"] or "",
            item["status"] or ("gone" if not item["stored"] else ""),
        ]
        agree = "" if item["agreement"] is None else f"{item['agreement']:.2f}"
        for r in item["reviews"] or [None]:
            if r is None:
                writer.writerow([_cell(v) for v in head] + ["", "", *[""] * len(criteria), "", "", "", agree])
                continue
            writer.writerow(
                [
                    _cell(v)
                    for v in [
                        *head,
                        r["reviewer"],
                        r["verdict"],
                        *[r["criteria"].get(c, "") for c in criteria],
                        r["note"] or "",
                        r["should_have"] or "",
                        r["at"].isoformat(),
                        agree,
                    ]
                ]
            )
    return buf.getvalue()
