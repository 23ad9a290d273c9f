"""A long run's steps held for the timeline: one fields-set shared by a load (memory), and nothing
that tells one step from another is lost by the sharing."""

from __future__ import annotations

from replay_core.events import StepEvent


def test_a_load_shares_one_fields_set_and_copies_stay_apart(store):
    store.write([StepEvent(session_id="m", seq=i, type="think", content=f"thought {i}") for i in range(1, 4)])
    steps = store.load_steps("m")
    assert len({id(s.__pydantic_fields_set__) for s in steps}) == 1  # one set for the whole load
    changed = steps[0].model_copy(update={"context": [{"role": "user", "content": "hi"}]})
    assert "context" in changed.model_fields_set and "context" not in steps[1].model_fields_set
    assert [s.model_dump(exclude={"timestamp"}) for s in steps] == [
        s.model_dump(exclude={"timestamp"}) for s in store.load_steps("m")
    ]  # the copy changed no loaded step
    assert steps[1].model_dump(exclude_unset=True)["content"] == "thought 2"
