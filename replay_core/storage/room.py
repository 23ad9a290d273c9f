"""Seqs for OTLP steps put among a run's stored steps by their places (`steps.place`), and a run's seqs
made 1..n again once its order is settled.

Seqs stay in place order, not always contiguous: a batch that lands before stored steps takes free seqs
there when there are some and moves nothing. Where there are none and few stored steps follow, or the spot
is the run's start, or the batch brings its trace's root, those move up, by what the batch needs and, for a
batch of a trace whose root has not come (`sparse`), by as many again, so that the next batch landing at
that spot finds room. Otherwise (a batch landing inside a long run) a window of seqs around the spot is
renumbered instead (list labelling: the smallest aligned window, doubling, under a density limit that
falls from 1 to 1/2 as it grows, its steps spread evenly), so that later landings nearby find free seqs:
each landing moves steps of its neighbourhood, not the run's tail, in whatever order the batches come. A
run's seqs stay within GROWTH (4) × its steps: a run denser than 1/2 where a window is needed is spread
whole over that. `settle` numbers a run 1..n again in one
pass: when its root arrives, when it is small, or when its traces went quiet (`config.settle_after`,
AGENT_REPLAY_OTLP_SETTLE_S). Readers take seq as an order with possible gaps meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from itertools import pairwise
from typing import NamedTuple

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.engine import Connection, Row

from .. import config
from ..vocabulary import now_utc
from .bulk import by_values
from .tables import otlp_traces, run_rollups, steps

READ_WHOLE = 2000  # steps of a run up to which `room` reads all their places rather than searching
SETTLE_SMALL = 256  # a run with gaps of up to this many steps (or 4 × the batch) is settled at once
RANGE_FROM = 32  # steps moving down by one amount from which `settle` moves them in one range update
SHIFT_LEAST, SHIFT_BATCHES = 256, 4  # a landing moves up the stored steps after it spanning at most
# the larger of SHIFT_LEAST seqs and SHIFT_BATCHES × its steps; past that it spreads a window (`_spread`)
LEAF = 256  # seqs of the smallest window `_spread` renumbers
GROWTH = 4  # a run's seqs stay within GROWTH × its steps (a run spread whole is spread over that)


def lasts(conn: Connection, sids: Sequence[str]) -> dict[str, Row | None]:
    """Each run's last stored step (seq, place) as `room` reads it first (None: a run without steps), for a
    batch's runs in one statement per chunk rather than one a run."""
    out: dict[str, Row | None] = dict.fromkeys(sids)
    tail = (
        "SELECT b.sid, s.seq, s.place FROM b JOIN steps s ON s.id ="
        " (SELECT m.id FROM steps m WHERE m.session_id = b.sid ORDER BY m.seq DESC LIMIT 1)"
    )
    for row in by_values(conn, ("sid",), [(sid,) for sid in sids], tail):
        out[row.sid] = row
    return out


UNREAD = object()  # `room`'s `last` when not read yet


