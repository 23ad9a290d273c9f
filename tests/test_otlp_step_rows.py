"""The OTLP receive's steps made straight into store rows (ingest.step_rows, no StepEvent) store
exactly what the StepEvent path stored: the same row per step, the same redaction count, and, end to
end on SQLite and PostgreSQL, the same tables (steps and their seqs, sessions and their started_at,
rollups, the receiver's trace state), report and refusals, whatever the spans and batches."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import String, select
from test_rollups import keys_hold

from replay_core.events import fast_step
from replay_core.ingest import otlp_receiver
from replay_core.ingest.formats import otel
from replay_core.ingest.redact import Redactor
from replay_core.ingest.step_rows import step_row_of
from replay_core.storage.store import WriteRefused, metadata, step_row

SECRETS = [
    "sk-proj-abcdefghijklmnopqrstuvwx1234",
    "Bearer abcdefghijklmnopqrstuvwxyz012345",
    "password=hunter2hunter2",
    "mail me at someone@example.com",
    "4111 1111 1111 1111",
]
texts = st.one_of(st.none(), st.text(max_size=12), st.sampled_from(SECRETS), st.just("a\x00b"), st.just("x" * 250))
ids = st.one_of(
    st.none(), st.just(""), st.text("0123456789abcdef", min_size=1, max_size=16), st.sampled_from(SECRETS), st.just("e" * 201)
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 2**65), st.floats(allow_nan=True), texts),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["api_key", "q", "otel", "n", "Authorization"]), inner, max_size=3),
    ),
    max_leaves=8,
)
metadatas = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(["otel", "attributes", "attachments", "attachment", "note"]), json_values, max_size=3),
    json_values,
)
times = st.one_of(
    st.none(), st.datetimes(timezones=st.just(UTC)), st.datetimes(), st.just("2026-01-01T00:00:00Z"), st.just("yesterday")
)
numbers = st.one_of(st.none(), st.integers(-1, 10), st.floats(allow_nan=True), st.just(True))
FIELDS = {
    "type": st.sampled_from(["span", "think", "tool_call", "tool_result", "error", "bogus"]),
    "timestamp": times,
    "duration_ms": numbers,
    "content": texts,
    "agent_id": ids,
    "model": ids,
    "tool_name": ids,
    "tool_call_id": ids,
    "tool_args": json_values,
    "metadata": metadatas,
    "event_id": ids,
    "parent_id": ids,
    "tokens_in": numbers,
    "cost_usd": numbers,
    "retry": numbers,
    "status": st.sampled_from(["ok", "error", "nope"]),
    "redacted": numbers,
    "seq": numbers,
    "error_class": ids,
    "context": json_values,
}
step_fields = st.fixed_dictionaries(
    {"kind": st.sampled_from(["step", "step", "session"]), "session_id": st.sampled_from(["s", "", "s\x00", "x" * 201])},
    optional=FIELDS,
)
REDACTORS = [Redactor(), Redactor(emails=True, phones=True, cards=True, extra_keys=("note", "q"))]


@given(step_fields, st.sampled_from(REDACTORS))
@settings(deadline=None)
def test_a_step_row_is_the_row_of_its_redacted_step_event(fields, redactor):
    """Whatever the fields: a row only where `fast_step` makes the step, and then exactly the row (and
    context) `ingest` stores for that StepEvent once redacted, with the same count of redactions."""
    before = repr(fields)
    made = step_row_of(fields, redactor)
    assert repr(fields) == before  # the reader's dict is left as it was
    step = fast_step(fields)
    if made is None:
        assert step is None or step.event_id is None or {"attachment", "attachments"} & (step.metadata or {}).keys()
        return
    assert step is not None
    clean = redactor.event(step)
    assert (made.row, made.context) == step_row(clean)
    assert made.session_id == clean.session_id
    assert made.redacted == clean.redacted - step.redacted


# ---------------------------------------------------------------- end to end, both databases

T0 = 1_764_000_000_000_000_000
# (an event_id set to null is left to the StepEvent path, whose hash of the step names the run: the unit test above)
OVERRIDES = [
    None,
    '{"retry": 1}',
    '{"tokens_in": -5}',
    '{"timestamp": "2026-01-01T00:00:00Z"}',
    '{"metadata": {"attachments": [{"url": "https://example.com/a.png"}]}}',
    '{"content": "sk-proj-abcdefghijklmnopqrstuvwx9"}',
]
span_specs = st.lists(
    st.tuples(
        st.integers(0, 1),  # trace
        st.sampled_from(["agent", "chat", "tool", "plain"]),
        st.integers(-2, 6),  # parent: -2 none (a root), -1 never exported, else an earlier span of its trace
        st.integers(0, 5_000),
        st.integers(0, 5_000),  # start offset, duration (µs)
        st.sampled_from([None, "conv-1", "conv-2"]),  # session.id
        st.sampled_from([None, *SECRETS]),  # a value that may be a secret
        st.booleans(),  # failed
        st.sampled_from(OVERRIDES),
    ),
    min_size=1,
    max_size=12,
)
_RUN = itertools.count()


def _body(specs, prefix: str, part: range) -> bytes:
    spans = []
    for i in part:
        trace, role, parent, start, duration, session, secret, failed, override = specs[i]
        attrs = {"note": secret} if secret else {}
        if role == "agent":
            attrs |= {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "worker"}
        elif role == "chat":
            attrs |= {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.output.messages": orjson.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "tool_call", "id": f"call-{i % 3}", "name": "search", "arguments": {"q": secret or "x"}}
                            ],
                        }
                    ]
                ).decode(),
            }
        elif role == "tool":
            attrs |= {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.id": f"call-{i % 3}",
                "gen_ai.tool.call.result": secret or "found",
            }
        if session:
            attrs["session.id"] = f"{prefix}-{session}"
        if override:
            attrs["agent_replay.step"] = override
        span = {
            "traceId": _trace(prefix, trace),
            "spanId": f"{i + 1:016x}",
            "name": f"{role} {i}",
            "startTimeUnixNano": str(T0 + start * 1000),
            "endTimeUnixNano": str(T0 + (start + duration) * 1000),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
        }
        if failed:
            span["status"] = {"code": 2, "message": f"boom {secret or ''}"}
        if parent != -2:
            earlier = [j for j in range(i) if specs[j][0] == trace]
            span["parentSpanId"] = f"{earlier[parent % len(earlier)] + 1:016x}" if earlier and parent >= 0 else "f" * 16
        spans.append(span)
    return orjson.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": spans}]}]})


def _trace(prefix: str, trace: int) -> str:
    return f"{prefix}{trace:024x}"


def _receive_all(store, specs, prefix: str, cut: int) -> list:
    """Each batch's report (its counts) or refusal, the two batches received one after the other."""
    out = []
    for part in (range(cut), range(cut, len(specs))):
        if not part:
            continue
        try:
            report = otlp_receiver.receive(store, _body(specs, prefix, part), "application/json")
            out.append(("ok", sorted(report.sessions), report.steps, report.duplicates, report.redacted))
        except (otel.OtlpError, WriteRefused) as exc:
            out.append(("refused", str(exc)))
    return out


