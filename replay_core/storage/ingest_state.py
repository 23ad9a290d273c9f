"""What ingest keeps between one delivery and the next: OTLP traces that arrive over several
batches (which run each trace went to, the tool calls still waiting for their answer, a
provisional run's steps moved into the run its trace turned out to be, each step's place in its
run's order), and how far `watch` has read each file.

A run's steps stay in the order of their places (ingest.formats.otel.ordering.place) by seq, whatever
order their batches come in: a batch's steps are put among the stored ones (`room.room`), inside the
batch's own write transaction (`OtlpArrangement`, with the provisional steps its traces settled), taking
free seqs where there are some and leaving some where steps move, and the run is numbered 1..n again
(`room.settle`) when its root comes or its traces go quiet. So `seq` is an order, which a step that starts
earlier can still change while its run's spans arrive; its `event_id` (from its span id) never changes,
and is what names a step for good.
"""

from __future__ import annotations

from collections import Counter, namedtuple
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import BindParameter, Table, bindparam, delete, func, insert, select, update
from sqlalchemy.engine import Connection, Row

from .. import config
from ..vocabulary import now_utc
from . import daily, rollups
from . import room as placing
from .bulk import bulk_insert, by_rows, by_values, chunks, dialect_module
from .columns import EVENT_ID_AT, ROW_COLUMNS, SEQ_AT, STEP_COLUMNS, call_key, step_values
from .engine import StoreBase
from .room import UNREAD, gapped, room, settle, settle_quiet
from .tables import annotations as annotations_table
from .tables import attachments, otlp_open_calls, otlp_traces, run_rollups, sessions, step_contexts, steps, watch_offsets
from .writing import WriteBatch, existing_sessions

if TYPE_CHECKING:
    from ..events import StepEvent


