"""OTLP runs arriving in batches, re-placed in span start order (ingest/otlp_receiver.py,
storage/ingest_state.py): what a late batch costs.

Every part receives OTLP/JSON bodies in this process through `otlp_receiver.receive` (what
`POST /v1/traces` runs for a body under otlp_worker.WORKER_FROM) into a SQLite file, and prints
its figure beside a same-run baseline:
- `late_root`: a 50,000-step run (a root and 49,999 children) whose children come first in 100
  batches of 500 and whose root comes last, as an exporter sends them; the root's batch re-places
  the whole run. Printed: the root batch's seconds beside one 500-span append batch of the same run
  (the price of landing before 50,000 stored steps, not after them), and the whole run's seconds
  beside the same spans received in one request.
- `late_batches`: a 50,000-step run of 500 agent turns of 100 spans, sent as the SDK sends them
  (each turn's children, then the turn span, which starts before them, then the root last): every
  batch lands among stored steps. Printed: spans/s beside the same spans in one request.
- `reversed`: the same run's 500 batches sent last first, each landing before everything stored
  but the root (which came first), then the run numbered 1..n as when it goes quiet (`otlp_settle`,
  in the time; its seconds printed apart). Printed: spans/s beside the same spans in one request.
- `batched`: 200 traces × 100 spans (a root, 33 × chat + tool + plan, `session.id` on the root
  only, 20 sessions, each session's traces one after the other in time), each trace sent in 4
  batches children first and its root last, 10 traces a request: spans/s beside orjson.loads of
  the same bodies; the goal is 30 × Phoenix's measured 161 spans/s.
- `tool_spans`: runs of 4,000, 8,000 and 16,000 rounds (a model call asking a tool, then the tool span
  answering it: 3 steps a round, 12,001 to 48,001 steps), sent in batches of 500 spans cut between each
  batch's last model call and its tool span, the root last: every batch's first span takes over the call
  the previous batch stored (`ingest_state._commit`'s `replaced`). Printed per length, in CPU seconds
  (time.process_time): spans/s beside the same spans in one request; a rate falling with the length is a
  cost per batch growing with the run.
Each part prints os.getloadavg() (the machine is shared: judge ratios, not seconds).
- `shuffled`: the same 500 batches in a random order (seeded): each batch lands at a spot of its own,
  inside the run, where `room` spreads a window of seqs around it rather than moving the run's tail up;
  a ratio falling with BENCH_OTLP_STEPS would be a cost per batch growing with the run. Printed as `reversed`.
Run one part with `python bench/bench_otlp_order.py late_root` (or late_batches, reversed, shuffled,
batched, tool_spans); BENCH_OTLP_STEPS sets the runs' length (50,000).
"""

from __future__ import annotations

import json
import os
import random
import sys
import tempfile
import time
from datetime import timedelta
from itertools import pairwise
from pathlib import Path

import orjson
from sqlalchemy import select

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report  # noqa: E402

from replay_core.ingest.otlp_receiver import receive  # noqa: E402
from replay_core.storage.store import Store  # noqa: E402
from replay_core.storage.tables import run_rollups  # noqa: E402

T0 = 1_764_000_000_000_000_000
N = int(os.environ.get("BENCH_OTLP_STEPS", 50_000))  # the run's length (a multiple of TURN)
TURN = 100
JSON = "application/json"


def body(spans: list[dict]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})


