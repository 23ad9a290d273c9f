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
from functools import cache
from itertools import groupby
from operator import itemgetter
from types import SimpleNamespace
from typing import Any

import orjson
from sqlalchemy import String, and_, bindparam, delete, func, literal_column, select
from sqlalchemy.engine import Connection

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


def from_stored(conn: Connection, session_ids: Sequence[str]) -> list[tuple[tuple, list[tuple]] | None]:
    """Rollups recomputed from the stored steps of `session_ids`, the calls' keys from their stored
    arguments (not from steps.call_key: a from-scratch pass, which the tests hold the keyed one to)."""
    out = []
    cols = [steps.c.session_id, *(steps.c["tool_args" if name == "call_key" else name] for name in FIELDS)]
    for start in range(0, len(session_ids), _CHUNK):
        part = list(session_ids[start : start + _CHUNK])
        query = select(*cols).where(steps.c.session_id.in_(part)).order_by(steps.c.session_id, steps.c.seq, steps.c.id)
        found = {
            sid: rollup_of(sid, (_keyed(r[1:]) for r in rows)) for sid, rows in groupby(conn.execute(query), key=itemgetter(0))
        }
        out += [found.get(sid) for sid in part]
    return out


def _keyed(row: Sequence) -> tuple:
    """A stored step read with its arguments where FIELDS has the call key, the key computed."""
    return (*row[:_KEY_AT], call_key(row[_TYPE_AT], row[_TOOL_AT], row[_KEY_AT]), *row[_KEY_AT + 1 :])