class IngestState(StoreBase):
    """OTLP traces across batches, and watch's file offsets."""

    def otlp_state(self, trace_ids: Sequence[str]) -> tuple[dict[str, tuple[str, bool]], list[dict]]:
        """Where each known trace lives ({trace_id: (session_id, settled)}) and the calls its earlier batches left open."""
        placed: dict[str, tuple[str, bool]] = {}
        open_calls: list[dict] = []
        cols = [otlp_open_calls.c[n] for n in ("trace_id", "side", "event_id", "name", "call_id", "arguments", "t_ns")]
        with self.engine.connect() as conn:
            for part in chunks(list(trace_ids)):
                t = otlp_traces.c
                for tid, sid, settled in conn.execute(select(t.trace_id, t.session_id, t.settled).where(t.trace_id.in_(part))):
                    placed[tid] = (sid, bool(settled))
                query = select(*cols).where(otlp_open_calls.c.trace_id.in_(part)).order_by(otlp_open_calls.c.id)
                open_calls += [dict(r) for r in conn.execute(query).mappings()]
        return placed, open_calls

    def move_session_steps(self, from_sid: str, to_sid: str) -> int:
        """Move every step of one session (a provisional one) into another, in place order, and drop the first.

        Steps the target already holds (same event_id) are dropped; the rest are put among the target's
        by their places (`room.room`), with their contexts, attachments and notes. The target is created
        from the source's row when it does not exist yet. Returns steps moved.
        """
        with self._write_lock, self._write_transaction() as conn:  # like every write: another process's
            # steps cannot take the target's seqs between our read of max(seq) and our commit
            existing_sessions(conn, [from_sid, to_sid], lock=True)
            src = conn.execute(select(sessions).where(sessions.c.id == from_sid)).mappings().first()
            conn.execute(update(otlp_traces).where(otlp_traces.c.session_id == from_sid).values(session_id=to_sid))
            if src is None or from_sid == to_sid:
                return 0
            dialect = dialect_module(self.dialect)
            conn.execute(dialect.insert(sessions).values(**{**src, "id": to_sid}).on_conflict_do_nothing(index_elements=["id"]))
            existing_sessions(conn, [to_sid], lock=True)
            target = conn.execute(select(sessions.c.id, sessions.c.last_event_at).where(sessions.c.id == to_sid)).one()
            if src["last_event_at"] and (target.last_event_at is None or target.last_event_at < src["last_event_at"]):
                conn.execute(update(sessions).where(sessions.c.id == to_sid).values(last_event_at=src["last_event_at"]))
            rows = conn.execute(
                select(steps.c.id, steps.c.event_id, steps.c.place)
                .where(steps.c.session_id == from_sid)
                .order_by(steps.c.seq, steps.c.timestamp, steps.c.id)
            ).all()
            held: set[str] = set()
            for part in chunks([r.event_id for r in rows]):
                held.update(
                    conn.scalars(select(steps.c.event_id).where(steps.c.session_id == to_sid, steps.c.event_id.in_(part)))
                )
            for part in chunks(sorted(held)):
                for table in (step_contexts, steps):
                    conn.execute(delete(table).where(table.c.session_id == from_sid, table.c.event_id.in_(part)))
            kept = sorted((r for r in rows if r.event_id not in held), key=lambda r: r.place or "")
            seqs = room(conn, to_sid, [r.place or "" for r in kept])[0] if kept else []
            moving = [{"rid": r.id, "new_seq": seq} for r, seq in zip(kept, seqs, strict=True)]
            if moving:
                conn.execute(
                    update(steps).where(steps.c.id == bindparam("rid")).values(session_id=to_sid, seq=bindparam("new_seq")),
                    moving,
                )
            for table in (step_contexts, attachments, annotations_table):
                conn.execute(update(table).where(table.c.session_id == from_sid).values(session_id=to_sid))
            conn.execute(update(sessions).where(sessions.c.replay_of == from_sid).values(replay_of=to_sid))
            rollups.forget(conn, [from_sid])
            conn.execute(delete(sessions).where(sessions.c.id == from_sid))
            rollups.refresh(conn, [to_sid], bulk_insert)
            daily.refresh(conn, [from_sid, to_sid], bulk_insert)
        return len(moving)

    def step_agents(self, wanted: Mapping[str, tuple[Sequence[str], Sequence[str]]]) -> dict[str, dict[str, str | None]]:
        """Per run of `wanted` ({run: (it and the provisional runs moving into it, event ids)}) the agent of each
        of the steps named that those runs hold: one read for a batch's runs, not one a run."""
        sids = sorted({s for runs, _ in wanted.values() for s in runs})
        eids = sorted({e for _, named in wanted.values() for e in named})
        held: dict[str, list[tuple[str, str | None]]] = {}  # run → its (event id, agent) among those named
        s = steps.c
        with self.engine.connect() as conn:
            for runs in chunks(sids):
                for part in chunks(eids):
                    query = select(s.session_id, s.event_id, s.agent_id).where(s.session_id.in_(runs), s.event_id.in_(part))
                    for run, eid, agent in conn.execute(query):
                        held.setdefault(run, []).append((eid, agent))
        out: dict[str, dict[str, str | None]] = {}
        for sid, (runs, named) in wanted.items():
            asked = set(named)
            out[sid] = {eid: agent for run in runs for eid, agent in held.get(run, ()) if eid in asked}
        return out

    def otlp_commit(
        self,
        placed: dict[str, tuple[str, bool]],
        consumed: Sequence[tuple[str, str, str]],
        opened: Sequence[dict],
        replaced: Sequence[tuple[str, StepEvent, str | None]],
        idle: timedelta | None = None,
        places: Sequence[tuple[str, str, str]] = (),
        agents: dict[str, tuple[int, dict[str, str]]] | None = None,
    ) -> None:
        """What one OTLP batch changed, in one transaction (`OtlpArrangement` does it inside the batch's write):
        where its traces live, the calls it answered (`consumed`: (trace_id, side, event_id)) or left open, stored
        steps a tool span took the place of (`replaced`: (old event id, the redacted step, its place), moved to that
        place), the places of steps the writer stored without one (`places`: (session_id, event_id, place)), and
        the agents stored steps inherit from an ancestor that came after them (`agents`: {session_id: (the seq
        after which they may be, {event_id: agent} of the batch's steps)}). Open calls of traces that received
        nothing for longer than `idle` (AGENT_REPLAY_IDLE_MINUTES) are dropped: such a trace is over, and the
        table stays as small as the traces in flight."""
        with self._write_lock, self.engine.begin() as conn:
            daily.refresh(conn, _commit(conn, placed, consumed, opened, replaced, idle, places, agents or {}), bulk_insert)

    def otlp_settle(self, quiet: timedelta | None = None) -> list[str]:
        """Number 1..n the runs whose seqs kept gaps (batches that landed before stored steps) and whose traces
        received nothing for `quiet` (config.settle_after, AGENT_REPLAY_OTLP_SETTLE_S, when not given: the
        receiver looks that often at most, idle expiry at each call). Returns them."""
        with self._write_lock, self._write_transaction() as conn:
            return settle_quiet(conn, quiet)

    def watch_offset(self, path: str) -> dict | None:
        """Where `watch` has read `path` up to: {path, inode, offset, format, updated_at, fingerprint}, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(select(watch_offsets).where(watch_offsets.c.path == path)).first()
            return dict(row._mapping) if row else None

    def save_watch_offset(
        self, path: str, *, inode: int | None, offset: int, format: str | None, fingerprint: str | None = None
    ) -> None:
        values = {"inode": inode, "offset": offset, "format": format, "fingerprint": fingerprint, "updated_at": now_utc()}
        with self._write_lock, self.engine.begin() as conn:
            done = conn.execute(update(watch_offsets).where(watch_offsets.c.path == path).values(**values)).rowcount
            if not done:
                conn.execute(insert(watch_offsets).values(path=path, **values))

    def otlp_fill_steps(self, fills: Sequence[dict]) -> int:
        """What OTLP log events brought for model calls stored without it (their span came first): each fill
        `{session_id, event_id, content, context, call_args: {tool_call id: arguments}, results: {tool_call id:
        text}, answer}` sets only what is missing (a step's empty content, a context never recorded, a tool
        call's absent arguments, the text of a tool result its span did not carry, read from the tool message
        this model call received; the run's answer where it ended succeeded without one and this call, asking
        no tool, came last), in one transaction, and takes what it set off the step's `not_recorded`; what a
        step already holds is kept. Returns the steps changed."""
        s, c = steps.c, step_contexts.c
        changed = 0
        keyed: set[str] = set()  # runs whose calls' keys changed: the rest of a fill is nothing their rollups read
        with self._write_lock, self._write_transaction() as conn:
            for fill in fills:
                sid, eid = fill["session_id"], fill["event_id"]
                found = select(s.id, s.seq, s.content, s.metadata).where(s.session_id == sid, s.event_id == eid)
                row = conn.execute(found).first()
                if row is None:
                    continue
                if fill.get("content") and not row.content:
                    changed += conn.execute(update(steps).where(s.id == row.id).values(content=fill["content"])).rowcount
                has_context = conn.scalar(select(func.count()).where(c.session_id == sid, c.event_id == eid))
                if fill.get("context") and not has_context:
                    conn.execute(insert(step_contexts).values(session_id=sid, event_id=eid, context=fill["context"]))
                    _recorded(conn, row.id, row.metadata, "context")
                    changed += 1
                for call_id, args in (fill.get("call_args") or {}).items():
                    calls = conn.execute(
                        select(s.id, s.tool_name, s.metadata).where(
                            s.session_id == sid, s.type == "tool_call", s.tool_call_id == call_id, s.tool_args.is_(None)
                        )
                    ).all()
                    for call in calls:
                        key = call_key({"type": "tool_call", "tool_name": call.tool_name, "tool_args": args})
                        conn.execute(update(steps).where(s.id == call.id).values(tool_args=args, call_key=key))
                        _recorded(conn, call.id, call.metadata, "tool_args")
                        changed += 1
                        keyed.add(sid)
                for call_id, text in (fill.get("results") or {}).items():
                    changed += _fill_result(conn, sid, call_id, text, eid)
                if fill.get("answer"):
                    _answered(conn, sid, row.seq, fill["answer"])
            rollups.refresh(conn, sorted(keyed), bulk_insert)  # repeated calls are told by call_key
        return changed

    def otlp_results_from_later(self, bare: Sequence[tuple[str, str, str]]) -> int:
        """Tool results a batch stored without text (`bare`: (session_id, event_id, tool_call id)) that the first
        model call stored after each received: their text from that call's context (a tool span can arrive after
        the model call that got its result). One indexed read per result, outside the write lock; a write only
        for the texts found, which leaves the rollups as they are (a result's text and metadata are nothing they
        read). Returns the results filled."""
        found: list[tuple[str, str, str, str]] = []
        with self.engine.connect() as conn:
            for part in chunks(list(bare), 200):
                models = _next_models(conn, [(sid, eid) for sid, eid, _ in part])
                wanted = sorted({(sid, m) for (sid, _, _), m in zip(part, models, strict=True) if m is not None})
                contexts = _contexts(conn, wanted)
                for (sid, _, call_id), model in zip(part, models, strict=True):
                    context = contexts.get((sid, model)) if model is not None else None
                    said = next(
                        (
                            m["content"]
                            for m in context or []
                            if isinstance(m, dict) and m.get("role") == "tool" and m.get("tool_call_id") == call_id
                        ),
                        None,
                    )
                    if isinstance(said, str) and model is not None:
                        found.append((sid, call_id, said, model))
        if not found:
            return 0
        changed = 0
        with self._write_lock, self._write_transaction() as conn:
            for sid, call_id, said, model in found:
                changed += _fill_result(conn, sid, call_id, said, model)
        return changed


def _commit(
    conn: Connection,
    placed: dict[str, tuple[str, bool]],
    consumed: Sequence[tuple[str, str, str]],
    opened: Sequence[dict],
    replaced: Sequence[tuple[str, StepEvent, str | None]],
    idle: timedelta | None,
    places: Sequence[tuple[str, str, str]],
    agents: dict[str, tuple[int, dict[str, str]]],
) -> list[str]:
    """`IngestState.otlp_commit` in a transaction already open; returns the runs whose day cells it changed (those of
    the steps taken over), for the caller's `daily.refresh`."""
    now = now_utc()
    t, o = otlp_traces.c, otlp_open_calls.c
    known: set[str] = set()
    for part in chunks(list(placed)):
        known.update(conn.scalars(select(t.trace_id).where(t.trace_id.in_(part))))
    if known:
        conn.execute(
            update(otlp_traces)
            .where(t.trace_id == bindparam("tid"))
            .values(session_id=bindparam("sid"), settled=bindparam("done"), updated_at=now),
            [{"tid": tid, "sid": placed[tid][0], "done": placed[tid][1]} for tid in known],
        )
    new = [
        {"trace_id": tid, "session_id": sid, "settled": settled, "updated_at": now}
        for tid, (sid, settled) in placed.items()
        if tid not in known
    ]
    if new:
        conn.execute(insert(otlp_traces), new)
    if consumed:
        answered = (o.trace_id == bindparam("tid"), o.side == bindparam("answered"), o.event_id == bindparam("eid"))
        conn.execute(
            delete(otlp_open_calls).where(*answered),
            [{"tid": tid, "answered": side, "eid": event_id} for tid, side, event_id in consumed],
        )
    if opened:
        conn.execute(insert(otlp_open_calls), list(opened))
    cutoff = now - (idle if idle is not None else config.idle_timeout())
    stale = select(t.trace_id).where(t.updated_at < cutoff)
    conn.execute(delete(otlp_open_calls).where(o.trace_id.in_(stale)))
    if places:
        conn.execute(
            update(steps)
            .where(steps.c.session_id == bindparam("sid"), steps.c.event_id == bindparam("eid"))
            .values(place=bindparam("where")),
            [{"sid": sid, "eid": eid, "where": where} for sid, eid, where in places],
        )
    carried: dict[str, tuple[tuple, list[tuple]]] = {}  # per run: its rollup carried over the swaps so far
    # runs whose rollups are recomputed: the short ones, and those where a step moves or a swap the carry cannot take
    again = _short(conn, Counter(step.session_id for _, step, _ in replaced))
    made = _statements()
    for old_event_id, step, where in replaced:
        sid, event_id = step.session_id, step.identity()
        taken = conn.scalar(made["taken"], {"sid": sid, "eid": event_id})
        if taken is not None and event_id != old_event_id:  # a re-delivered batch: the tool's step is stored already
            continue
        values = dict(zip(STEP_COLUMNS, step_values(step.__dict__), strict=True))
        values.update(event_id=event_id, call_key=call_key(values), place=where)
        del values["seq"]
        old = conn.execute(made["old"], {"sid": sid, "eid": old_event_id}).first()
        if old is None:
            continue
        if _between(conn, sid, old.seq, where or ""):  # its place is where it stands: nothing moves
            conn.execute(made["take_over"], {"rid": old.id, **{f"v_{name}": value for name, value in values.items()}})
            seq = old.seq
            if sid not in again:
                now_is = conn.execute(made["rolled"], {"rid": old.id}).one()
                swap = rollups.swapped(conn, sid, tuple(old)[1:], tuple(now_is), carried.get(sid))
                if swap is None:
                    again.add(sid)
                else:
                    carried[sid] = swap
        else:
            again.add(sid)
            conn.execute(update(steps).where(steps.c.id == old.id).values(**values, seq=0))
            seq = room(conn, sid, [where or ""])[0][0]  # its old seq left free: `settle` closes it
            conn.execute(update(steps).where(steps.c.id == old.id).values(seq=seq))
        if step.agent_id is not None:  # steps of the tool's span may have come before it
            _inherit(conn, sid, seq, {event_id: step.agent_id})
    for sid, (from_seq, agent_of) in (agents or {}).items():
        _inherit(conn, sid, from_seq, agent_of)
    kept = {sid: swap for sid, swap in carried.items() if sid not in again}
    rollups.write(conn, list(kept), kept.values(), bulk_insert)
    rollups.refresh(conn, sorted(again), bulk_insert)
    return [step.session_id for _, step, _ in replaced]