def span(trace: str, n: int, parent: int | None, start: int, end: int, **attrs: str) -> dict:
    out = {
        "traceId": trace,
        "spanId": f"{n:016x}",
        "name": f"span {n}",
        "startTimeUnixNano": str(T0 + start * 1000),
        "endTimeUnixNano": str(T0 + end * 1000),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    if parent is not None:
        out["parentSpanId"] = f"{parent:016x}"
    return out


def _store(tmp: str, name: str) -> Store:
    return Store(f"sqlite:///{tmp}/{name}.db")


def _received(store: Store, bodies: list[bytes], clock=time.perf_counter) -> float:
    start = clock()
    for b in bodies:
        receive(store, b, JSON)
    return clock() - start


def late_root() -> None:
    trace = "a" * 32
    root = span(trace, 1, None, 0, 10 * N, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"})
    children = [span(trace, n, 1, n * 10, n * 10 + 5) for n in range(2, N + 1)]
    batches = [body(children[i : i + 500]) for i in range(0, len(children), 500)]
    with tempfile.TemporaryDirectory() as tmp:
        one = _store(tmp, "one")
        one_s = _received(one, [body([*children, root])])
        store = _store(tmp, "late")
        start = time.perf_counter()
        for b in batches[:-1]:
            receive(store, b, JSON)
        last_append_s = _received(store, batches[-1:])
        root_s = _received(store, [body([root])])
        total_s = time.perf_counter() - start
        steps = store.load_steps(trace)
        assert len(steps) == N and steps[0].event_id == f"{1:016x}" and steps[0].seq == 1
        assert [s.seq for s in steps] == list(range(1, N + 1))
        assert all(s.agent_id == "bench" for s in steps)
        one.close()
        store.close()
    report(f"otlp_late_root_{N // 1000}k_steps_root_batch", root_s, "s", "-", last_append_s, higher_is_better=False)
    report(f"otlp_late_root_{N // 1000}k_steps_whole_run", total_s, "s", "-", one_s, higher_is_better=False)
    _load()


def turns(trace: str = "b" * 32) -> tuple[list[bytes], list[dict]]:
    """The SDK's batches of a run of N // TURN agent turns, each TURN spans (the turn and its children), and its root."""
    root = span(trace, 1, None, 0, 10 * N + 10, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"})
    batches, every = [], []
    n = 2
    for t in range(N // TURN):
        turn_id, first = n, n
        children = [span(trace, first + k, turn_id, (first + k) * 10, (first + k) * 10 + 5) for k in range(1, TURN)]
        turn = span(
            trace,
            turn_id,
            1,
            first * 10,
            (first + TURN) * 10,
            **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"turn-{t}"},
        )
        batches.append([*children, turn])  # the turn ends after its children: sent with them, after them
        n += TURN
    batches[-1].append(root)
    for b in batches:
        every += b
    return [body(b) for b in batches], every


def turn_batches(label: str, order: str) -> None:
    """The turns' batches as the SDK sends them (`sdk`), last first or shuffled; spans/s beside the same spans
    in one request."""
    trace = "b" * 32
    bodies, every = turns(trace)
    sent = {"sdk": bodies, "reversed": bodies[::-1], "shuffled": random.Random(0).sample(bodies, len(bodies))}[order]
    with tempfile.TemporaryDirectory() as tmp:
        one = _store(tmp, "one")
        one_s = _received(one, [body(every)])
        store = _store(tmp, label)
        took = _received(store, sent)
        start = time.perf_counter()
        settle = getattr(store, "otlp_settle", None)  # main numbers the run 1..n at every batch
        if settle is not None:
            settle(timedelta(0))  # what the receiver does once the run's traces went quiet
        settle_s = time.perf_counter() - start
        took += settle_s
        got = store.load_steps(trace)
        want = one.load_steps(trace)
        assert [(s.seq, s.event_id, s.agent_id) for s in got] == [(s.seq, s.event_id, s.agent_id) for s in want]
        one.close()
        store.close()
    spans = len(every)
    report(f"otlp_{label}_{spans // 1000}k_spans_{len(bodies)}_batches", spans / took, "spans/s", "-", spans / one_s)
    print(json.dumps({"settled_after_the_batches_s": round(settle_s, 3)}), flush=True)
    _load()


TRACES, SESSIONS, ROUNDS = 200, 20, 33  # 1 root + 33 × (chat, execute_tool, plan) = 100 spans a trace


def _trace_spans(t: int) -> list[dict]:
    """One trace's 100 spans; span ids unique across traces (traces of one session share its event ids' space)."""
    trace = f"{t + 1:032x}"
    out = []
    base_id = t * 1000
    start = t * (ROUNDS * 40 + 10)  # a session's traces one after the other, as a conversation's turns
    n = base_id + 2
    for i in range(ROUNDS):
        calls = [
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": f"call-{i}", "name": "search", "arguments": {"q": str(i)}}],
            }
        ]
        base = start + i * 40 + 1
        out.append(
            span(
                trace,
                n,
                base_id + 1,
                base,
                base + 10,
                **{
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.output.messages": json.dumps(calls),
                },
            )
        )
        out.append(
            span(
                trace,
                n + 1,
                base_id + 1,
                base + 12,
                base + 20,
                **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": f"call-{i}"},
            )
        )
        out.append(span(trace, n + 2, base_id + 1, base + 22, base + 30))
        n += 3
    root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "worker", "session.id": f"conv-{t % SESSIONS}"}
    out.append(span(trace, base_id + 1, None, start, start + ROUNDS * 40 + 5, **root))
    return out


def batched() -> None:
    per_trace = [_trace_spans(t) for t in range(TRACES)]
    bodies = []
    for quarter in range(4):  # children first, each trace's root in its last batch; traces interleaved 10 a body
        for group in range(0, TRACES, 10):
            chunk = []
            for spans in per_trace[group : group + 10]:
                chunk += spans[quarter * 25 : (quarter + 1) * 25]
            bodies.append(body(chunk))
    start = time.perf_counter()
    for b in bodies:
        orjson.loads(b)
    parse_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        store = _store(tmp, "batched")
        took = _received(store, bodies)
        assert len(store.list_sessions(limit=100)) == SESSIONS
        assert sum(len(store.load_steps(f"conv-{s}")) for s in range(SESSIONS)) == TRACES * (1 + ROUNDS * 4)
        store.close()
    spans = TRACES * 100
    report(f"otlp_batched_{TRACES}x100_spans_{len(bodies)}_requests", spans / took, "spans/s", ">= 4830", spans / parse_s)
    _load()


TOOL_ROUNDS = (4000, 8000, 16000)


def _tool_run(rounds: int) -> tuple[list[bytes], list[dict]]:
    """A run of `rounds` model calls each asking a tool and the tool's span, in the order they end, the root
    last; batches of 500 spans but the first of 499, so each batch ends on a model call whose tool span
    opens the next one."""
    trace = "c" * 32
    every = []
    for i in range(rounds):
        base = i * 40 + 1
        calls = [
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": f"call-{i}", "name": "search", "arguments": {"q": str(i)}}],
            }
        ]
        model = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.output.messages": json.dumps(calls)}
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": f"call-{i}"}
        every.append(span(trace, 2 + 2 * i, 1, base, base + 10, **model))
        every.append(span(trace, 3 + 2 * i, 1, base + 12, base + 20, **tool))
    every.append(
        span(trace, 1, None, 0, rounds * 40 + 5, **{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"})
    )
    cuts = [0, *range(499, len(every), 500), len(every)]
    return [body(every[a:b]) for a, b in pairwise(cuts) if b > a], every


def tool_spans() -> None:
    """Tool spans taking over the calls an earlier batch stored, at three run lengths."""
    trace = "c" * 32
    for rounds in TOOL_ROUNDS:
        bodies, every = _tool_run(rounds)
        with tempfile.TemporaryDirectory() as tmp:
            one = _store(tmp, "one")
            one_s = _received(one, [body(every)], time.process_time)
            store = _store(tmp, "tools")
            took = _received(store, bodies, time.process_time)
            start = time.process_time()
            store.otlp_settle(timedelta(0))
            took += time.process_time() - start
            got, want = store.load_steps(trace), one.load_steps(trace)
            assert len(want) == 3 * rounds + 1
            assert [(s.seq, s.event_id, s.type) for s in got] == [(s.seq, s.event_id, s.type) for s in want]
            with store.engine.connect() as conn, one.engine.connect() as other:
                assert [tuple(r) for r in conn.execute(select(run_rollups))] == [
                    tuple(r) for r in other.execute(select(run_rollups))
                ]
            one.close()
            store.close()
        spans = len(every)
        report(f"otlp_tool_spans_{len(want)}_steps_{len(bodies)}_batches", spans / took, "spans/s", "-", spans / one_s, cpu=True)
    _load()


def _load() -> None:
    print(json.dumps({"loadavg": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}), flush=True)


if __name__ == "__main__":
    part = sys.argv[1] if len(sys.argv) > 1 else "all"
    if part in ("all", "late_root"):
        late_root()
    if part in ("all", "late_batches"):
        turn_batches("turns", "sdk")
    if part in ("all", "reversed"):
        turn_batches("reversed", "reversed")
    if part in ("all", "shuffled"):
        turn_batches("shuffled", "shuffled")
    if part in ("all", "batched"):
        batched()
    if part in ("all", "tool_spans"):
        tool_spans()