def room(
    conn: Connection, sid: str, places: list[str], *, sparse: bool = False, last: Row | None | object = UNREAD
) -> tuple[list[int], int | None]:
    """Seqs for steps of `places` (sorted) among a run's stored steps, in place order, and the first of
    them where they land before a stored step (None when all come after the run). Where a spot has not
    enough free seqs, the stored steps after it move up (one range update past the batch's last place and
    one update of those between its first and last) when that moves few (`_shift_most`), when the spot is at
    the run's start, or when the batch is not `sparse` (a root's batch, settled in the same write; one step
    taken over or moved), and the run stays within its bound; else a window around the spot is spread
    (`_spread`) and the batch placed again. Steps without a place (another source's) count as first.
    `last`, when given, is the run's last step as `lasts` read it, in this transaction, nothing stored since."""
    s = steps.c
    spreads = 0
    while True:
        if last is UNREAD:
            last = conn.execute(select(s.seq, s.place).where(s.session_id == sid).order_by(s.seq.desc()).limit(1)).first()
        assert last is None or isinstance(last, Row)
        if last is None or (last.place or "") < places[0]:
            base = last.seq if last is not None else 0
            return list(range(base + 1, base + 1 + len(places))), None
        spots, between, hi = _spots(conn, sid, places, last.seq)
        short = next((spot for spot in spots if spot.bound - spot.before - 1 < spot.need and spot.bound <= last.seq), None)
        if short is None or not sparse or last.seq - short.bound < _shift_most(len(places)) or _at_start(conn, sid, short):
            seqs, shifts, moved = _shifted(conn, sid, spots, sparse)
            if short is None or last.seq + moved <= GROWTH * (_count(conn, sid) + len(places)):
                break
        # a window gives its spots room and takes none elsewhere; once the batch's re-reads of the stored steps
        # between its ends would cost more than the run, the run is spread whole, room for every spot at once
        whole = spreads * len(between) >= last.seq
        _spread(conn, sid, spots, short.bound, last.seq, whole=whole)
        spreads += 1
        last = UNREAD  # the spread moved steps: read again
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


class Spot(NamedTuple):
    """Where some of a batch's steps land: the first stored seq after them, the stored seq before them, how many."""

    bound: int
    before: int
    need: int


def _spots(conn: Connection, sid: str, places: list[str], last_seq: int) -> tuple[list[Spot], Sequence[Row], int]:
    """The spots of `places` among a run's stored steps (bounds ascending), the stored steps between the first
    and last place (id, seq, place) and the seq from which every stored step comes after the last place.
    Reads O(log n) steps per end of the batch (a binary search) and those between its ends."""
    s = steps.c
    if last_seq <= READ_WHOLE:  # one read of the run costs less than the searches' probes
        lo, hi = 1, last_seq + 1
    else:
        lo = _first_after(conn, sid, places[0], last_seq)
        hi = _first_after(conn, sid, places[-1], last_seq) if places[-1] != places[0] else lo
    below = 0 if lo == 1 else conn.scalar(select(func.max(s.seq)).where(s.session_id == sid, s.seq < lo)) or 0
    between = conn.execute(select(s.id, s.seq, s.place).where(s.session_id == sid, s.seq >= lo, s.seq < hi).order_by(s.seq)).all()
    beyond = None  # the first stored seq from hi on (hi may be in a gap): read when a step lands past `between`
    spots: list[Spot] = []
    j = 0
    for where in places:
        while j < len(between) and (between[j].place or "") < where:
            j += 1
        if j < len(between):
            bound = between[j].seq
        else:
            if beyond is None:
                after = select(func.min(s.seq)).where(s.session_id == sid, s.seq >= hi)
                beyond = (conn.scalar(after) if hi <= last_seq else None) or last_seq + 1
            bound = beyond
        if spots and spots[-1].bound == bound:
            spots[-1] = spots[-1]._replace(need=spots[-1].need + 1)
        else:
            spots.append(Spot(bound, between[j - 1].seq if j else below, 1))
    return spots, between, hi


def _shifted(conn: Connection, sid: str, spots: list[Spot], sparse: bool) -> tuple[list[int], list[tuple[int, int]], int]:
    """The seqs of the spots' steps when the stored steps after a spot short of free seqs move up, each next to
    the step after it; the moves ((bound, how far the stored steps from it move), bounds ascending) and the
    last move. Sparse: by as many again as the steps that move, so seqs grow with the steps, no faster."""
    seqs: list[int] = []
    shifts: list[tuple[int, int]] = []
    moved = 0
    for bound, before, need in spots:
        free = bound - before - 1
        if free < need:
            moved += need - free + (_count_from(conn, sid, bound) if sparse else 0)
        shifts.append((bound, moved))
        seqs += range(bound + moved - need, bound + moved)  # next to the step after: room stays below
    return seqs, shifts, moved


