"""Datasets: named, versioned sets of cases an experiment replays.

A case is a recorded run plus what counts as right for it: the original's own outcome
(its final answer) unless a reviewer wrote an expected outcome. A dataset is made from a
filter (the SessionFilter the runs list uses) or from ids; adding cases makes its next
version, and an experiment is pinned to the version it ran on. Export writes JSON Lines
(a `dataset` line, then one `case` line per case) that import reads back; the runs
themselves travel with `agent-replay export`, so import refuses cases whose run is not in
the database, naming the line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from ..storage.store import SessionFilter, Store
from ..storage.tables import datasets
from ..storage.widths import fit

MATCH_RULES = ("equals", "contains", "regex")
SCHEMA = "agent-replay/dataset-v1"


class DatasetError(ValueError):
    """Bad dataset input (unknown run, taken name, bad rule, bad JSONL line); nothing was stored."""


@dataclass(frozen=True)
class Case:
    session_id: str
    expected: str | None = None


def parse_since(value: str, now: datetime | None = None) -> datetime:
    """`7d` (the last 7 days), `12h`, a day (2026-05-01) or an ISO date-time, as UTC."""
    text = value.strip()
    found = re.fullmatch(r"(\d+)\s*([dh])", text)
    if found:
        amount = int(found.group(1))
        delta = timedelta(days=amount) if found.group(2) == "d" else timedelta(hours=amount)
        return (now or datetime.now(UTC)) - delta
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise DatasetError(f"--since: expected 7d, 12h, a date (2026-05-01) or an ISO date-time, got {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _check_match(match: str, cases: Iterable[Case]) -> None:
    if match not in MATCH_RULES:
        raise DatasetError(f"match: expected one of {', '.join(MATCH_RULES)}, got {match!r}")
    if match == "regex":
        for case in cases:
            if case.expected is not None:
                try:
                    re.compile(case.expected)
                except re.error as exc:
                    raise DatasetError(f"case {case.session_id}: expected is not a valid regex ({exc})") from None


def resolve(
    store: Store, *, runs: list[str] | None = None, flt: SessionFilter | None = None, expected: str | None = None
) -> tuple[list[Case], dict]:
    """The cases named by ids or matched by a filter, and a description of how they were chosen."""
    if runs:
        ids = list(dict.fromkeys(runs))
        known = set(store.session_ids(SessionFilter(ids=tuple(ids), experiments=True)))
        missing = [i for i in ids if i not in known]
        if missing:
            raise DatasetError(f"--runs: no such run: {', '.join(missing[:5])}" + (" …" if len(missing) > 5 else ""))
        made_from: dict[str, Any] = {"runs": ids}
    elif flt is not None:
        ids = store.session_ids(flt)
        made_from = {
            "filter": {k: (str(v) if k in ("since", "until") else v) for k, v in vars(flt).items() if v not in (None, False)}
        }
    else:
        raise DatasetError("name the runs (--runs ID …) or a filter (--status, --workflow, --since, --search)")
    if not ids:
        raise DatasetError("no run matches: a dataset needs at least one case")
    if expected is not None:
        made_from["expected"] = expected
    return [Case(i, expected) for i in ids], made_from


def create(
    store: Store, name: str, cases: list[Case], *, match: str = "equals", description: str | None = None, made_from: Any = None
) -> dict:
    name = (name or "").strip()
    if not name:
        raise DatasetError("name: give the dataset a name")
    if not cases:
        raise DatasetError("a dataset needs at least one case")
    _check_match(match, cases)
    try:
        return store.create_dataset(
            fit("name", name, datasets.c.name),
            [(c.session_id, c.expected) for c in cases],
            match=match,
            description=description,
            made_from=made_from,
        )
    except ValueError as exc:
        raise DatasetError(str(exc)) from None


def get(store: Store, name: str) -> dict:
    found = store.get_dataset(name)
    if found is None:
        raise DatasetError(f"no dataset named {name!r}")
    return found


def add(store: Store, name: str, cases: list[Case], *, made_from: Any = None) -> dict:
    """Add cases as the dataset's next version (runs it holds already are skipped and not counted)."""
    _check_match(get(store, name)["match"], cases)
    return store.add_dataset_cases(name, [(c.session_id, c.expected) for c in cases], made_from=made_from)


def show(store: Store, name: str, *, version: int | None = None) -> dict:
    """The dataset and its cases, each with its run's name, status and whether the run is still there."""
    ds = get(store, name)
    cases = store.dataset_cases(ds["id"], version=version)
    rows = {
        r["id"]: r
        for r in store.list_sessions(
            SessionFilter(ids=tuple(c["session_id"] for c in cases), experiments=True), limit=max(1, len(cases))
        )
    }
    out = {k: ds[k] for k in ("id", "name", "version", "match", "description", "made_from", "created_at", "updated_at")}
    out["cases"] = [
        {
            "session": c["session_id"],
            "expected": c["expected"],
            "version": c["version"],
            "name": (rows.get(c["session_id"]) or {}).get("name"),
            "status": (rows.get(c["session_id"]) or {}).get("status"),
            "missing": c["session_id"] not in rows,
        }
        for c in cases
    ]
    return out


