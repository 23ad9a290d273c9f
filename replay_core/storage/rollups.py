"""Per-run rollups: one row per run (`run_rollups`) and one per run, tool and error class
(`run_breakdown`), the one definition of what analytics counts in a run's steps.

Kept exact by recomputing a run's rows whenever its steps change, in the same transaction:
from the rows in hand for a run created by the write (a file import: nothing to read back),
else from its stored steps, or carried on from its stored rollup where that is exact without
reading the run (`append`: new steps landing in one spot; `swapped`: a step taken over by
another). A late, duplicate or out-of-order step is therefore no special case: whatever the
steps are after the write, the rollup is what a from-scratch pass over them gives (`rebuild`,
`agent-replay db rebuild-rollups`, migration 0009_rollups).

Definitions (the numbers analytics showed when it summed the steps at read time):
errored step: type `error` or status `error`; a cost is unknown for a step with tokens and
no cost; a retried step has retry > 0; an approval is an `input` step with metadata
`approval: true`; a fallback block is a `span` with metadata `block: "fallback"`, taken over
by the agent when `agent_invoked: true`; cycles follow the phase order think < tool_call <
tool_result < observation < decision (a fall opens a cycle, errors join the current one);
a loop is one tool called with the same arguments (as JSON values) three times or more,
retries aside; a redundant call repeats one whose successful result was already seen. A call's
tool and arguments are stored hashed with it (`call_key`, steps.call_key), which a live run's
next batch reads its repeats by; a rebuild computes the keys again from the stored arguments.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import itemgetter
from types import SimpleNamespace
from typing import Any, NamedTuple

import orjson
from sqlalchemy import delete, select
from sqlalchemy.engine import Connection

from .bulk import by_rows
from .tables import run_breakdown, run_rollups, steps

# what a rollup reads of a step, in this order
FIELDS = (
    "seq",
    "type",
    "status",
    "retry",
    "duration_ms",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "timestamp",
    "tool_name",
    "error_class",
    "call_key",
    "tool_call_id",
    "metadata",
)
_KEY_AT, _TYPE_AT, _TOOL_AT = FIELDS.index("call_key"), FIELDS.index("type"), FIELDS.index("tool_name")
ROLLUP_COLUMNS = tuple(c.name for c in run_rollups.c)
BREAKDOWN_COLUMNS = tuple(c.name for c in run_breakdown.c)
_PHASE = {"think": 0, "tool_call": 1, "tool_result": 2, "observation": 3, "decision": 4}
_CHUNK = 500
SWAP_FROM = 1000  # steps of a run per swap in a batch from which `swapped` reads less than `refresh` (~1,000 steps)


def call_key(kind: str, tool: str | None, args: Any) -> str | None:
    """What groups a run's tool calls into loops: the tool and its arguments as JSON values (keys
    sorted), hashed to 32 hex digits; None for a step that is not a call of a named tool."""
    if kind != "tool_call" or tool is None:
        return None
    text = orjson.dumps([tool, args], option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.blake2b(text, digest_size=16).hexdigest()


def rollup_of(session_id: str, rows: Iterable[Sequence]) -> tuple[tuple, list[tuple]] | None:
    """A run's rollup row and breakdown rows from its steps (tuples in FIELDS order, in seq
    order, ties in storage order); None for a run without steps."""
    state = _fold(_empty(), rows)
    if not state[0]:
        return None
    loops, redundant = _loops(state[-2], state[-1])
    return _rolled(session_id, state, loops, redundant)


# What the fold carries from step to step: the counts, sums and extremes a rollup row holds (with
# `falls`, `last_phase` and `phased` for cycles, the durations as strings), the breakdown
# {(tool, error class): [calls, errored]}, the calls {call key: [(seq, call id)]} and the
# first ok result's seq per call id (loops and redundant calls are worked out from those two).
def _empty() -> tuple:
    return (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, None, None, None, None, None, None, False, [], {}, {}, {})


def _fold(state: tuple, rows: Iterable[Sequence]) -> tuple:
    """`state` carried over `rows` (in seq order, ties in storage order); its lists and dicts are added to."""
    (
        n,
        retried,
        errored,
        unknown,
        blocked,
        approvals,
        blocks,
        agent,
        calls_n,
        failures,
        falls,
        tokens_in,
        tokens_out,
        cost,
        max_seq,
        first_error,
        last_phase,
        phased,
        durations,
        breakdown,
        calls,
        ok_at,
    ) = state
    for seq, kind, status, retry, dur, t_in, t_out, c, ts, tool, ecls, key, call_id, meta in rows:
        n += 1
        if max_seq is None or seq > max_seq:
            max_seq = seq
        if t_in is not None:
            tokens_in = t_in if tokens_in is None else tokens_in + t_in
        if t_out is not None:
            tokens_out = t_out if tokens_out is None else tokens_out + t_out
        if c is not None:
            cost = c if cost is None else cost + c
        elif (t_in or 0) > 0 or (t_out or 0) > 0:
            unknown += 1
        if retry:
            retried += 1
        if dur is not None:
            durations.append(str(int(dur * 1000)))
        bad = kind == "error" or status == "error"
        if status == "blocked":
            blocked += 1
        phase = _PHASE.get(kind)
        if phase is not None:
            if last_phase is not None and phase < last_phase:
                falls += 1
            last_phase, phased = phase, True
        elif kind == "error":
            phased = True
        elif meta and type(meta) is dict:
            if kind == "input" and meta.get("approval") is True:
                approvals += 1
            elif kind == "span" and meta.get("block") == "fallback":
                blocks += 1
                agent += meta.get("agent_invoked") is True
        if bad:
            errored += 1
            if ts is not None and (first_error is None or ts < first_error):
                first_error = ts
            if tool is not None:
                failures += 1
        if kind == "tool_call" or bad:
            counts = breakdown.setdefault((tool, ecls), [0, 0])
            if kind == "tool_call":
                counts[0] += 1
                calls_n += tool is not None
                if not retry and key is not None:
                    calls.setdefault(key, []).append((seq, call_id))
            if bad:
                counts[1] += 1
        elif kind == "tool_result" and status == "ok" and call_id is not None and (call_id not in ok_at or seq < ok_at[call_id]):
            ok_at[call_id] = seq
    return (
        n,
        retried,
        errored,
        unknown,
        blocked,
        approvals,
        blocks,
        agent,
        calls_n,
        failures,
        falls,
        tokens_in,
        tokens_out,
        cost,
        max_seq,
        first_error,
        last_phase,
        phased,
        durations,
        breakdown,
        calls,
        ok_at,
    )


def _loops(calls: dict[str, list[tuple]], ok_at: dict[str, int]) -> tuple[int, int]:
    """Loops (a tool with the same arguments called 3+ times) and redundant calls (a repeat of a
    call whose ok result was already seen) among these groups of calls."""
    loops = redundant = 0
    for group in calls.values():
        if len(group) < 2:
            continue
        loops += len(group) >= 3
        seen = [ok_at[cid] for _, cid in group if cid in ok_at]
        if seen:
            first_ok = min(seen)
            redundant += sum(1 for seq, _ in group if seq > first_ok)
    return loops, redundant


def _rolled(session_id: str, state: tuple, loops: int, redundant: int) -> tuple[tuple, list[tuple]]:
    (
        n,
        retried,
        errored,
        unknown,
        blocked,
        approvals,
        blocks,
        agent,
        calls_n,
        failures,
        falls,
        tokens_in,
        tokens_out,
        cost,
        max_seq,
        first_error,
        _,
        phased,
        durations,
        breakdown,
        _,
        _,
    ) = state
    row = (
        session_id,
        n,
        max_seq,
        tokens_in,
        tokens_out,
        cost,
        unknown,
        retried,
        errored,
        first_error,
        blocked,
        approvals,
        blocks,
        agent,
        calls_n,
        failures,
        (falls + 1) if phased else 0,
        loops,
        redundant,
        ",".join(durations) or None,
    )
    return row, [(session_id, tool, ecls, a, b) for (tool, ecls), (a, b) in breakdown.items()]


def write(conn: Connection, session_ids: Sequence[str], rolled: Iterable[tuple[tuple, list[tuple]] | None], insert_rows) -> None:
    """Replace the rollups of `session_ids` with `rolled` (None: a run without steps)."""
    forget(conn, session_ids)
    mains, parts = [], []
    for item in rolled:
        if item is not None:
            mains.append(item[0])
            parts += item[1]
    insert_rows(conn, run_rollups, ROLLUP_COLUMNS, mains)
    insert_rows(conn, run_breakdown, BREAKDOWN_COLUMNS, parts)


def forget(conn: Connection, session_ids: Sequence[str]) -> None:
    for start in range(0, len(session_ids), _CHUNK):
        part = list(session_ids[start : start + _CHUNK])
        conn.execute(delete(run_breakdown).where(run_breakdown.c.session_id.in_(part)))
        conn.execute(delete(run_rollups).where(run_rollups.c.session_id.in_(part)))


def from_stored(conn: Connection, session_ids: Sequence[str], *, keyed: bool = False) -> list[tuple[tuple, list[tuple]] | None]:
    """Rollups recomputed from the stored steps of `session_ids`, the calls' keys from their stored
    arguments (not from steps.call_key: a from-scratch pass, which the tests hold the keyed one to), or
    with `keyed` the stored keys (`refresh`: every write of a call's arguments writes its key)."""
    out = []
    key_column = "call_key" if keyed else "tool_args"
    cols = [steps.c.session_id, *(steps.c[key_column if name == "call_key" else name] for name in FIELDS)]
    for start in range(0, len(session_ids), _CHUNK):
        part = list(session_ids[start : start + _CHUNK])
        query = select(*cols).where(steps.c.session_id.in_(part)).order_by(steps.c.session_id, steps.c.seq, steps.c.id)
        found = {
            sid: rollup_of(sid, (r[1:] if keyed else _keyed(r[1:]) for r in rows))
            for sid, rows in groupby(conn.execute(query), key=itemgetter(0))
        }
        out += [found.get(sid) for sid in part]
    return out


def _keyed(row: Sequence) -> tuple:
    """A stored step read with its arguments where FIELDS has the call key, the key computed."""
    return (*row[:_KEY_AT], call_key(row[_TYPE_AT], row[_TOOL_AT], row[_KEY_AT]), *row[_KEY_AT + 1 :])


def refresh(conn: Connection, session_ids: Sequence[str], insert_rows) -> None:
    """Recompute the rollups of these runs from their stored steps (and their stored call keys)."""
    ids = sorted(set(session_ids))
    if ids:
        write(conn, ids, from_stored(conn, ids, keyed=True), insert_rows)


def append(
    conn: Connection,
    added: dict[str, list[Sequence]],
    insert_rows,
    landed: dict[str, tuple[int, int, bool] | None] | None = None,
) -> None:
    """The rollups of runs that have just stored `added` steps (FIELDS tuples, in the order stored).
    A run whose new steps all land in one spot of its order, no stored step among them (a live run's
    next batch after its stored steps; a late root, or a batch sent out of order, before or between
    them), goes on from its stored rollup, reading back only the phases on either side of the spot, the
    calls its new steps group with (the loops they may make or end) and, when it lands before some, how
    many stored durations come before it; any other is recomputed from its steps (`refresh`): the same
    rows either way, without reading a long run whole at each batch. `landed` (a write that placed its
    steps itself) gives each run's spot, the first and last seq of its new steps and whether stored steps
    follow them (None: several spots); without it, new steps are in one spot when they all come after
    the stored ones. The runs carried on are read together (`_carried`): a few statements for the write."""
    r = run_rollups.c
    ids = sorted(added)
    stored: dict[str, Any] = {}
    for start in range(0, len(ids), _CHUNK):
        stored.update(
            (row.session_id, row)
            for row in conn.execute(select(run_rollups).where(r.session_id.in_(ids[start : start + _CHUNK])))
        )
    again, carry = [], []
    for sid in ids:
        rows = sorted(added[sid], key=itemgetter(0))
        row = stored.get(sid)
        if row is None or not rows:
            again.append(sid)
            continue
        if landed is not None:
            spot = landed.get(sid)
        else:
            spot = (rows[0][0], rows[-1][0], False) if rows[0][0] > row.max_seq else None
        if spot is None:
            again.append(sid)
        else:
            carry.append(_Carry(sid, row, rows, spot))
    write(conn, [item.sid for item in carry], _carried(conn, carry), insert_rows)
    refresh(conn, again, insert_rows)


class _Carry(NamedTuple):
    """A run's stored rollup `row` (with `breakdown` its {(tool, error class): [calls, errored]}, read when None) to
    carry over `rows`, its new steps (FIELDS, in seq order), whose seqs are `spot` (first, last, whether stored steps
    follow) with no stored step between: the steps stored before this write are those outside it."""

    sid: str
    row: Any
    rows: list[Sequence]
    spot: tuple[int, int, bool]
    breakdown: dict | None = None


def _carried(conn: Connection, items: Sequence[_Carry]) -> list[tuple[tuple, list[tuple]]]:
    """Each item's rollup carried on over its new steps: what it reads of its run (the phases beside its spot,
    the stored calls its new ones group with and their first ok results, its breakdown, the stored durations
    before its spot) read for all the items at once, a statement per kind of read."""
    if not items:
        return []
    around = _around(conn, [(k, item.sid, item.spot[0], item.spot[1]) for k, item in enumerate(items)])
    new_calls = [
        [
            (key, call_id)
            for _, kind, _, retry, _, _, _, _, _, _, _, key, call_id, _ in item.rows
            if kind == "tool_call" and not retry and key is not None
        ]
        for item in items
    ]
    new_ok = [
        [
            call_id
            for _, kind, status, *_, call_id, _ in item.rows
            if kind == "tool_result" and status == "ok" and call_id is not None
        ]
        for item in items
    ]
    # the stored repeats of the new calls, and the groups of the stored calls a new ok result answers (it may make
    # their repeats redundant: their groups are touched too), then the first ok result of each of their call ids (the
    # steps of the ids read for the new results already are not read again)
    asked = [sorted(set(ok)) for ok in new_ok]
    answered = _stored_by(conn, "tool_call_id", items, asked)
    keys = [
        sorted({key for key, _ in calls} | {r[3] for r in found if r[3] is not None})
        for calls, found in zip(new_calls, answered, strict=True)
    ]
    grouped = _stored_by(conn, "call_key", items, keys)
    calls_of, wanted = [], []
    for k in range(len(items)):
        stored_calls: dict[str, list[tuple]] = {}
        for seq, retry, key, call_id in grouped[k]:
            if not retry:
                stored_calls.setdefault(key, []).append((seq, call_id))
        ok_new = set(new_ok[k])
        touched = {key for key, _ in new_calls[k]} | {
            key for key, group in stored_calls.items() if any(cid in ok_new for _, cid in group)
        }
        calls = {key: stored_calls[key] for key in touched if key in stored_calls}
        calls_of.append(calls)
        wanted.append(
            sorted(
                {cid for group in calls.values() for _, cid in group if cid is not None}
                | {cid for _, cid in new_calls[k] if cid is not None}
            )
        )
    more = _stored_by(conn, "tool_call_id", items, [sorted(set(ids) - set(had)) for ids, had in zip(wanted, asked, strict=True)])
    results = []
    for ids, found, extra in zip(wanted, answered, more, strict=True):
        mine = set(ids)
        results.append([*(r for r in found if r[4] in mine), *extra])
    breakdowns = _breakdowns(conn, sorted({item.sid for item in items if item.breakdown is None}))
    states, counts = [], []
    for k, item in enumerate(items):
        ok_at: dict[str, int] = {}
        for seq, kind, status, _, call_id in results[k]:
            if kind == "tool_result" and status == "ok" and (call_id not in ok_at or seq < ok_at[call_id]):
                ok_at[call_id] = seq
        breakdown = item.breakdown if item.breakdown is not None else breakdowns.get(item.sid, {})
        state, count = _folded(item, around[k], calls_of[k], ok_at, breakdown)
        states.append(state)
        if count is not None:
            counts.append((k, *count))
    before = _durations_before(conn, counts)
    return [_finished(item, state, before.get(k)) for k, (item, state) in enumerate(zip(items, states, strict=True))]


def _folded(item: _Carry, around: tuple, calls: dict, ok_at: dict, breakdown: dict) -> tuple[tuple, tuple | None]:
    """An item's state carried over its new steps (`_fold`) with the loops and redundant calls before them, and where the stored
    durations are to be counted ((run, lo, hi, top, how many stored)) when the new ones land before some."""
    row, (lo, hi, inside) = item.row, item.spot
    last, top, following = around
    top = (top or 0) if inside else hi
    following = following if inside else None
    old_loops, old_redundant = _loops(calls, ok_at)
    phase_before = _PHASE.get(last) if last else None
    phase_after = _PHASE.get(following) if following else None
    falls = max(row.cycles - 1, 0)
    if phase_before is not None and phase_after is not None and phase_after < phase_before:
        falls -= 1  # the fall from the step before the spot to the step after it, which the new ones now separate
    state: tuple = (
        row.steps,
        row.retried_steps,
        row.errored_steps,
        row.cost_unknown_steps,
        row.blocked_steps,
        row.approvals,
        row.fallback_blocks,
        row.fallback_agent,
        row.tool_calls,
        row.tool_failures,
        falls,
        row.tokens_in,
        row.tokens_out,
        row.cost_usd,
        top,
        row.first_error_at,
        phase_before,
        row.cycles > 0,
        [],
        breakdown,
        calls,
        ok_at,
    )
    state = _fold(state, item.rows)
    falls, last_phase = state[10], state[16]
    if phase_after is not None and last_phase is not None and phase_after < last_phase:
        falls += 1
    state = (*state[:10], falls, *state[11:14], top, *state[15:])
    stored_durations = row.durations_us
    count = None
    if stored_durations and state[18] and inside:
        count = (item.sid, lo, hi, top, stored_durations.count(",") + 1)
    return (state, old_loops, old_redundant), count


def _finished(item: _Carry, folded: tuple, at: int | None) -> tuple[tuple, list[tuple]]:
    """An item's rollup rows from its folded state and the loops before its new steps (`_folded`), and how many
    stored durations come before its spot."""
    row = item.row
    state, old_loops, old_redundant = folded
    durations, stored_durations = state[18], row.durations_us
    if stored_durations and not durations:
        durations = [stored_durations]
    elif stored_durations and at is None:
        durations = [stored_durations, *durations]
    elif stored_durations:
        head = stored_durations.split(",", at) if at else [stored_durations]
        durations = [*head[:at], *durations, *head[at:]]
    state = (*state[:18], durations, *state[19:])
    loops, redundant = _loops(state[-2], state[-1])
    return _rolled(item.sid, state, row.loops - old_loops + loops, row.redundant_calls - old_redundant + redundant)


def swapped(
    conn: Connection, sid: str, old: Sequence, new: Sequence, held: tuple[tuple, list[tuple]] | None = None
) -> tuple[tuple, list[tuple]] | None:
    """The rollup of `sid` once its step `old` (FIELDS) became `new` at the same seq (a tool span taking over the
    call an earlier batch stored), carried from `held` (what the previous swap of this run gave) or the stored
    rollup: `old` taken out, then `new` carried on as a step landing at that seq (`_carried`), reading the
    phases beside it, the calls its keys group with and the durations on the shorter side of it, not the run.
    None where taking `old` out cannot be exact (tokens or a cost of its own, the run's first error, an error
    step, a phase the run may hold no other of): the caller recomputes the run."""
    seq, kind, status, retry, dur, t_in, t_out, cost, ts, tool, ecls, key, call_id, meta = old
    if new[0] != seq or kind == "error" or t_in is not None or t_out is not None or cost is not None:
        return None
    if held is None:
        stored = conn.execute(select(run_rollups).where(run_rollups.c.session_id == sid)).first()
        if stored is None:
            return None
        parts = _breakdowns(conn, [sid]).get(sid, {})
        held = (tuple(stored), [(sid, tool_name, error, n, bad) for (tool_name, error), (n, bad) in parts.items()])
    row = SimpleNamespace(**dict(zip(ROLLUP_COLUMNS, held[0], strict=True)))  # as `_carried` reads a stored one
    bad = status == "error"
    if bad and ts is not None and ts == row.first_error_at:
        return None
    item = _Carry(sid, row, [], (seq, seq, False))
    kind_before, top, kind_after = _around(conn, [(0, sid, seq, seq)])[0]
    top = top or seq
    phase = _PHASE.get(kind)
    falls, phased = max(row.cycles - 1, 0), row.cycles > 0
    if phase is not None:
        before = _PHASE.get(kind_before or "")
        after = _PHASE.get(kind_after or "")
        if before is None and after is None:
            return None
        falls += -(before is not None and phase < before) - (after is not None and after < phase)
        falls += before is not None and after is not None and after < before
    loops, redundant = row.loops, row.redundant_calls
    a_call = kind == "tool_call" and not retry and key is not None
    answered = kind == "tool_result" and status == "ok" and call_id is not None
    keys = {key} if a_call else set()
    if answered:  # the groups of the calls it answered: it may have made their repeats redundant
        keys.update(k for *_, k, _ in _stored_by(conn, "tool_call_id", [item], [[call_id]])[0] if k is not None)
    if keys:
        groups: dict[str, list[tuple]] = {}
        for s, r, k, cid in _stored_by(conn, "call_key", [item], [sorted(keys)])[0]:
            if not r:
                groups.setdefault(k, []).append((s, cid))
        ids = {cid for group in groups.values() for _, cid in group if cid is not None} | {call_id} - {None}
        ok_at: dict[str, int] = {}  # without `old`
        for s, k, st, _, cid in _stored_by(conn, "tool_call_id", [item], [sorted(ids)])[0]:
            if k == "tool_result" and st == "ok" and (cid not in ok_at or s < ok_at[cid]):
                ok_at[cid] = s
        with_old = {k: [*group, *([(seq, call_id)] if a_call and k == key else [])] for k, group in groups.items()}
        if a_call:
            with_old.setdefault(key, [(seq, call_id)])
        ok_with = ok_at | ({call_id: min(seq, ok_at.get(call_id, seq))} if answered else {})
        was, now = _loops(with_old, ok_with), _loops(groups, ok_at)
        loops, redundant = loops - was[0] + now[0], redundant - was[1] + now[1]
    breakdown = {(t, e): [n, b] for _, t, e, n, b in held[1]}
    if kind == "tool_call" or bad:
        counts = breakdown[(tool, ecls)]
        counts[0] -= kind == "tool_call"
        counts[1] -= bad
        if counts == [0, 0]:
            del breakdown[(tool, ecls)]
    durations = row.durations_us
    if dur is not None and durations:
        at = _durations_before(conn, [(0, sid, seq, seq, top, durations.count(",") + 1)])[0]
        items = durations.split(",", at + 1)
        del items[at]
        durations = ",".join(items) or None
    meta_counts = type(meta) is dict and phase is None
    vars(row).update(  # the rollup without `old`
        steps=row.steps - 1,
        retried_steps=row.retried_steps - bool(retry),
        errored_steps=row.errored_steps - bad,
        blocked_steps=row.blocked_steps - (status == "blocked"),
        approvals=row.approvals - (meta_counts and kind == "input" and meta.get("approval") is True),
        fallback_blocks=row.fallback_blocks - (meta_counts and kind == "span" and meta.get("block") == "fallback"),
        fallback_agent=row.fallback_agent
        - (meta_counts and kind == "span" and meta.get("block") == "fallback" and meta.get("agent_invoked") is True),
        tool_calls=row.tool_calls - (kind == "tool_call" and tool is not None),
        tool_failures=row.tool_failures - (bad and tool is not None),
        cycles=falls + 1 if phased else 0,
        loops=loops,
        redundant_calls=redundant,
        durations_us=durations,
    )
    return _carried(conn, [_Carry(sid, row, [new], (seq, seq, top > seq), breakdown)])[0]


# `_carried`'s reads, each one statement for a write's runs (bulk.by_rows, a row of values per run or per value
# asked): a lookup per row by the steps' indexes, (session_id, seq) for the phases and counts, ix_steps_call_id and
# ix_steps_call_key for the calls (the IS NOT NULL lets SQLite take those partial indexes)
_PHASED = ", ".join(f"'{kind}'" for kind in _PHASE)
_AROUND = (
    "SELECT b.k,"
    f" (SELECT s.type FROM steps s WHERE s.session_id = b.sid AND s.seq < b.lo AND s.type IN ({_PHASED})"
    " ORDER BY s.seq DESC, s.id DESC LIMIT 1),"
    " (SELECT max(s.seq) FROM steps s WHERE s.session_id = b.sid),"
    f" (SELECT s.type FROM steps s WHERE s.session_id = b.sid AND s.seq > b.hi AND s.type IN ({_PHASED})"
    " ORDER BY s.seq, s.id LIMIT 1) FROM b"
)
_FIELDS_BY = {
    "tool_call_id": "s.seq, s.type, s.status, s.call_key, s.tool_call_id",
    "call_key": "s.seq, s.retry, s.call_key, s.tool_call_id",
}
_COUNTED = (
    "SELECT b.k, (SELECT count(s.duration_ms) FROM steps s WHERE s.session_id = b.sid AND s.seq > b.a AND s.seq < b.z) FROM b"
)
_FAR = 2**62  # beyond any seq: a count bounded on one side
_RUN_AND_SEQS, _RUN_AND_TEXT = ("bigint", "text", "bigint", "bigint"), ("bigint", "text", "text")


def _around(conn: Connection, asked: Sequence[tuple[int, str, int, int]]) -> dict[int, tuple]:
    """For each (k, run, lo, hi) asked: the type of the run's last phased step before seq `lo`, its top seq and
    the type of its first phased step after seq `hi`, by k."""
    return {
        int(k): (last, top, after)
        for k, last, top, after in by_rows(conn, ("k", "sid", "lo", "hi"), _RUN_AND_SEQS, asked, _AROUND)
    }


def _stored_by(conn: Connection, column: str, items: Sequence[_Carry], values: Sequence[Sequence[str]]) -> list[list[tuple]]:
    """Per item, its run's steps whose `column` (tool_call_id or call_key) is one of its `values` (each once), those
    outside its spot (stored before this write), each once: the fields `_FIELDS_BY[column]`."""
    asked = [(k, item.sid, value) for k, (item, mine) in enumerate(zip(items, values, strict=True)) for value in mine]
    out: list[list[tuple]] = [[] for _ in items]
    if not asked:
        return out
    for k, *fields in by_rows(conn, ("k", "sid", "v"), _RUN_AND_TEXT, asked, stored_by(column, conn.dialect.name)):
        k = int(k)
        lo, hi, _ = items[k].spot
        if not lo <= fields[0] <= hi:
            out[k].append(tuple(fields))
    return out


def stored_by(column: str, dialect: str) -> str:
    """`_stored_by`'s statement after its values: the steps of each row's run and value by the index on (session_id,
    `column`); on PostgreSQL a LATERAL lookup per row (OFFSET 0 keeps it from being flattened into a join), as a join
    of the values was planned as a hash join over a scan of the steps while the table was small or unanalyzed."""
    fields = _FIELDS_BY[column]
    match = f"s.session_id = b.sid AND s.{column} = b.v AND s.{column} IS NOT NULL"
    if dialect == "postgresql":
        return f"SELECT b.k, s.* FROM b CROSS JOIN LATERAL (SELECT {fields} FROM steps s WHERE {match} OFFSET 0) s"
    return f"SELECT b.k, {fields} FROM b JOIN steps s ON {match}"


def _breakdowns(conn: Connection, sids: Sequence[str]) -> dict[str, dict[tuple, list[int]]]:
    """The stored breakdowns of these runs: {run: {(tool, error class): [calls, errored]}}, one read a chunk of runs."""
    b = run_breakdown.c
    out: dict[str, dict[tuple, list[int]]] = {}
    for part in _parts(sids):
        for sid, tool, ecls, n, bad in conn.execute(select(run_breakdown).where(b.session_id.in_(part))):
            out.setdefault(sid, {})[(tool, ecls)] = [n, bad]
    return out


def _durations_before(conn: Connection, asked: Sequence[tuple[int, str, int, int, int, int]]) -> dict[int, int]:
    """For each (k, run, lo, hi, top, its stored durations) asked: how many of the run's stored durations come before
    seq `lo`, counted on the shorter side of the spot, by k."""
    bounds, totals = [], {}
    for k, sid, lo, hi, top, stored in asked:
        if lo - 1 <= top - hi:
            bounds.append((k, sid, -_FAR, lo))
        else:
            bounds.append((k, sid, hi, _FAR))
            totals[k] = stored
    out = {}
    for k, n in by_rows(conn, ("k", "sid", "a", "z"), _RUN_AND_SEQS, bounds, _COUNTED):
        k = int(k)
        out[k] = totals[k] - (n or 0) if k in totals else (n or 0)
    return out


def _parts(items: Sequence) -> Iterable[list]:
    return (list(items[i : i + _CHUNK]) for i in range(0, len(items), _CHUNK))


def rebuild(conn: Connection, insert_rows, *, batch: int = 2000) -> int:
    """Every run's rollups from scratch; returns the runs rolled up."""
    conn.execute(delete(run_breakdown))
    conn.execute(delete(run_rollups))
    ids = list(conn.scalars(select(steps.c.session_id).distinct().order_by(steps.c.session_id)))
    for start in range(0, len(ids), batch):
        part = ids[start : start + batch]
        rolled = from_stored(conn, part)
        insert_rows(conn, run_rollups, ROLLUP_COLUMNS, [r[0] for r in rolled if r])
        insert_rows(conn, run_breakdown, BREAKDOWN_COLUMNS, [p for r in rolled if r for p in r[1]])
    return len(ids)