@dataclass
class OtlpArrangement:
    """An OTLP batch's work around its write, in the write's own transaction (writing.Arrangement): the steps
    of provisional runs its traces settled moved into their runs (`moves`: (from, to)), each new step given its
    seq among the stored ones by its place (`places`: {(session_id, event_id): place}), the moved steps placed
    with them in one pass (a late root and the children it settles move nothing twice, and the rollups go on
    from the stored ones when all of them land in one spot: `landed`), sparsely (room left where stored steps
    move) but in the runs of traces whose root is in the batch (`rooted`), then `_commit` (`commit`: its
    arguments but the agents), with the agents stored steps inherit (`agents`: {session_id: {event_id: agent}}
    of the batch's steps) where the batch or a move landed before or among them; last, the runs it left with
    gaps numbered 1..n when their root came or the pass costs no more than the batch (`room.settle`)."""

    moves: list[tuple[str, str]]
    places: dict[tuple[str, str], str]
    commit: dict[str, Any]
    agents: dict[str, dict[str, str]]
    rooted: set[str] = field(default_factory=set)  # runs of traces whose root is in the batch
    landed: dict[str, tuple[int, int, bool] | None] = field(default_factory=dict)
    daily: list[str] = field(default_factory=list)  # runs besides the batch's whose day cells it changed
    _moving: list[tuple[str, str]] = field(default_factory=list)
    _groups: list[list[tuple[str, str]]] = field(default_factory=list)  # the moves, in groups done together
    _after: dict[str, int] = field(default_factory=dict)  # per run: the seq after which steps may inherit
    _placed: dict[str, int] = field(default_factory=dict)  # per run: the steps the batch placed in it
    _origins: dict[str, list[str]] = field(default_factory=dict)  # per run: the source of each step moving in
    _modelled: set[str] = field(default_factory=set)  # runs the batch brought a model call to

    def start(self, conn: Connection) -> None:
        """The moves' runs locked, their traces pointed at their targets, a target not stored made from its source:
        a few statements for all the batch's moves (one group), or per move where a run is both a source and a target
        or two moves share a source (each move then sees what the one before it did, in order)."""
        sources = [from_sid for from_sid, _ in self.moves]
        whole = len(set(sources)) == len(sources) and not set(sources) & {to_sid for _, to_sid in self.moves}
        self._groups = [self.moves] if whole else [[move] for move in self.moves]
        for group in self._groups:
            self._start(conn, group)

    def _start(self, conn: Connection, moves: list[tuple[str, str]]) -> None:
        """`start` of moves whose sources differ and are none of their targets."""
        if not moves:
            return
        existing_sessions(conn, sorted({sid for move in moves for sid in move}), lock=True)
        src: dict[str, dict] = {}
        for part in chunks([from_sid for from_sid, _ in moves]):
            src.update((row["id"], dict(row)) for row in conn.execute(select(sessions).where(sessions.c.id.in_(part))).mappings())
        t = otlp_traces.c
        conn.execute(
            update(otlp_traces).where(t.session_id == bindparam("from_sid")).values(session_id=bindparam("to_sid")),
            [{"from_sid": from_sid, "to_sid": to_sid} for from_sid, to_sid in moves],
        )
        moving = [(from_sid, to_sid) for from_sid, to_sid in moves if from_sid in src and from_sid != to_sid]
        if not moving:
            return
        dialect = dialect_module(conn.dialect.name)
        conn.execute(
            dialect.insert(sessions).on_conflict_do_nothing(index_elements=["id"]),
            [{**src[from_sid], "id": to_sid} for from_sid, to_sid in moving],
        )
        latest: dict[str, Any] = {}
        for part in chunks(sorted({to_sid for _, to_sid in moving})):
            latest.update(conn.execute(select(sessions.c.id, sessions.c.last_event_at).where(sessions.c.id.in_(part))).all())
        later: dict[str, Any] = {}  # target → its last event's time where a source's is later, as moved in order
        for from_sid, to_sid in moving:
            at = src[from_sid]["last_event_at"]
            if at and (latest.get(to_sid) is None or latest[to_sid] < at):
                latest[to_sid] = later[to_sid] = at
        if later:
            conn.execute(
                update(sessions).where(sessions.c.id == bindparam("sid")).values(last_event_at=bindparam("at")),
                [{"sid": sid, "at": at} for sid, at in later.items()],
            )
        self._moving += moving

    def place(self, conn: Connection, batch: WriteBatch) -> tuple[dict[str, list[Sequence]], dict[str, int]]:
        incoming = self._incoming(conn)
        times_moved = Counter(from_sid for from_sid, _ in self._moving)
        whole = {f for f, n in times_moved.items() if n == 1 and f not in batch.steps and f not in incoming}  # `_move_in`
        moved: dict[str, list[Sequence]] = {}
        dupes: dict[str, int] = {}
        # every run's last step in one read (which runs hold steps: a new run holds none), each passed to `room`;
        # not for a run steps move out of in this pass (a source that is also a target: read when placed)
        sources = {from_sid for from_sid, _ in self._moving}
        runs = [sid for sid in dict.fromkeys([*batch.steps, *incoming]) if sid not in sources]
        last = placing.lasts(conn, runs)
        holding = {
            sid: batch.steps[sid]
            for sid in batch.steps
            if (last[sid] is not None if sid in last else _holds_steps(conn, sid))  # a new run holds none
        }
        stored = _stored(conn, holding) if holding else {}
        self._modelled = {sid for sid, rows in batch.steps.items() if any(row[MODEL_AT] for row, _ in rows)} | set(incoming)
        for sid in dict.fromkeys([*batch.steps, *incoming]):
            mine = incoming.get(sid, [])
            held = stored.get(sid, set()) | {r.event_id for r in mine}
            pending = [item for item in batch.steps.get(sid, []) if item[0][EVENT_ID_AT] not in held]
            if sid in batch.steps:
                dupes[sid] = len(batch.steps[sid]) - len(pending)
                batch.steps[sid] = pending
            spots: dict[str, tuple[str, int]] = {}  # event_id → (place, index in pending, or -1 - index in mine)
            for i, (row, _) in enumerate(pending):
                eid = row[EVENT_ID_AT]
                if eid not in held and eid not in spots:
                    spots[eid] = (row[PLACE_AT] or self.places.get((sid, eid), ""), i)
            for i, r in enumerate(mine):
                spots[r.event_id] = (r.place or "", -1 - i)
            if not spots:
                continue
            order = sorted(spots.values())
            places = [where for where, _ in order]
            seqs, first = room(conn, sid, places, sparse=sid not in self.rooted, last=last.get(sid, UNREAD))
            self._placed[sid] = len(order)
            one_spot = seqs[-1] - seqs[0] == len(seqs) - 1
            self.landed[sid] = (seqs[0], seqs[-1], first is not None) if one_spot else None
            made: list[tuple] = [row for row, _ in pending]
            changes: list[tuple[str, int, int, int]] = []  # (source, step id, old seq, new seq) of the steps moving in
            rolled: list[Sequence] = []
            origins = self._origins.get(sid, [])
            for (where, i), seq in zip(order, seqs, strict=True):
                if i >= 0:
                    made[i] = (*made[i][:SEQ_AT], seq, *made[i][SEQ_AT + 1 : PLACE_AT], where)
                else:
                    r = mine[-1 - i]
                    changes.append((origins[-1 - i], r.id, r.seq, seq))
                    rolled.append((seq, *r[4:]))
            batch.steps[sid] = [(row, context) for row, (_, context) in zip(made, pending, strict=True)]
            if changes:
                _move_in(conn, sid, changes, whole)
                moved[sid] = rolled
                self._after[sid] = min(change[3] for change in changes) - 1
            if first is not None:
                self._after[sid] = min(self._after.get(sid, first), first)
        self._sources_dropped(conn)
        return moved, dupes

    def _moving_groups(self) -> list[list[tuple[str, str]]]:
        """The moves whose source was stored (`_moving`), in `start`'s groups."""
        moving = set(self._moving)
        return [[move for move in group if move in moving] for group in self._groups]

    def _incoming(self, conn: Connection) -> dict[str, list]:
        """Per run, the stored steps moving into it (rows of _MOVED) but those it holds already, which are dropped."""
        incoming: dict[str, list] = {}
        for moving in self._moving_groups():
            rows = _moved_rows(conn, [from_sid for from_sid, _ in moving])
            held = _held_pairs(conn, [(to_sid, r.event_id) for from_sid, to_sid in moving for r in rows.get(from_sid, ())])
            for from_sid, to_sid in moving:
                source = rows.get(from_sid, ())
                there = sorted(r.event_id for r in source if (to_sid, r.event_id) in held)
                for part in chunks(there):
                    for table in (step_contexts, steps):
                        conn.execute(delete(table).where(table.c.session_id == from_sid, table.c.event_id.in_(part)))
                kept = [r for r in source if (to_sid, r.event_id) not in held]
                incoming.setdefault(to_sid, []).extend(kept)
                self._origins.setdefault(to_sid, []).extend([from_sid] * len(kept))
        return incoming

    def _sources_dropped(self, conn: Connection) -> None:
        """The moves' sources, their steps placed in their targets: contexts, attachments, notes and replays pointed
        at the targets, their rollups and rows gone."""
        for moving in self._moving_groups():
            if not moving:
                continue
            params = [{"from_sid": from_sid, "to_sid": to_sid} for from_sid, to_sid in moving]
            for table in (step_contexts, attachments, annotations_table):
                conn.execute(
                    update(table).where(table.c.session_id == bindparam("from_sid")).values(session_id=bindparam("to_sid")),
                    params,
                )
            replay_of = sessions.c.replay_of
            conn.execute(update(sessions).where(replay_of == bindparam("from_sid")).values(replay_of=bindparam("to_sid")), params)
            gone = [from_sid for from_sid, _ in moving]
            rollups.forget(conn, gone)
            for part in chunks(gone):
                conn.execute(delete(sessions).where(sessions.c.id.in_(part)))

    def finish(self, conn: Connection) -> None:
        late = {sid: (after, self.agents[sid]) for sid, after in self._after.items() if self.agents.get(sid)}
        self.daily += _commit(conn, **self.commit, places=(), agents=late)
        touched = {sid for sid, spot in self.landed.items() if spot is None or spot[2] or sid in self.rooted}
        touched.update(step.session_id for _, step, _ in self.commit["replaced"])  # a batch only appended left none
        for sid, n in gapped(conn, sorted(touched)).items():  # one pass, paid for by the batch or its root
            if sid in self.rooted or n <= max(placing.SETTLE_SMALL, 4 * self._placed.get(sid, 0)):
                settle(conn, sid)
        _fill_models(conn, sorted(self._modelled))
        self.daily += [from_sid for from_sid, _ in self._moving]