def export_lines(store: Store, name: str) -> Iterator[str]:
    """JSON Lines: the dataset, then one line per case."""
    ds = show(store, name)
    yield orjson.dumps(
        {
            "schema": SCHEMA,
            "kind": "dataset",
            "name": ds["name"],
            "version": ds["version"],
            "match": ds["match"],
            "description": ds["description"],
        }
    ).decode()
    for case in ds["cases"]:
        yield orjson.dumps({"kind": "case", "session": case["session"], "expected": case["expected"]}).decode()


def import_lines(store: Store, lines: Iterable[str], *, where: str = "<input>", name: str | None = None) -> dict:
    """Read exported JSON Lines back as a new dataset; the first bad line refuses the whole file."""
    header: dict | None = None
    cases: list[Case] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{where}:{number}: not JSON ({exc.args[0]})") from None
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if header is None:
            if kind != "dataset" or not isinstance(obj.get("name"), str):
                raise DatasetError(f"{where}:{number}: expected the dataset line first (kind 'dataset' with a name)")
            header = obj
        elif kind == "case":
            sid, expected = obj.get("session"), obj.get("expected")
            if not isinstance(sid, str) or not sid or not (expected is None or isinstance(expected, str)):
                raise DatasetError(f"{where}:{number}: a case needs 'session' (text) and 'expected' (text or null)")
            if store.get_session(sid) is None:
                raise DatasetError(f"{where}:{number}: run {sid!r} is not in this database (import the runs first)")
            cases.append(Case(sid, expected))
        else:
            raise DatasetError(f"{where}:{number}: expected kind 'case', got {kind!r}")
    if header is None:
        raise DatasetError(f"{where}: empty, expected a dataset line")
    return create(
        store,
        name or header["name"],
        cases,
        match=header.get("match") or "equals",
        description=header.get("description"),
        made_from={"imported": where},
    )


def dataset_from_sessions(
    store: Store,
    name: str,
    session_ids: Iterable[str],
    *,
    expected: str | dict[str, str] | None = None,
    match: str = "equals",
    description: str | None = None,
    made_from: Any = None,
) -> dict:
    """A selection of runs (ids picked on a page, a review queue's items) as a dataset's new version.

    A new name makes version 1; an existing one gets the runs it does not hold as its next
    version (see `add`). `expected`: one text for every case, or per run id (a review
    queue's "what should it have done"); runs without one are judged by their own outcome.
    Unknown ids refuse the whole call. Returns the dataset with `cases` (and `added` when it grew).
    """
    ids = [i for i in dict.fromkeys(session_ids) if i]
    cases, chosen = resolve(store, runs=ids)
    if isinstance(expected, dict):
        cases = [Case(c.session_id, expected.get(c.session_id)) for c in cases]
    elif expected is not None:
        cases = [Case(c.session_id, expected) for c in cases]
    made_from = made_from if made_from is not None else chosen
    if store.get_dataset(name.strip() if name else "") is not None:
        return add(store, name.strip(), cases, made_from=made_from)
    return create(store, name, cases, match=match, description=description, made_from=made_from)


def dataset_from_filter(
    store: Store,
    name: str,
    flt: SessionFilter,
    *,
    expected: str | None = None,
    match: str = "equals",
    description: str | None = None,
) -> dict:
    """The runs a SessionFilter matches (the runs list's) as a dataset's new version (see dataset_from_sessions)."""
    cases, made_from = resolve(store, flt=flt, expected=expected)
    return dataset_from_sessions(
        store, name, [c.session_id for c in cases], expected=expected, match=match, description=description, made_from=made_from
    )


FILTER_KEYS = {
    "status": "status",
    "model": "model",
    "agent": "agent_id",
    "workflow": "workflow",
    "environment": "environment",
    "tag": "tag",
    "since": "since",
    "until": "until",
    "search": "text",
    "error_class": "error_class",
    "failed_tool": "failed_tool",
}


def parse_filter(text: str | dict) -> SessionFilter:
    """`status=failed model=gpt-4o since=7d` (or the same as a dict) as a SessionFilter; unknown keys refused."""
    if isinstance(text, dict):
        items = list(text.items())
    else:
        items = []
        for part in text.replace(",", " ").split():
            key, sep, value = part.partition("=")
            if not sep or not value:
                raise DatasetError(f"filter: expected KEY=VALUE, got {part!r}")
            items.append((key, value))
    values: dict[str, Any] = {}
    for key, value in items:
        if key not in FILTER_KEYS:
            raise DatasetError(f"filter.{key}: not a filter (use {', '.join(FILTER_KEYS)})")
        if value in (None, ""):
            continue
        if not isinstance(value, str):
            raise DatasetError(f"filter.{key}: expected text")
        values[FILTER_KEYS[key]] = parse_since(value) if key in ("since", "until") else value
    if not values:
        raise DatasetError("filter: give at least one of " + ", ".join(FILTER_KEYS))
    return SessionFilter(**values)