def refresh(conn: Connection, session_ids: Sequence[str], insert_rows) -> None:
    """Recompute the rollups of these runs from their stored steps."""
    ids = sorted(set(session_ids))
    if ids:
        write(conn, ids, from_stored(conn, ids), insert_rows)


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
    the stored ones."""
    r = run_rollups.c
    ids = sorted(added)
    stored: dict[str, Any] = {}
    for start in range(0, len(ids), _CHUNK):
        stored.update(
            (row.session_id, row)
            for row in conn.execute(select(run_rollups).where(r.session_id.in_(ids[start : start + _CHUNK])))
        )
    again, rolled = [], {}
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
            rolled[sid] = _carried_on(conn, sid, row, rows, spot)
    write(conn, list(rolled), rolled.values(), insert_rows)
    refresh(conn, again, insert_rows)


def _carried_on(
    conn: Connection, sid: str, row, rows: list[Sequence], spot: tuple[int, int, bool], breakdown: dict | None = None
) -> tuple[tuple, list[tuple]]:
    """`row` (the stored rollup of `sid`, with `breakdown` its {(tool, error class): [calls, errored]}, read when not
    given) carried over `rows`, its new steps, whose seqs are `spot` (first, last, whether stored steps follow) with no
    stored step between: the steps stored before this write are those outside it."""
    dialect = conn.dialect.name
    reads = _reads(dialect)
    lo, hi, inside = spot
    before = {"sid": sid, "lo": lo}  # the new steps are stored already: not them
    last = conn.execute(reads["last_phase"], before).scalar()
    top: int = (conn.execute(reads["top"], {"sid": sid}).scalar() or 0) if inside else hi
    following = conn.execute(reads["next_phase"], {"sid": sid, "hi": hi}).scalar() if inside else None
    new_calls = [
        (key, call_id)
        for _, kind, _, retry, _, _, _, _, _, _, _, key, call_id, _ in rows
        if kind == "tool_call" and not retry and key is not None
    ]
    new_ok = [
        call_id for _, kind, status, *_, call_id, _ in rows if kind == "tool_result" and status == "ok" and call_id is not None
    ]
    # the stored repeats of the new calls, and the groups of the stored calls a new ok result answers (it may make
    # their repeats redundant: their groups are touched too), then the first ok result of each of their call ids
    keys = {key for key, _ in new_calls}
    if new_ok:
        keys.update(key for *_, key, _ in _by_index(conn, reads["by_ids"], sid, new_ok, spot) if key is not None)
    stored_calls: dict[str, list[tuple]] = {}
    for seq, retry, key, call_id in _by_index(conn, reads["by_keys"], sid, sorted(keys), spot):
        if not retry:
            stored_calls.setdefault(key, []).append((seq, call_id))
    ok_new = set(new_ok)
    touched = {key for key, _ in new_calls} | {
        key for key, group in stored_calls.items() if any(cid in ok_new for _, cid in group)
    }
    calls = {key: stored_calls[key] for key in touched if key in stored_calls}
    wanted = sorted(
        {cid for group in calls.values() for _, cid in group if cid is not None}
        | {cid for _, cid in new_calls if cid is not None}
    )
    ok_at: dict[str, int] = {}
    for seq, kind, status, _, call_id in _by_index(conn, reads["by_ids"], sid, wanted, spot):
        if kind == "tool_result" and status == "ok" and (call_id not in ok_at or seq < ok_at[call_id]):
            ok_at[call_id] = seq
    old_loops, old_redundant = _loops(calls, ok_at)
    if breakdown is None:
        breakdown = {(tool, ecls): [n, bad] for _, tool, ecls, n, bad in _driver_rows(conn, reads["breakdown"], {"sid": sid})}
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
    state = _fold(state, rows)
    falls, last_phase, durations = state[10], state[16], state[18]
    if phase_after is not None and last_phase is not None and phase_after < last_phase:
        falls += 1
    stored_durations = row.durations_us
    if stored_durations and not durations:
        durations = [stored_durations]
    elif stored_durations and not inside:
        durations = [stored_durations, *durations]
    elif stored_durations:
        at = _durations_before(conn, reads, sid, lo, hi, top, stored_durations.count(",") + 1)
        head = stored_durations.split(",", at) if at else [stored_durations]
        durations = [*head[:at], *durations, *head[at:]]
    state = (*state[:10], falls, *state[11:14], top, state[15], last_phase, state[17], durations, *state[19:])
    loops, redundant = _loops(state[-2], state[-1])
    return _rolled(sid, state, row.loops - old_loops + loops, row.redundant_calls - old_redundant + redundant)


def swapped(
    conn: Connection, sid: str, old: Sequence, new: Sequence, held: tuple[tuple, list[tuple]] | None = None
) -> tuple[tuple, list[tuple]] | None:
    """The rollup of `sid` once its step `old` (FIELDS) became `new` at the same seq (a tool span taking over the
    call an earlier batch stored), carried from `held` (what the previous swap of this run gave) or the stored
    rollup: `old` taken out, then `new` carried on as a step landing at that seq (`_carried_on`), reading the
    phases beside it, the calls its keys group with and the durations on the shorter side of it, not the run.
    None where taking `old` out cannot be exact (tokens or a cost of its own, the run's first error, an error
    step, a phase the run may hold no other of): the caller recomputes the run."""
    seq, kind, status, retry, dur, t_in, t_out, cost, ts, tool, ecls, key, call_id, meta = old
    if new[0] != seq or kind == "error" or t_in is not None or t_out is not None or cost is not None:
        return None
    reads = _reads(conn.dialect.name)
    if held is None:
        stored = conn.execute(select(run_rollups).where(run_rollups.c.session_id == sid)).first()
        if stored is None:
            return None
        held = (tuple(stored), [tuple(r) for r in _driver_rows(conn, reads["breakdown"], {"sid": sid})])
    row = SimpleNamespace(**dict(zip(ROLLUP_COLUMNS, held[0], strict=True)))  # as `_carried_on` reads a stored one
    bad = status == "error"
    if bad and ts is not None and ts == row.first_error_at:
        return None
    spot = (seq, seq, False)
    top = conn.execute(reads["top"], {"sid": sid}).scalar() or seq
    phase = _PHASE.get(kind)
    falls, phased = max(row.cycles - 1, 0), row.cycles > 0
    if phase is not None:
        before = _PHASE.get(conn.execute(reads["last_phase"], {"sid": sid, "lo": seq}).scalar() or "")
        after = _PHASE.get(conn.execute(reads["next_phase"], {"sid": sid, "hi": seq}).scalar() or "")
        if before is None and after is None:
            return None
        falls += -(before is not None and phase < before) - (after is not None and after < phase)
        falls += before is not None and after is not None and after < before
    loops, redundant = row.loops, row.redundant_calls
    a_call = kind == "tool_call" and not retry and key is not None
    answered = kind == "tool_result" and status == "ok" and call_id is not None
    keys = {key} if a_call else set()
    if answered:  # the groups of the calls it answered: it may have made their repeats redundant
        keys.update(k for *_, k, _ in _by_index(conn, reads["by_ids"], sid, [call_id], spot) if k is not None)
    if keys:
        groups: dict[str, list[tuple]] = {}
        for s, r, k, cid in _by_index(conn, reads["by_keys"], sid, sorted(keys), spot):
            if not r:
                groups.setdefault(k, []).append((s, cid))
        ids = {cid for group in groups.values() for _, cid in group if cid is not None} | {call_id} - {None}
        ok_at: dict[str, int] = {}  # without `old`
        for s, k, st, _, cid in _by_index(conn, reads["by_ids"], sid, sorted(ids), spot):
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
        at = _durations_before(conn, reads, sid, seq, seq, top, durations.count(",") + 1)
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
    return _carried_on(conn, sid, row, [new], (seq, seq, top > seq), breakdown)


def _durations_before(conn: Connection, reads: dict[str, Any], sid: str, lo: int, hi: int, top: int, stored: int) -> int:
    """How many of a run's stored durations come before seq `lo`: counted on the shorter side of the spot."""
    if lo - 1 <= top - hi:
        return conn.execute(reads["durations_below"], {"sid": sid, "lo": lo}).scalar() or 0
    return stored - (conn.execute(reads["durations_above"], {"sid": sid, "hi": hi}).scalar() or 0)


