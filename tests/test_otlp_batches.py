"""OTLP over HTTP in batches: a trace is one run whatever batches its spans come in, and ingest
never holds the event loop. Served for real (uvicorn on 127.0.0.1 in a thread), on SQLite and
PostgreSQL, fed by the OpenTelemetry SDK's own BatchSpanProcessor + OTLP/HTTP exporter and by
hand-made batches in every order."""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_recorder import TOKEN, Served, api

from replay_core.ingest.formats import otel
from replay_core.ingest.pipeline import import_bytes

AUTH = {"Authorization": f"Bearer {TOKEN}"}
# 1 root + 33 × (chat, execute_tool, plan) = 100 spans a trace, 10 traces a session (runs of 1,330 steps)
TRACES, SESSIONS, ROUNDS = 60, 6, 33
STEPS_PER_TRACE = 1 + ROUNDS * 4  # root span, think, tool_call + tool_result, plan span


def _calls(i: int) -> str:
    return json.dumps(
        [
            {
                "role": "assistant",
                "parts": [{"type": "tool_call", "id": f"call-{i}", "name": "search", "arguments": {"q": f"item {i}"}}],
            }
        ]
    )


@pytest.mark.load  # 6,000 spans in 163 exporter batches
def test_sdk_batch_exporter_keeps_every_trace_whole_in_its_session(store):
    """60 traces × 100 spans in 6 sessions, `session.id` only on each root (which ends last), sent by
    the SDK in batches of 37 spans: every trace's early spans end up in its session, every tool span
    merges with the model call it answers, whichever batch each came in."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    with Served(api(store)) as base:
        provider = TracerProvider(resource=Resource.create({"service.name": "batch-test"}))
        exporter = OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=AUTH, timeout=120)
        batches: list[list] = []
        send = exporter.export
        exporter.export = lambda spans: (batches.append([(s.context.trace_id, s.name) for s in spans]), send(spans))[1]
        provider.add_span_processor(
            BatchSpanProcessor(exporter, max_export_batch_size=37, schedule_delay_millis=20, max_queue_size=TRACES * 100)
        )
        tracer = provider.get_tracer("batch-test")
        for t in range(TRACES):
            with tracer.start_as_current_span(
                "invoke_agent worker",
                attributes={
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "worker",
                    "session.id": f"conv-{t % SESSIONS}",
                },
            ):
                for i in range(ROUNDS):
                    with tracer.start_as_current_span(
                        "chat gpt-4o",
                        attributes={
                            "gen_ai.operation.name": "chat",
                            "gen_ai.request.model": "gpt-4o",
                            "gen_ai.output.messages": _calls(i),
                        },
                    ):
                        pass
                    with tracer.start_as_current_span(
                        "execute_tool search",
                        attributes={
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": "search",
                            "gen_ai.tool.call.id": f"call-{i}",
                            "gen_ai.tool.call.result": "found",
                        },
                    ):
                        pass
                    with tracer.start_as_current_span("plan"):
                        pass
        assert provider.force_flush(600_000)
        provider.shutdown()
    # the batches really split traces: roots after their first spans, tool spans after their model call
    first_batch: dict[int, int] = {}
    root_batch: dict[int, int] = {}
    split_calls = 0
    for n, batch in enumerate(batches):
        for trace, name in batch:
            first_batch.setdefault(trace, n)
            if name.startswith("invoke_agent"):
                root_batch[trace] = n
        split_calls += (
            batch[-1][1].startswith("chat") and n + 1 < len(batches) and batches[n + 1][0][1].startswith("execute_tool")
        )
    assert len(root_batch) == TRACES and sum(root_batch[t] != first_batch[t] for t in root_batch) > TRACES // 2
    assert split_calls > 0
    listed = store.list_sessions(limit=500)
    assert sorted(s["id"] for s in listed) == sorted(f"conv-{n}" for n in range(SESSIONS))
    for row in listed:
        steps = store.load_steps(row["id"])
        assert len(steps) == STEPS_PER_TRACE * TRACES // SESSIONS, row["id"]
        kinds = Counter(s.type for s in steps)
        assert kinds["tool_call"] == kinds["tool_result"] == ROUNDS * TRACES // SESSIONS
        assert not [s.event_id for s in steps if ".call." in s.event_id]  # no bare call left unmerged
        assert all(s.tool_call_id for s in steps if s.type == "tool_call")
        assert sorted(s.seq for s in steps) == list(range(1, len(steps) + 1))  # numbered without gaps
        assert row["status"] == "succeeded"
    placed, still_open = store.otlp_state([s.metadata["otel"]["trace_id"] for s in store.load_steps("conv-0") if s.metadata])
    assert set(sid for sid, _ in placed.values()) == {"conv-0"} and still_open == []


# ---------------------------------------------------------------- hand-made batches, every order

TRACE = "5b8efff798038103d269b633813fc60c"


def _span(span_id: str, name: str, parent: str | None, start: int, end: int, **attrs) -> dict:
    out = {
        "traceId": TRACE,
        "spanId": span_id,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
    }
    if parent:
        out["parentSpanId"] = parent
    return out


T0 = 1_764_000_000_000_000_000
ROOT = _span(
    "a000000000000001",
    "invoke_agent triage",
    None,
    T0,
    T0 + 9_000_000,
    **{"gen_ai.operation.name": "invoke_agent", "session.id": "conv-hand"},
)
CHAT = _span(
    "a000000000000002",
    "chat gpt-4o",
    "a000000000000001",
    T0 + 1_000_000,
    T0 + 2_000_000,
    **{"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.output.messages": _calls(1)},
)
TOOL = _span(
    "a000000000000003",
    "execute_tool search",
    "a000000000000001",
    T0 + 3_000_000,
    T0 + 4_000_000,
    **{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": "call-1"},
)


def _body(spans: list[dict]) -> bytes:
    return orjson.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})


def _picture(store) -> list[tuple]:
    """What a run looks like, seq aside: sessions, and each step's identity and meaning."""
    out = []
    for row in store.list_sessions(limit=50):
        for s in store.load_steps(row["id"]):
            out.append((row["id"], s.event_id, s.type, s.tool_name, s.tool_call_id, s.parent_id))
    return sorted(out)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_any_batch_order_stores_what_one_batch_stores(store, order):
    whole = list(otel.events_from_otlp(_body([ROOT, CHAT, TOOL]), "application/json"))
    expected = sorted(
        ("conv-hand", e.event_id, e.type, e.tool_name, e.tool_call_id, e.parent_id) for e in whole if e.kind == "step"
    )
    assert [e[2] for e in expected].count("tool_call") == 1  # one call: the tool span answers the model's
    spans = [ROOT, CHAT, TOOL]
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        for i in order:
            res = http.post("/v1/traces", content=_body([spans[i]]), headers={"Content-Type": "application/json"})
            assert res.status_code == 200, res.text
        res = http.post("/v1/traces", content=_body(spans), headers={"Content-Type": "application/json"})  # a retry
        assert res.status_code == 200
    assert _picture(store) == expected
    row = store.get_session("conv-hand")
    assert row["status"] == "succeeded" and row["name"] == "invoke_agent triage"
    assert sorted(s.seq for s in store.load_steps("conv-hand")) == [1, 2, 3, 4]


