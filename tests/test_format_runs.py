"""The importers' shared run builder: event ids kept unique in source order."""

from replay_core.ingest.formats.runs import Run


def test_repeated_event_ids_numbered_on_in_order():
    run = Run("s1", "file.json")
    ids = ["a", "a", "a#2", "a", "b", "a#3", "a", "b"]
    steps = [run.step(i, "span", content="x") for i in ids]
    assert [s.event_id for s in steps if s is not None] == ["a", "a#2", "a#2#2", "a#3", "b", "a#3#2", "a#4", "b#2"]


def test_many_repeats_stay_unique():
    run = Run("s1", "file.json")
    got = [run.step("same", "span").event_id for _ in range(3000)]
    assert got[:3] == ["same", "same#2", "same#3"] and got[-1] == "same#3000" and len(set(got)) == 3000