@cache
def _reads(dialect: str) -> dict[str, Any]:
    """`_carried_on`'s statements, built once per dialect (building them was a third of its time),
    each list of ids bound as one parameter (`_among`)."""
    s = steps.c
    run = s.session_id == bindparam("sid")
    phased = s.type.in_(list(_PHASE))
    return {
        "last_phase": select(s.type).where(run, s.seq < bindparam("lo"), phased).order_by(s.seq.desc(), s.id.desc()).limit(1),
        "next_phase": select(s.type).where(run, s.seq > bindparam("hi"), phased).order_by(s.seq, s.id).limit(1),
        "top": select(func.max(s.seq)).where(run),
        "durations_below": select(func.count(s.duration_ms)).where(run, s.seq < bindparam("lo")),
        "durations_above": select(func.count(s.duration_ms)).where(run, s.seq > bindparam("hi")),
        # a run's steps of given call ids (ix_steps_call_id) and its calls of given keys (ix_steps_call_key), by the
        # run and the list alone: given a condition on seq, type or retry too, the databases scanned the run by another
        # index (PostgreSQL before its statistics came); SQLite takes the partial index for the IN (not for IS NOT NULL)
        "by_ids": _matching(select(s.seq, s.type, s.status, s.call_key, s.tool_call_id), s.tool_call_id, dialect),
        "by_keys": _matching(select(s.seq, s.retry, s.call_key, s.tool_call_id), s.call_key, dialect),
        "breakdown": select(run_breakdown).where(run_breakdown.c.session_id == bindparam("sid")),
    }


def _by_index(conn: Connection, query, sid: str, values: Sequence[str], spot: tuple[int, int, bool]) -> list[Sequence]:
    """`query`'s rows for `values` (none for no values), those outside `spot` (stored before this write)."""
    if not values:
        return []
    lo, hi, _ = spot
    found = _driver_rows(conn, query, {"sid": sid, "values": _listed(values, conn.dialect.name)})
    return [r for r in found if not lo <= r[0] <= hi]


def _matching(query, column, dialect: str):
    """`query` of the run's steps whose `column` is among the list bound as "values": on PostgreSQL the
    list unnested and joined (a lookup per value whatever the statistics; an IN over the array, planned
    without them or generic, scanned the run), on SQLite `_among`."""
    if dialect != "postgresql":
        return query.where(steps.c.session_id == bindparam("sid"), _among(column, "values", dialect))
    from sqlalchemy.dialects.postgresql import ARRAY

    wanted = func.unnest(bindparam("values", type_=ARRAY(String))).table_valued("value").render_derived()
    return query.select_from(wanted).join(steps, and_(steps.c.session_id == bindparam("sid"), column == wanted.c.value))


def _among(column, name: str, dialect: str):
    """`column` IN the list bound as `name`, whatever its length one parameter (`_listed`): no
    statement past the databases' parameter limits, nothing expanded per value at each run."""
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import ARRAY

        return column == func.any(bindparam(name, type_=ARRAY(String)))
    return column.in_(select(literal_column("value")).select_from(func.json_each(bindparam(name, type_=String))))


def _listed(values: Sequence[str], dialect: str):
    """`values` as `_among` binds them: an array on PostgreSQL, a JSON array on SQLite (json_each)."""
    return list(values) if dialect == "postgresql" else orjson.dumps(list(values)).decode()


def _driver_rows(conn: Connection, query, params: dict) -> Sequence[Sequence]:
    """The driver's own row tuples: no Row objects, no per-value result processing."""
    result = conn.execute(query, params)
    rows = result.cursor.fetchall()
    result.close()
    return rows


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