def test_a_trace_without_session_id_stays_under_its_trace_id(store):
    plain = [{**s, "attributes": [a for a in s["attributes"] if a["key"] != "session.id"]} for s in (ROOT, CHAT, TOOL)]
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        for span in (plain[1], plain[2], plain[0]):
            assert http.post("/v1/traces", content=_body([span]), headers={"Content-Type": "application/json"}).status_code == 200
    assert [r["id"] for r in store.list_sessions()] == [TRACE]
    assert len(store.load_steps(TRACE)) == 4


# ---------------------------------------------------------------- the event loop stays free


def chain_body(n: int, trace: str = "c" * 32) -> bytes:
    """One trace whose spans form a single parent chain n deep (the shape that was quadratic)."""
    spans = []
    for i in range(n):
        span = {
            "traceId": trace,
            "spanId": f"{i + 1:016x}",
            "name": f"step {i}",
            "startTimeUnixNano": str(T0 + i * 1000),
            "endTimeUnixNano": str(T0 + (2 * n - i) * 1000),
        }
        if i:
            span["parentSpanId"] = f"{i:016x}"
        spans.append(span)
    return _body(spans)


def test_healthz_answers_while_a_big_otlp_body_is_ingested(store):
    body = chain_body(20_000)
    polls_during: list[int] = []
    with Served(api(store)) as base:
        done = threading.Event()
        result: dict = {}

        def post() -> None:
            with httpx.Client(base_url=base, headers=AUTH, timeout=600) as http:
                result["res"] = http.post("/v1/traces", content=body, headers={"Content-Type": "application/json"})
            done.set()

        with httpx.Client(base_url=base, timeout=60) as health:
            assert health.get("/healthz").status_code == 200
            sender = threading.Thread(target=post)
            sender.start()
            while not done.is_set():
                res = health.get("/healthz")
                if not done.is_set():
                    assert res.status_code == 200
                    polls_during.append(1)
            sender.join()
    assert result["res"].status_code == 200, result["res"].text
    assert len(polls_during) > 0
    steps = store.load_steps("c" * 32)
    assert len(steps) == 20_000
    depth = {s.event_id: s.parent_id for s in steps}
    assert depth[f"{20_000:016x}"] == f"{19_999:016x}"  # the chain is kept


