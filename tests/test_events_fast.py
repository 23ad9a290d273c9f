"""The fast path for steps (events.fast_step) agrees with the model: whatever it builds, the
model builds the same (fields, dump, identity); whatever the model refuses, it hands over."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from replay_core.events import _EVENT, EventError, StepEvent, fast_step, parse_event

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_value = st.recursive(
    json_leaf, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3), max_leaves=12
)
weird = (
    st.none()
    | st.booleans()
    | st.integers(-5, 2**40)
    | st.floats()
    | st.text(max_size=210)
    | st.sampled_from(
        [
            "think",
            "tool_call",
            "error",
            "ok",
            "blocked",
            "",
            "a\x00b",
            "x" * 201,
            "2026-09-01T10:00:00Z",
            "2026-09-01 10:00:00.5+02:00",
            "2026-09-01",
            "0001-01-01T00:00:00+01:00",
            "2026-13-01T00:00:00",
            "1700000000",
        ]
    )
    | json_value
    | st.datetimes(timezones=st.none() | st.timezones())
)  # a reader's own parse (OTLP)

FIELDS = [
    "session_id",
    "event_id",
    "seq",
    "parent_id",
    "type",
    "timestamp",
    "duration_ms",
    "agent_id",
    "model",
    "content",
    "tool_name",
    "tool_args",
    "tool_call_id",
    "status",
    "error_class",
    "retry",
    "tokens_in",
    "tokens_out",
    "cost_usd",
    "context",
    "redacted",
    "metadata",
    "schema",
    "kind",
    "unknown_field",
]
base = st.fixed_dictionaries(
    {"kind": st.just("step"), "session_id": st.just("s1"), "type": st.sampled_from(["think", "tool_call"])}
)


@settings(deadline=None)
@given(base=base, extra=st.dictionaries(st.sampled_from(FIELDS), weird, max_size=8))
def test_fast_path_agrees_with_the_model(base, extra):
    obj = {**base, **extra, "kind": "step"}
    fast = fast_step(obj)
    try:
        model = _EVENT.validate_python(obj)
    except Exception:
        model = None
    if fast is None:
        return  # the model decides, as before
    assert model is not None, f"fast path took what the model refuses: {obj!r}"
    assert isinstance(fast, StepEvent)
    assert fast.__dict__ == model.__dict__
    assert fast.model_dump(mode="json") == model.model_dump(mode="json")
    assert fast.identity() == model.identity()


def test_usual_steps_take_the_fast_path():
    obj = {
        "schema": "agent-replay/v1",
        "kind": "step",
        "session_id": "s",
        "event_id": "e1",
        "seq": 3,
        "type": "tool_call",
        "timestamp": "2026-09-01T10:00:00.25+00:00",
        "duration_ms": 12,
        "tool_name": "search",
        "tool_args": {"q": "x"},
        "tokens_in": 10,
        "cost_usd": 0.001,
        "metadata": {"k": [1, 2]},
    }
    assert fast_step(obj) is not None
    assert parse_event(obj).__dict__ == _EVENT.validate_python(obj).__dict__


def test_maps_keyed_by_other_than_text_take_the_fast_path_as_the_model_takes_them():
    """Tool arguments keyed by numbers or null (as YAML or a Python literal gives them): JSON-checked by the fast
    path as by the model, alone and beside a second JSON value; a NUL under such a key still goes to the model."""
    for extra in ({"tool_args": {1: "a", None: [2]}}, {"tool_args": {1: "a"}, "context": [{2.5: True}]}):
        obj = {"kind": "step", "session_id": "s", "type": "tool_call", **extra}
        fast = fast_step(obj)
        assert fast is not None
        assert fast.__dict__ == _EVENT.validate_python(obj).__dict__
    assert fast_step({"kind": "step", "session_id": "s", "type": "tool_call", "tool_args": {1: "a\x00"}}) is None


def test_refusals_keep_the_models_message():
    for bad, field in [({"seq": -1}, "seq"), ({"tool_name": "x" * 201}, "tool_name"), ({"content": "a\x00"}, "content")]:
        try:
            parse_event({"kind": "step", "session_id": "s", "type": "think", **bad})
        except EventError as exc:
            assert exc.reason.startswith(field)
        else:
            raise AssertionError(bad)


ident = st.text(min_size=1, max_size=3) | st.sampled_from(["x" * 200, "x" * 201, "", "a\x00"])
count = st.integers(0, 5) | st.sampled_from([2**31 - 1, 2**31, -1, True])
number = st.floats(0, 1e6) | st.integers(0, 9) | st.sampled_from([-0.5, float("inf"), False])
when = st.sampled_from(
    [
        "2026-09-01T10:00:00Z",
        "2026-09-01 10:00:00.123456+05:30",
        "2026-09-01T10:00:00",
        "2026-09-01",
        "2026-02-30T00:00:00",
        "0001-01-01T00:00:00+01:00",
        "9999-12-31T23:59:59-01:00",
        1700000000,
    ]
)
plausible = st.fixed_dictionaries(
    {},
    optional={
        "schema": st.sampled_from(["agent-replay/v1", "v0"]),
        "event_id": ident,
        "seq": count,
        "parent_id": ident,
        "type": st.sampled_from(["think", "error", "span", "nope"]),
        "timestamp": when,
        "duration_ms": number,
        "agent_id": ident,
        "model": ident,
        "content": st.text(max_size=5) | st.just("a\x00"),
        "tool_name": ident,
        "tool_args": json_value,
        "tool_call_id": ident,
        "status": st.sampled_from(["ok", "error", "blocked", "OK", None]),
        "error_class": ident,
        "retry": count,
        "tokens_in": count | st.none(),
        "tokens_out": count,
        "cost_usd": number | st.none(),
        "context": json_value,
        "redacted": count,
        "metadata": json_value,
    },
)


@settings(deadline=None)
@given(base=base, extra=plausible)
def test_fast_path_agrees_with_the_model_on_plausible_steps(base, extra):
    test_fast_path_agrees_with_the_model.hypothesis.inner_test(base, extra)