# what a moved step is read as: its row id, event id and place, then rollups.FIELDS (its stored call key: every write
# of a call's arguments writes its key)
_MOVED = (steps.c.id, steps.c.event_id, steps.c.place, *(steps.c[n] for n in rollups.FIELDS))
_Moved = namedtuple("_Moved", [c.name for c in _MOVED])  # type: ignore[misc]


def _move_in(conn: Connection, sid: str, changes: Sequence[tuple[str, int, int, int]], whole: set[str]) -> None:
    """Move stored steps into run `sid` at their new seqs (`changes`: source, step id, old seq, new seq). A
    source in `whole` (every step it holds moves here, and nothing else in this pass stored steps in it or
    renumbered them) whose steps all move by one amount, as when a trace's root arrives after its children
    and they land after the run's steps in their order, moves in one range update (an update by id a step
    costs about twice as much: each is a statement of its own over the same index entries)."""
    shifts: dict[str, set[int]] = {}
    for source, _, old, new in changes:
        shifts.setdefault(source, set()).add(new - old)
    ranged = {source for source, by in shifts.items() if source in whole and len(by) == 1}
    made = _statements()
    if ranged:
        conn.execute(made["move_range"], [{"from_sid": f, "to_sid": sid, "by": min(shifts[f])} for f in sorted(ranged)])
    one_by_one = [{"rid": rid, "to_sid": sid, "new_seq": new} for source, rid, _, new in changes if source not in ranged]
    if one_by_one:
        conn.execute(made["move_one"], one_by_one)