def test_deleting_a_run_forgets_its_traces(store):
    with Served(api(store)) as base, httpx.Client(base_url=base, headers=AUTH, timeout=30) as http:
        assert http.post("/v1/traces", content=_body([CHAT]), headers={"Content-Type": "application/json"}).status_code == 200
    placed, still_open = store.otlp_state([TRACE])
    assert placed == {TRACE: (TRACE, False)} and [c["side"] for c in still_open] == ["call"]
    store.delete_sessions([TRACE])
    assert store.otlp_state([TRACE]) == ({}, [])


# ---------------------------------------------------------------- linear on a deep chain, every path


def _naive_depth(parent: dict[int, int | None], i: int) -> int:
    seen, node, n = {i}, parent[i], 0
    while node is not None and node not in seen:
        seen.add(node)
        node, n = parent[node], n + 1
    return n


@given(st.lists(st.integers(min_value=-1, max_value=60), min_size=1, max_size=60), st.randoms(use_true_random=False))
@settings(deadline=None)
def test_depths_are_the_number_of_ancestors(parents, rng):
    """Whatever the parent links (chains, forests, orphans, cycles), in whatever order depths are asked."""
    n = len(parents)
    spans = [
        otel.Span("t" * 32, f"{i:016x}", None if p < 0 else f"{p % n:016x}", "", i, i, "unset", None, {})
        for i, p in enumerate(parents)
    ]
    trees = otel.SpanTrees(spans)
    index = {id(s): i for i, s in enumerate(spans)}
    parent = {i: (index[id(s.up)] if s.up is not None else None) for i, s in enumerate(spans)}
    acyclic = {i for i in range(n) if _naive_depth(parent, i) == _walk_len(parent, i)}
    asked = list(range(n))
    rng.shuffle(asked)
    got = {i: trees.depth(spans[i]) for i in asked}
    for i in acyclic:
        assert got[i] == _naive_depth(parent, i)


def _walk_len(parent: dict[int, int | None], i: int) -> int:
    """Ancestors up to a root, or -1 when the walk runs into a cycle."""
    seen, node, n = {i}, parent[i], 0
    while node is not None:
        if node in seen:
            return -1
        seen.add(node)
        node, n = parent[node], n + 1
    return n


@given(
    st.lists(
        st.tuples(
            st.sampled_from("ab"), st.booleans(), st.one_of(st.none(), st.integers(0, 5)), st.sampled_from([None, "", "s1", "s2"])
        ),
        min_size=1,
        max_size=40,
    )
)
@settings(deadline=None)
def test_a_batch_settles_on_the_session_its_first_naming_span_gives(rows):
    """Per trace, the session named by the first span in (root first, then by start) order, ties in batch
    order, whatever the batch's order; the one-pass reading equals sorting the batch first."""
    from replay_core.ingest.otlp_receiver import _settling

    spans = [
        otel.Span(
            t * 32,
            f"{i:016x}",
            None if root else "f" * 16,
            "",
            start,
            start,
            "unset",
            None,
            {} if sid is None else {"session.id": sid},
        )
        for i, (t, root, start, sid) in enumerate(rows)
    ]
    expected: dict[str, tuple] = {}
    for span in sorted(spans, key=lambda s: (s.parent_id is not None, s.start_ns if s.start_ns is not None else 2**63)):
        found, has_root = expected.get(span.trace_id, (None, False))
        expected[span.trace_id] = (found or span.attributes.get("session.id") or None, has_root or span.parent_id is None)
    assert _settling(spans) == expected