def _tables(store, prefix: str) -> dict[str, list]:
    """Every table's rows of this run's sessions and traces, the write's own ids and times left out."""
    out = {}
    with store.engine.connect() as conn:
        for table in metadata.sorted_tables:
            keep = [
                c
                for c in table.c
                if not (c.name == "id" and not isinstance(c.type, String)) and c.name not in ("created_at", "updated_at", "at")
            ]
            rows = [tuple(r) for r in conn.execute(select(*keep))]
            mine = [r for r in rows if any(isinstance(v, str) and v.startswith(prefix) for v in r)]
            out[table.name] = [
                orjson.dumps(r, default=str, option=orjson.OPT_NON_STR_KEYS).decode().replace(prefix, "<run>") for r in mine
            ]
    return {name: sorted(rows) for name, rows in out.items()}


@given(span_specs, st.integers(0, 12))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_receiving_by_rows_stores_what_the_step_events_stored(store, monkeypatch, specs, cut):
    run = next(_RUN)
    new, old = f"{run:06x}a1", f"{run:06x}b2"
    cut = min(cut, len(specs))
    got = _receive_all(store, specs, new, cut)
    with monkeypatch.context() as patched:
        patched.setattr(otlp_receiver, "step_row_of", lambda fields, redactor, place: None)  # every step a StepEvent
        expected = _receive_all(store, specs, old, cut)
    assert orjson.dumps(got).decode().replace(new, old) == orjson.dumps(expected).decode()
    tables = _tables(store, new)
    assert tables == _tables(store, old)
    assert any(tables.values()) or all(r[0] == "refused" for r in expected)
    keys_hold(store)  # replaced steps (a tool's span taking its call's place) too


def test_the_chain_stores_the_same_rows_both_ways(sqlite_store, monkeypatch):
    """The bench's shape: 2,000 bare spans in one parent chain, then 500 more of it in a second batch."""

    def chain(prefix: str, part: range) -> bytes:
        spans = [
            {
                "traceId": _trace(prefix, 0),
                "spanId": f"{i + 1:016x}",
                "name": f"step {i}",
                "startTimeUnixNano": str(T0 + i * 1000),
                "endTimeUnixNano": str(T0 + (5000 - i) * 1000),
                **({"parentSpanId": f"{i:016x}"} if i else {}),
            }
            for i in part
        ]
        return orjson.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})

    for prefix, rows in (("c1c1c1c1", step_row_of), ("d2d2d2d2", lambda fields, redactor, place: None)):
        with monkeypatch.context() as patched:
            patched.setattr(otlp_receiver, "step_row_of", rows)
            for part in (range(2000), range(2000, 2500)):
                assert otlp_receiver.receive(sqlite_store, chain(prefix, part), "application/json").steps == len(part)
    tables = _tables(sqlite_store, "c1c1c1c1")
    assert tables == _tables(sqlite_store, "d2d2d2d2")
    assert len(tables["steps"]) == 2500
    first = sqlite_store.load_steps(_trace("c1c1c1c1", 0))[0]
    assert first.timestamp == datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=T0 // 1000)