@cache
def _statements() -> dict:
    """The statements run once per step taken over or moved, built once with their parameters bound by name
    (building them anew for each step cost as much as running them)."""
    s = steps.c
    sid: BindParameter[str] = bindparam("sid", type_=s.session_id.type)
    eid: BindParameter[str] = bindparam("eid", type_=s.event_id.type)
    seq: BindParameter[int] = bindparam("seq", type_=s.seq.type)
    rid: BindParameter[int] = bindparam("rid", type_=s.id.type)
    taken_over = [*(name for name in STEP_COLUMNS if name != "seq"), "call_key", "place"]  # what a tool's span sets
    return {
        "taken": select(s.id).where(s.session_id == sid, s.event_id == eid),
        "old": select(s.id, *_ROLLED).where(s.session_id == sid, s.event_id == eid),
        "take_over": update(steps)
        .where(s.id == rid)
        .values({s[name]: bindparam(f"v_{name}", type_=s[name].type) for name in taken_over}),
        "rolled": select(*_ROLLED).where(s.id == rid),
        "place_before": select(s.place).where(s.session_id == sid, s.seq < seq).order_by(s.seq.desc()).limit(1),
        "place_after": select(s.place).where(s.session_id == sid, s.seq > seq).order_by(s.seq).limit(1),
        "agentless": select(s.id, s.event_id, s.parent_id).where(s.session_id == sid, s.seq > seq, s.agent_id.is_(None)),
        "agent": update(steps).where(s.id.in_(bindparam("ids", expanding=True))).values(agent_id=bindparam("agent")),
        "move_range": update(steps)
        .where(s.session_id == bindparam("from_sid"))
        .values(session_id=bindparam("to_sid"), seq=s.seq + bindparam("by", type_=s.seq.type)),
        "move_one": update(steps).where(s.id == rid).values(session_id=bindparam("to_sid"), seq=bindparam("new_seq")),
    }


