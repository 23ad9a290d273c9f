"""Every captured framework run, its requests posted as they arrived, reversed or shuffled, is stored as
the same steps in the same order as when all its spans come in one request: each step after its parent,
exactly one run per capture, and AutoGen's agent-building trace no run but named in the receiver's account.
In-process (`otlp_receiver.receive`, as the routes call it) on SQLite; a few on PostgreSQL."""

from __future__ import annotations

import json
from datetime import timedelta
from unittest import mock

import pytest
from framework_captures import FRAMEWORKS, ORDERS, by_order, captures, manifest, post, requests
from hypothesis import given, settings
from hypothesis import strategies as st

from replay_core.ingest import otlp_receiver
from replay_core.ingest.pipeline import IngestReport
from replay_core.storage import room
from replay_core.storage.store import Store
from replay_core.understand.timeline import open_timeline

TRACES = ("/v1/traces", "/api/public/otel/v1/traces")
SEEDS = (0, 1, 2)


def one_request(capture: str) -> bytes:
    """All the capture's trace requests as one OTLP/JSON body (their `NNN.json` twins, resource spans joined)."""
    joined: list = []
    for batch in manifest(capture)["batches"]:
        if batch["path"] in TRACES:
            name = batch["file"].split(".", 1)[0] + ".json"
            joined += json.loads((FRAMEWORKS / capture / name).read_text())["resourceSpans"]
    return json.dumps({"resourceSpans": joined}).encode()


def picture(store: Store) -> dict[str, list[tuple]]:
    """Each run's steps in seq order: identity, kind, name, parent link, agent; seqs 1..n."""
    out = {}
    for row in store.list_sessions(limit=50):
        steps = store.load_steps(row["id"])
        assert [s.seq for s in steps] == list(range(1, len(steps) + 1)), row["id"]
        out[row["id"]] = [
            (s.event_id, s.type, (s.metadata or {}).get("otel", {}).get("name"), s.tool_name, s.parent_id, s.agent_id)
            for s in steps
        ]
    return out


def parents_first(steps: list[tuple]) -> None:
    at = {s[0]: n for n, s in enumerate(steps)}
    late = [s[0] for n, s in enumerate(steps) if s[4] in at and at[s[4]] > n]
    assert not late, f"steps before their parent: {late}"


def whole(store: Store, capture: str) -> dict[str, list[tuple]]:
    """What the capture's spans make when they come in one request; the store is left empty."""
    otlp_receiver.receive(store, one_request(capture), "application/json")
    return taken(store)


def taken(store: Store) -> dict[str, list[tuple]]:
    """The store's runs (`picture`), then deleted with their traces, for the next posting."""
    out = picture(store)
    store.delete_sessions(list(out))
    return out


