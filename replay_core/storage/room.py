"""Seqs for OTLP steps put among a run's stored ones by their places (`steps.place`), and a run's seqs
made 1..n again once its order is settled.

Seqs stay in place order, not always contiguous: a batch that lands before stored steps takes free seqs
there when there are some and moves nothing; where there are none, the steps after it move up, by what
the batch needs and, for a batch of a trace whose root has not come (`sparse`), by as many again as the
seqs they span, so that the next batch landing at that spot (a run sent last batch first, a late agent
span before its subtree) finds room: each stored step moves O(1) times amortised, not once a batch.
`settle` numbers a run 1..n again in one pass: when its root arrives, when it is small, or when its
traces went quiet (`config.settle_after`, AGENT_REPLAY_OTLP_SETTLE_S). Readers take seq as an order with possible gaps meanwhile.
"""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection

from .. import config
from ..vocabulary import now_utc
from .tables import otlp_traces, run_rollups, steps

READ_WHOLE = 2000  # steps of a run up to which `room` reads all their places rather than searching
SETTLE_SMALL = 256  # a run with gaps of up to this many steps (or 4 × the batch) is settled at once
RANGE_FROM = 32  # steps moving down by one amount from which `settle` moves them in one range update


def room(conn: Connection, sid: str, places: list[str], *, sparse: bool = False) -> tuple[list[int], int | None]:
    """Seqs for steps of `places` (sorted) among a run's stored steps, in place order, and the first of
    them where they land before a stored step (None when all come after the run). Stored steps after a
    spot without enough free seqs move up, by one range update past the batch's last place and one update
    of those between its first and last; steps without a place (another source's) count as first. Reads
    O(log n) steps per end of the batch and those stored between its first and last place."""
    s = steps.c
    last = conn.execute(select(s.seq, s.place).where(s.session_id == sid).order_by(s.seq.desc()).limit(1)).first()
    if last is None or (last.place or "") < places[0]:
        base = last.seq if last is not None else 0
        return list(range(base + 1, base + 1 + len(places))), None
    if last.seq <= READ_WHOLE:  # one read of the run costs less than the searches' probes
        lo, hi = 1, last.seq + 1
    else:
        lo = _first_after(conn, sid, places[0], last.seq)
        hi = _first_after(conn, sid, places[-1], last.seq) if places[-1] != places[0] else lo
    below = 0 if lo == 1 else conn.scalar(select(func.max(s.seq)).where(s.session_id == sid, s.seq < lo)) or 0
    between = conn.execute(select(s.id, s.seq, s.place).where(s.session_id == sid, s.seq >= lo, s.seq < hi).order_by(s.seq)).all()
    beyond = None  # the first stored seq from hi on (hi may be in a gap): read when a step lands past `between`
    spots: list[list[int]] = []  # per spot: [first stored seq after it, stored seq before it, new steps there]
    j = 0
    for where in places:
        while j < len(between) and (between[j].place or "") < where:
            j += 1
        if j < len(between):
            bound = between[j].seq
        else:
            if beyond is None:
                after = select(func.min(s.seq)).where(s.session_id == sid, s.seq >= hi)
                beyond = (conn.scalar(after) if hi <= last.seq else None) or last.seq + 1
            bound = beyond
        if spots and spots[-1][0] == bound:
            spots[-1][2] += 1
        else:
            spots.append([bound, between[j - 1].seq if j else below, 1])
    seqs: list[int] = []
    shifts: list[tuple[int, int]] = []  # (bound, how far the stored steps from it move), bounds ascending
    moved = 0
    for bound, before, need in spots:
        free = bound - before - 1
        if free < need:  # sparse: as many again as the steps that move, so seqs grow with the steps, no faster
            moved += need - free + (_count_from(conn, sid, bound) if sparse else 0)
        shifts.append((bound, moved))
        seqs += range(bound + moved - need, bound + moved)  # next to the step after: room stays below
    if moved:
        conn.execute(update(steps).where(s.session_id == sid, s.seq >= hi).values(seq=s.seq + moved))
        changes, k, by = [], 0, 0
        for row in between:
            while k < len(shifts) and shifts[k][0] <= row.seq:
                by = shifts[k][1]
                k += 1
            if by:
                changes.append({"rid": row.id, "new_seq": row.seq + by})
        if changes:
            conn.execute(update(steps).where(s.id == bindparam("rid")).values(seq=bindparam("new_seq")), changes)
    return seqs, seqs[0]