def _at_start(conn: Connection, sid: str, spot: Spot) -> bool:
    """Whether a spot comes before every stored step but the first (a run sent last batch first lands there each
    time, and its sparse move's room serves the next; a random order lands there once in as many stored batches)."""
    return spot.before <= (conn.scalar(select(func.min(steps.c.seq)).where(steps.c.session_id == sid)) or 0)


def _shift_most(batch: int) -> int:
    """The most seqs of stored steps a landing of `batch` steps moves up past it; past that it spreads a window."""
    return max(SHIFT_LEAST, SHIFT_BATCHES * batch)


def _count(conn: Connection, sid: str) -> int:
    """A run's steps, by its rollup (counted when it has none yet)."""
    n = conn.scalar(select(run_rollups.c.steps).where(run_rollups.c.session_id == sid))
    return n if n is not None else _count_from(conn, sid, 0)


def _spread(conn: Connection, sid: str, spots: list[Spot], at: int, top: int, *, whole: bool = False) -> None:
    """Make room at the spot whose first stored step after it is `at`: the smallest aligned window of seqs
    around it (`_window`) has its stored steps renumbered evenly over it, with a free seq for each of the
    batch's steps in their spots, and no spot outside it loses a free seq. When there is no such window (or
    `whole`), the whole run is spread over 1..GROWTH × its steps (its last seq if higher): room for every spot."""
    window = None if whole else _window(conn, sid, spots, at, top)
    if window is None:
        window = 1, max(top, GROWTH * (_count_between(conn, sid, 1, top) + _landing(spots, 1, top + 1)))
    _renumber(conn, sid, spots, *window)


def _window(conn: Connection, sid: str, spots: list[Spot], at: int, top: int) -> tuple[int, int] | None:
    """The smallest aligned window of seqs holding `at` (LEAF seqs, doubling, within 1..top) whose stored steps
    and the batch's steps landing in it are within its density limit (1 at the smallest, down to 1/2 for
    1..top); None when even 1..top is denser."""
    levels = max((top - 1) // LEAF, 0).bit_length()  # the window of this level holds 1..top
    for level in range(levels + 1):
        size = LEAF << level
        first = (at - 1) // size * size + 1
        end = min(first + size - 1, top)
        limit = 1 - level / (2 * levels) if level < levels else 0.5
        if _count_between(conn, sid, first, end) + _landing(spots, first, end) <= limit * (end - first + 1):
            return first, end
    return None


def _landing(spots: list[Spot], first: int, end: int) -> int:
    """How many of a batch's steps land within seqs first..end, once the stored steps there are renumbered."""
    return sum(spot.need for spot in spots if spot.bound >= first and spot.before < end)


def _count_between(conn: Connection, sid: str, first: int, end: int) -> int:
    s = steps.c
    return conn.scalar(select(func.count()).where(s.session_id == sid, s.seq >= first, s.seq <= end)) or 0


def _renumber(conn: Connection, sid: str, spots: list[Spot], first: int, end: int) -> None:
    """The stored steps of seqs first..end given seqs spread evenly over that range, in their order, with a
    place kept free for each of the batch's steps landing there (`_landing`); one update by id."""
    s = steps.c
    rows = conn.execute(select(s.id, s.seq).where(s.session_id == sid, s.seq >= first, s.seq <= end).order_by(s.seq)).all()
    landing = [spot for spot in spots if spot.bound >= first and spot.before < end]
    items: list[int | None] = []  # row ids in order, None where a batch's step goes
    k = 0
    for row in rows:
        while k < len(landing) and landing[k].bound <= row.seq:
            items += [None] * landing[k].need
            k += 1
        items.append(row.id)
    for spot in landing[k:]:
        items += [None] * spot.need
    span = end - first + 1
    old = {row.id: row.seq for row in rows}
    changes = []
    for i, rid in enumerate(items):
        seq = first + i * span // len(items)
        if rid is not None and old[rid] != seq:
            changes.append({"rid": rid, "new_seq": seq})
    if changes:
        conn.execute(update(steps).where(s.id == bindparam("rid")).values(seq=bindparam("new_seq")), changes)


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