def set_up_traces(capture: str) -> int:
    """How many agent-building traces the capture holds (AutoGen's `create_agent`, alone in its trace)."""
    traces: dict[str, list[str]] = {}
    for batch in manifest(capture)["batches"]:
        if batch["path"] in TRACES:
            name = batch["file"].split(".", 1)[0] + ".json"
            for rs in json.loads((FRAMEWORKS / capture / name).read_text())["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        traces.setdefault(span["traceId"], []).append(span["name"])
    return sum(names == [n for n in names if n.startswith("create_agent")] for names in traces.values())


def _arrivals() -> list:
    """Each capture in its captured order; one that came in several requests also reversed and shuffled."""
    out = []
    for capture in captures():
        several = len(requests(capture)) > 1  # one request comes in one order
        orders = [("captured", 0), *([("reversed", 0), *(("shuffled", s) for s in SEEDS)] if several else [])]
        out += [by_order(order, capture, order, seed) for order, seed in orders]
    return out


@pytest.mark.parametrize(("capture", "order", "seed"), _arrivals())
def test_any_arrival_order_stores_the_steps_of_one_request(sqlite_store, capture, order, seed):
    expected = whole(sqlite_store, capture)
    assert len(expected) == 1, f"{capture}: {len(expected)} runs from one request"
    (steps,) = expected.values()
    parents_first(steps)
    done = post(sqlite_store, capture, order, seed)
    assert taken(sqlite_store) == expected, f"{capture} {order} {seed}"
    traces = [r for r in done.reports if isinstance(r, IngestReport)]  # a /v1/logs account names no trace
    assert sum(len(r.set_up) for r in traces) == set_up_traces(capture)


def test_autogen_builds_its_agent_in_a_trace_that_is_no_run(sqlite_store):
    assert set_up_traces("autogen-own-ok") == 1
    done = post(sqlite_store, "autogen-own-ok")
    (create,) = [t for r in done.reports for t in r.set_up]
    assert [r.to_dict().get("set_up") for r in done.reports] == [[create], None]
    assert len(sqlite_store.list_sessions()) == 1 and create not in {r["id"] for r in sqlite_store.list_sessions()}
    assert sqlite_store.otlp_state([create]) == ({}, [])


@pytest.mark.parametrize("capture", ["pydantic-ai-v5-slow", "openai-agents-openinference-slow"])
@pytest.mark.parametrize("order", [by_order(order, order) for order in ORDERS])
def test_batches_in_any_order_on_both_databases(store, capture, order):
    expected = whole(store, capture)
    post(store, capture, order, seed=1)
    assert picture(store) == expected


def test_served_over_http_last_batch_first(sqlite_store):
    """The routes' way: a capture's protobuf requests posted to the served app last first."""
    import httpx
    from test_recorder import TOKEN, Served, api

    capture = "openai-agents-openinference-slow"
    expected = whole(sqlite_store, capture)
    with Served(api(sqlite_store)) as base, httpx.Client(base_url=base, timeout=60) as http:
        for request in requests(capture)[::-1]:
            headers = {"Content-Type": request.content_type, "Authorization": f"Bearer {TOKEN}"}
            assert http.post(request.path, content=request.body, headers=headers).status_code == 200
    assert picture(sqlite_store) == expected


@pytest.mark.parametrize("capture", ["pydantic-ai-v5-slow", "openai-agents-openinference-slow"])
def test_the_issues_runs_start_at_their_root(sqlite_store, capture):
    """Pydantic AI was stored `think, tool_call, invoke_agent`; OpenAI Agents' root at step 7 of 13 and
    steps 1–5 with no agent: posted as captured, the root is step 1 and every step has its agent."""
    post(sqlite_store, capture)
    (run,) = picture(sqlite_store).values()
    assert run[0][4] is None and all(s[4] is not None for s in run[1:]), run
    assert all(s[5] == "travel_assistant" for s in run if s[1] != "span"), run


# ---------------------------------------------------------------- any split, any order: a property

T0 = 1_764_000_000_000_000_000


def _attrs(**values) -> list[dict]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in values.items()]


def _tree(shape: list[tuple[int, int, int]]) -> list[dict]:
    """Spans of one trace from (parent pick, kind, start gap): each span starts after its parent and the
    spans before it, and ends after its children; kinds are agents (named), model calls emitting a tool
    call, the tools answering them, and bare spans."""
    trace = "7" * 32
    parents: list[int | None] = [None]
    starts = [T0]
    kinds = [0]
    for n, (pick, kind, gap) in enumerate(shape, start=1):
        parents.append(pick % n)
        starts.append(starts[-1] + 1000 * (gap + 1))
        kinds.append(kind)
    ends = [s + 500 for s in starts]
    for i in range(len(starts) - 1, 0, -1):  # children first: a parent ends after each of them
        p = parents[i]
        assert p is not None
        ends[p] = max(ends[p], ends[i] + 100 * (i % 3))
    spans = []
    for i, (parent, start, end, kind) in enumerate(zip(parents, starts, ends, kinds, strict=True)):
        if i == 0:
            attrs = _attrs(**{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "root-agent"})
        elif kind == 1:
            attrs = _attrs(**{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"agent-{i}"})
        elif kind == 2:
            calls = [
                {
                    "role": "assistant",
                    "parts": [{"type": "tool_call", "id": f"call-{i}", "name": "search", "arguments": {"q": str(i)}}],
                }
            ]
            attrs = _attrs(
                **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.output.messages": json.dumps(calls)}
            )
        elif kind == 3:
            attrs = _attrs(
                **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": f"call-{i - 1}"}
            )
        else:
            attrs = []
        span = {
            "traceId": trace,
            "spanId": f"{i + 1:016x}",
            "name": f"span {i}",
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": attrs,
        }
        if parent is not None:
            span["parentSpanId"] = f"{parent + 1:016x}"
        spans.append(span)
    return spans


def _body(spans: list[dict]) -> bytes:
    return json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]}).encode()


_STORE: list[Store] = []