def _count_from(conn: Connection, sid: str, seq: int) -> int:
    """How many of a run's steps are at `seq` or after (those a shift from there moves)."""
    return conn.scalar(select(func.count()).where(steps.c.session_id == sid, steps.c.seq >= seq)) or 0


_PROBE = (  # built once: its clauses cost more to build than the database takes to answer it
    select(steps.c.seq, steps.c.place)
    .where(steps.c.session_id == bindparam("sid"), steps.c.seq >= bindparam("mid"))
    .order_by(steps.c.seq)
    .limit(1)
)


def _first_after(conn: Connection, sid: str, where: str, last_seq: int) -> int:
    """The first seq (of 1..last_seq + 1; the stored places are in seq order) from which every stored step's
    place is after `where`: a binary search, one indexed read of a step a probe (gaps in seq are passed over)."""
    lo, hi = 1, last_seq + 1
    while lo < hi:
        mid = (lo + hi) // 2
        row = conn.execute(_PROBE, {"sid": sid, "mid": mid}).first()
        assert row is not None  # the step at last_seq is there
        if (row.place or "") > where:
            hi = mid
        else:
            lo = row.seq + 1
    return lo


def gapped(conn: Connection, sids: list[str]) -> dict[str, int]:
    """Of these runs, those whose seqs are not 1..n by their rollups (max_seq past the count of steps),
    with their count of steps."""
    r = run_rollups.c
    query = select(r.session_id, r.steps).where(r.session_id.in_(sids), r.max_seq > r.steps)
    return {sid: n for sid, n in conn.execute(query)} if sids else {}


def settle(conn: Connection, sid: str) -> None:
    """Number a run's steps 1..n in their order, in one pass: the steps from each gap down to the next
    in one range update (by id where few move together). Left as it is when a seq repeats (another
    source's numbering, not places)."""
    s = steps.c
    rows = conn.execute(select(s.id, s.seq).where(s.session_id == sid).order_by(s.seq, s.id)).all()
    if any(b.seq <= a.seq for a, b in pairwise(rows)):
        return
    blocks: list[list] = []  # [first old seq, last old seq, how far down, row ids]: steps moving down together
    for n, row in enumerate(rows, 1):
        down = row.seq - n
        if down and blocks and blocks[-1][2] == down and blocks[-1][1] == row.seq - 1:
            blocks[-1][1] = row.seq
            blocks[-1][3].append(row.id)
        elif down:
            blocks.append([row.seq, row.seq, down, [row.id]])
    one_by_one = []  # by id; a range moves only steps of its own old seqs (those moved before sit below them)
    for first, end, down, ids in blocks:
        if len(ids) >= RANGE_FROM:
            conn.execute(update(steps).where(s.session_id == sid, s.seq >= first, s.seq <= end).values(seq=s.seq - down))
        else:
            one_by_one += [{"rid": rid, "new_seq": seq - down} for rid, seq in zip(ids, range(first, end + 1), strict=True)]
    if one_by_one:
        conn.execute(update(steps).where(s.id == bindparam("rid")).values(seq=bindparam("new_seq")), one_by_one)
    conn.execute(update(run_rollups).where(run_rollups.c.session_id == sid).values(max_seq=len(rows)))


def settle_quiet(conn: Connection, quiet: timedelta | None = None) -> list[str]:
    """Settle the runs with gaps whose traces received nothing for `quiet` (config.settle_after when not
    given), and not for the idle limit more (a window the receiver and idle expiry look at far more
    often): one statement finds them, by the traces' index on their last batch's time. Returns them."""
    now = now_utc()
    quiet = config.settle_after() if quiet is None else quiet
    t, r = otlp_traces.c, run_rollups.c
    found = list(
        conn.scalars(
            select(t.session_id)
            .distinct()
            .join(run_rollups, r.session_id == t.session_id)
            .where(t.updated_at <= now - quiet, t.updated_at > now - quiet - config.idle_timeout(), r.max_seq > r.steps)
            .order_by(t.session_id)
        )
    )
    for sid in found:
        settle(conn, sid)
    return found
