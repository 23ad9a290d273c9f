from datetime import UTC, datetime

import pytest

from replay_core.events import SCHEMA, EventError, SessionEndEvent, SessionEvent, StepEvent, parse_event


def test_step_round_trips_through_json_dict():
    raw = {
        "schema": SCHEMA,
        "kind": "step",
        "session_id": "run-42",
        "event_id": "e2",
        "seq": 2,
        "type": "tool_call",
        "timestamp": "2026-05-01T09:00:02Z",
        "tool_name": "get_order",
        "tool_args": {"order_id": "A-17"},
        "tool_call_id": "c1",
    }
    step = parse_event(raw)
    assert isinstance(step, StepEvent)
    assert step.timestamp == datetime(2026, 5, 1, 9, 0, 2, tzinfo=UTC)
    again = parse_event(step.to_json_dict())
    assert again == step
    assert step.to_json_dict()["kind"] == "step"


def test_unknown_fields_are_kept_in_metadata():
    ev = parse_event(
        {"kind": "step", "session_id": "s", "type": "think", "content": "hm", "temperature": 0.2, "metadata": {"a": 1}}
    )
    assert ev.metadata == {"a": 1, "temperature": 0.2}


def test_timestamps_are_utc():
    ev = parse_event({"kind": "session", "session_id": "s", "started_at": "2026-05-01T11:00:00+02:00"})
    assert ev.started_at == datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
    naive = parse_event({"kind": "session", "session_id": "s", "started_at": "2026-05-01T11:00:00"})
    assert naive.started_at.tzinfo is not None


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"kind": "step", "session_id": "s", "type": "dance"}, "type"),
        ({"kind": "step", "session_id": "s", "type": "think", "seq": -1}, "seq"),
        ({"kind": "step", "session_id": "", "type": "think"}, "session_id"),
        ({"kind": "step", "session_id": "s", "type": "think", "tokens_in": "many"}, "tokens_in"),
        ({"kind": "session_end", "session_id": "s", "status": "exploded"}, "status"),
        ({"kind": "nope", "session_id": "s"}, "kind"),
        ({"schema": "other/v9", "kind": "step", "session_id": "s", "type": "think"}, "schema"),
        ({"kind": "step", "type": "think"}, "session_id"),
    ],
)
def test_bad_records_name_the_field(raw, field):
    with pytest.raises(EventError) as info:
        parse_event(raw)
    assert info.value.reason.startswith(field), info.value.reason


def test_not_an_object():
    with pytest.raises(EventError, match="JSON object"):
        parse_event([1, 2])


def test_identity_is_stable_without_event_id():
    a = StepEvent(session_id="s", type="think", content="same", seq=3)
    b = StepEvent(session_id="s", type="think", content="same", seq=3)
    c = StepEvent(session_id="s", type="think", content="other", seq=3)
    assert a.identity() == b.identity() != c.identity()
    assert StepEvent(session_id="s", type="think", event_id="x").identity() == "x"


def test_kinds():
    assert isinstance(parse_event({"kind": "session", "session_id": "s"}), SessionEvent)
    end = parse_event({"kind": "session_end", "session_id": "s", "status": "failed", "error_class": "Boom"})
    assert isinstance(end, SessionEndEvent) and end.status == "failed"