@pytest.mark.load
def test_a_50000_deep_chain_imports_from_a_file(sqlite_store):
    """The file import path (CLI, Import page) on the shape that was quadratic: no recursion limit either."""
    report = import_bytes(sqlite_store, chain_body(50_000), "chain.json")
    assert report.steps == 50_000
    steps = sqlite_store.load_steps("c" * 32)
    assert [s.event_id for s in steps[:3]] == [f"{i:016x}" for i in (1, 2, 3)]
    assert steps[-1].parent_id == f"{49_999:016x}"


# ---------------------------------------------------------------- protobuf read from the messages


def _proto_requests() -> list:
    from conftest import FIXTURES
    from google.protobuf import json_format, text_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from replay_core.ingest.formats import otlp_export

    otel_dir = FIXTURES / "otel"
    out = [text_format.Parse((otel_dir / "opentelemetry-proto_trace.protobuf-text").read_text(), ExportTraceServiceRequest())]
    for name in ("opentelemetry-proto_trace.json", "edge_failed_and_totals.otlp.json"):
        out.append(json_format.Parse((otel_dir / name).read_text(), ExportTraceServiceRequest(), ignore_unknown_fields=True))
    exported = otlp_export.to_otlp([e for e in otel.events_from_otlp(_body([ROOT, CHAT, TOOL]), "application/json")])
    out.append(json_format.ParseDict(exported, ExportTraceServiceRequest(), ignore_unknown_fields=True))
    every_value = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "s"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "lib", "version": "1"},
                        "spans": [
                            {
                                "traceId": "AAAAAAAAAAAAAAAAAAAAAQ==",
                                "spanId": "AAAAAAAAAAE=",
                                "name": "all",
                                "kind": 3,
                                "startTimeUnixNano": "1764000000000000000",
                                "endTimeUnixNano": "1764000000500000000",
                                "traceState": "k=v",
                                "status": {"code": 2, "message": "boom"},
                                "attributes": [
                                    {"key": "s", "value": {"stringValue": "x"}},
                                    {"key": "i", "value": {"intValue": "-7"}},
                                    {"key": "b", "value": {"boolValue": True}},
                                    {"key": "d", "value": {"doubleValue": 1.5}},
                                    {"key": "y", "value": {"bytesValue": "AAEC"}},
                                    {"key": "none", "value": {}},
                                    {"key": "", "value": {"stringValue": "e"}},
                                    {"key": "a", "value": {"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "2"}]}}},
                                    {
                                        "key": "kv",
                                        "value": {"kvlistValue": {"values": [{"key": "in", "value": {"boolValue": False}}]}},
                                    },
                                ],
                                "events": [
                                    {
                                        "name": "exception",
                                        "timeUnixNano": "1764000000100000000",
                                        "attributes": [{"key": "exception.type", "value": {"stringValue": "E"}}],
                                    },
                                    {},
                                ],
                                "links": [{"traceId": "AAAAAAAAAAAAAAAAAAAAAg==", "spanId": "AAAAAAAAAAI=", "attributes": []}],
                            },
                            {"traceId": "AAAAAAAAAAAAAAAAAAAAAQ==", "spanId": "AAE=", "name": "short id"},
                            {"traceId": "AAAAAAAAAAAAAAAAAAAAAQ==", "name": "no span id"},
                        ],
                    }
                ],
            }
        ]
    }
    out.append(json_format.ParseDict(every_value, ExportTraceServiceRequest()))
    return out


def test_protobuf_spans_read_from_the_messages_equal_their_json_reading():
    from google.protobuf.json_format import MessageToDict

    for request in _proto_requests():
        direct = list(otel.proto_spans(request, "request"))
        via_json = list(otel.otlp_spans(MessageToDict(request), "request"))
        assert direct == via_json
        assert direct
    assert [type(s).__name__ for s in direct] == ["Span", "BadRecord", "BadRecord"]