@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 4), st.integers(0, 2)), min_size=0, max_size=14),
    st.data(),
)
@settings(max_examples=30, deadline=None)
def test_any_split_in_any_order_stores_what_one_batch_stores(shape, data):
    if not _STORE:
        _STORE.append(Store("sqlite://"))
    store = _STORE[0]
    spans = _tree(shape)
    otlp_receiver.receive(store, _body(spans), "application/json")
    expected = taken(store)
    batch_of = data.draw(st.lists(st.integers(0, 4), min_size=len(spans), max_size=len(spans)), label="batch of each span")
    batches = [[s for s, b in zip(spans, batch_of, strict=True) if b == n] for n in range(5)]
    order = data.draw(st.permutations(range(5)), label="order of the batches")
    read_whole = data.draw(st.sampled_from([0, room.READ_WHOLE]), label="runs read whole up to")  # 0: searched
    settle_small = data.draw(st.sampled_from([0, room.SETTLE_SMALL]), label="runs settled at once up to")  # 0: gaps kept
    # set once both are drawn: a draw may stop the example (hypothesis' StopTest), which must leave `room` as it was
    with mock.patch.multiple(room, READ_WHOLE=read_whole, SETTLE_SMALL=settle_small):
        for n in order:
            if batches[n]:
                otlp_receiver.receive(store, _body(batches[n]), "application/json")
                for row in store.list_sessions(limit=50):  # what a reader sees between batches
                    seqs = [s.seq for s in store.load_steps(row["id"])]
                    assert seqs == sorted(set(seqs)) and seqs[0] >= 1
                    parents_first([(s.event_id, 0, 0, 0, s.parent_id) for s in store.load_steps(row["id"])])
    store.otlp_settle(timedelta(0))  # gaps a batch left are closed once the run goes quiet
    got = taken(store)
    assert got == expected
    parents_first(next(iter(got.values())))


def test_a_late_root_moves_seqs_and_keeps_every_step_under_its_event_id(sqlite_store):
    """What a link given out before the root's batch can hold on to: the step's event id reaches the same
    step, with its context, after the root took seq 1; its seq moved (docs/formats-otel.md)."""
    capture = "pydantic-ai-v5-slow"
    *early, last = requests(capture)
    for request in early:
        otlp_receiver.receive(sqlite_store, request.body, request.content_type)
    (sid,) = [r["id"] for r in sqlite_store.list_sessions()]
    before = {s.event_id: s for s in sqlite_store.load_steps(sid)}
    contexts = sqlite_store.step_contexts(sid)
    otlp_receiver.receive(sqlite_store, last.body, last.content_type)
    (run,) = sqlite_store.list_sessions()
    after = {s.event_id: s for s in sqlite_store.load_steps(run["id"])}
    opened = open_timeline(sqlite_store, run["id"])
    assert before.keys() < after.keys()
    for eid, step in before.items():
        moved = after[eid]
        assert (moved.type, moved.content, moved.tool_name, moved.tool_args) == (
            step.type,
            step.content,
            step.tool_name,
            step.tool_args,
        )
        assert moved.seq > step.seq  # the root and the agent span came before it
        assert opened.seq_of_event(eid) == moved.seq  # what the timeline's `?event=` link opens
        assert sqlite_store.step_context(run["id"], eid) == contexts.get(eid)
    assert after[min(after, key=lambda e: after[e].seq)].parent_id is None


def test_the_http_answer_says_a_set_up_trace_was_kept_out_of_the_runs(sqlite_store):
    """Over /v1/traces the exporter is told, in OTLP's own way (a partial success rejecting nothing), which
    traces became no run; a batch with none gets the empty answer of full success."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
    from starlette.testclient import TestClient

    from replay_core.server.api import create_app
    from replay_core.server.auth import Access

    said = []
    with TestClient(create_app(sqlite_store, access=Access(api_tokens=("t0ken-for-tests",)))) as client:
        for request in requests("autogen-own-ok"):
            answer = client.post(
                "/v1/traces",
                content=request.body,
                headers={"Authorization": "Bearer t0ken-for-tests", "Content-Type": request.content_type},
            )
            assert answer.status_code == 200, answer.text
            said.append(ExportTraceServiceResponse.FromString(answer.content).partial_success)
    warned = [p for p in said if p.error_message]
    assert len(warned) == 1 and all(p.rejected_spans == 0 for p in said)
    assert "1 set-up trace with no model call or tool" in warned[0].error_message