def _moved_rows(conn: Connection, sids: Sequence[str]) -> dict[str, list]:
    """The stored steps of these runs (sources of moves), as rows of _MOVED, per run: one read for them all."""
    out: dict[str, list] = {}
    for part in chunks(list(sids)):
        for row in conn.execute(select(*_MOVED, steps.c.session_id).where(steps.c.session_id.in_(part))):
            out.setdefault(row[-1], []).append(_Moved(*row[:-1]))
    return out


def _held_pairs(conn: Connection, pairs: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """Which of these (session_id, event_id) steps are stored: a lookup in the steps' (session_id, event_id) index
    per pair, the pairs bound whole (bulk.by_rows: a batch's few hundred in one statement)."""
    tail = "SELECT t.session_id, t.event_id FROM b JOIN steps t ON t.session_id = b.sid AND t.event_id = b.eid"
    return {(sid, eid) for sid, eid in by_rows(conn, ("sid", "eid"), ("text", "text"), pairs, tail)}


def _by_pairs(conn: Connection, table: Table, columns: tuple[str, ...], pairs: Sequence[tuple[str, str]]) -> list[Row]:
    """(session_id, event_id, *columns) of the rows of `table` (steps, step_contexts) keyed by these pairs: a
    lookup in its (session_id, event_id) index per pair (a pair asked twice answers twice)."""
    extra = "".join(f", t.{c}" for c in columns)
    tail = f"SELECT t.session_id, t.event_id{extra} FROM b JOIN {table.name} t ON t.session_id = b.sid AND t.event_id = b.eid"
    return by_values(conn, ("sid", "eid"), pairs, tail, tuple((c, table.c[c].type) for c in columns))


_ROLLED = tuple(steps.c[n] for n in rollups.FIELDS)  # a stored step as its run's rollup reads it (its stored call key)
PLACE_AT, MODEL_AT = ROW_COLUMNS.index("place"), ROW_COLUMNS.index("model")


def _fill_models(conn: Connection, sids: list[str]) -> None:
    """A run's model where its root's batch carried no model call (spans arrive in any batches): its first
    model step's, once one is stored; a run that has a model keeps it. Only runs the batch brought model calls
    or moved steps to, and each read stops at the first step with a model (the steps' seq index)."""
    first = (
        select(steps.c.model)
        .where(steps.c.session_id == sessions.c.id, steps.c.model.is_not(None))
        .order_by(steps.c.seq)
        .limit(1)
        .scalar_subquery()
    )
    for part in chunks(sids):
        conn.execute(update(sessions).where(sessions.c.id.in_(part), sessions.c.model.is_(None)).values(model=first))


def _short(conn: Connection, swaps: Counter[str]) -> set[str]:
    """Of the runs with these many swaps in a batch, those whose rollups cost less to recompute than to carry
    over each swap (fewer than rollups.SWAP_FROM steps a swap)."""
    r = run_rollups.c
    long = set()
    for part in chunks(sorted(swaps)):
        for sid, n in conn.execute(select(r.session_id, r.steps).where(r.session_id.in_(part))):
            if n >= rollups.SWAP_FROM * swaps[sid]:
                long.add(sid)
    return set(swaps) - long


def _holds_steps(conn: Connection, sid: str) -> bool:
    return conn.scalar(select(steps.c.id).where(steps.c.session_id == sid).limit(1)) is not None


def _stored(conn: Connection, pending: dict[str, list[tuple[tuple, Any]]]) -> dict[str, set[str]]:
    """Per run, which of its pending rows' event ids it holds already: one read for the batch."""
    out: dict[str, set[str]] = {}
    pairs = list(dict.fromkeys((sid, row[EVENT_ID_AT]) for sid, rows in pending.items() for row, _ in rows))
    for sid, eid in _held_pairs(conn, pairs):  # a lookup a step, not one per run and step of the batch
        out.setdefault(sid, set()).add(eid)
    return out


def _between(conn: Connection, sid: str, seq: int, where: str) -> bool:
    """Whether a place falls between those of the steps before and after `seq` in a run (a step taken over
    by another of a nearby place keeps its seq)."""
    made = _statements()
    prev = conn.scalar(made["place_before"], {"sid": sid, "seq": seq})
    after = conn.execute(made["place_after"], {"sid": sid, "seq": seq}).first()
    return (prev or "") <= where and (after is None or where < (after.place or ""))


def _inherit(conn: Connection, sid: str, from_seq: int, known: dict[str, str]) -> None:
    """Give a run's steps after `from_seq` that have no agent the agent of their nearest ancestor among
    `known` (a batch's steps with an agent), as one request's spans would have: a step stored before the
    agent span above it arrived had no agent to inherit. Reads only the agentless steps after `from_seq`."""
    made = _statements()
    up = {r.event_id: (r.id, r.parent_id) for r in conn.execute(made["agentless"], {"sid": sid, "seq": from_seq})}
    found: dict[str, str | None] = dict(known)
    changes: dict[str, list[int]] = {}  # agent → the steps given it
    for eid, (rid, _) in up.items():
        path, node = [], eid
        while node not in found and node in up:  # up through agentless steps to a known agent (or none)
            path.append(node)
            found[node] = None  # a cycle (bad input) stops here
            node = up[node][1]
        agent = found.get(node)
        for item in path:
            found[item] = agent
        given = found[eid]
        if given is not None:
            changes.setdefault(given, []).append(rid)
    for agent, ids in changes.items():  # an update a few hundred steps, not one a step
        for part in chunks(ids):
            conn.execute(made["agent"], {"agent": agent, "ids": list(part)})


def _next_models(conn: Connection, named: Sequence[tuple[str, str]]) -> list[str | None]:
    """For each (session_id, event_id) of a step stored without content: the event id of the first model call
    after it in its run (None: none, or the step has content). One statement for them all."""
    tail = (
        "SELECT b.k, (SELECT m.event_id FROM steps m"
        " WHERE m.session_id = b.sid AND m.type = 'think' AND m.seq > (SELECT s.seq FROM steps s"
        " WHERE s.session_id = b.sid AND s.event_id = b.eid AND s.content IS NULL) ORDER BY m.seq LIMIT 1) FROM b"
    )
    out: list[str | None] = [None] * len(named)
    for k, model in by_values(conn, ("k", "sid", "eid"), [(i, sid, eid) for i, (sid, eid) in enumerate(named)], tail):
        out[int(k)] = model
    return out


def _contexts(conn: Connection, named: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Any]:
    """The recorded contexts of these (session_id, event_id) steps."""
    rows = _by_pairs(conn, step_contexts, ("context",), named)  # one read for the runs of a batch, not one a run
    return {(sid, eid): context for sid, eid, context in rows}


def _recorded(conn: Connection, step_id: int, meta: dict | None, field: str) -> None:
    """Take `field` off a step's `not_recorded`: what its spans lacked has come since."""
    if field in ((meta or {}).get("not_recorded") or []):
        conn.execute(update(steps).where(steps.c.id == step_id).values(metadata=_came(meta, field)))


def _came(meta: dict | None, field: str) -> dict:
    """A step's metadata with `field` off its `not_recorded` (the key gone with the last field)."""
    rest = [f for f in (meta or {}).get("not_recorded") or [] if f != field]
    kept = {k: v for k, v in (meta or {}).items() if k != "not_recorded"}
    return kept | {"not_recorded": rest} if rest else kept


def _fill_result(conn: Connection, sid: str, call_id: str, text: str, model_event_id: str) -> int:
    """Give a run's tool results stored without text for `call_id` the text the model call `model_event_id`
    received for it (`metadata.content_from` names that call, as when both came in one batch)."""
    s = steps.c
    bare = (s.session_id == sid, s.tool_call_id == call_id, s.type == "tool_result", s.content.is_(None))
    rows = conn.execute(select(s.id, s.metadata).where(*bare)).all()
    for row in rows:
        meta = _came(row.metadata, "content") | {"content_from": {"model_input": model_event_id}}
        conn.execute(update(steps).where(s.id == row.id).values(content=text, metadata=meta))
    return len(rows)


def _answered(conn: Connection, sid: str, seq: int, answer: str) -> None:
    """The run's answer is the text of its last model call, which came after the run ended (its root span
    recorded none): set where the run succeeded without an answer and no model or tool call came later."""
    s = steps.c
    later = conn.scalar(select(s.id).where(s.session_id == sid, s.seq > seq, s.type.in_(("think", "tool_call"))).limit(1))
    if later is None:
        conn.execute(
            update(sessions)
            .where(sessions.c.id == sid, sessions.c.status == "succeeded", sessions.c.outcome.is_(None))
            .values(outcome=answer)
        )
