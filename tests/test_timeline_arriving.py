"""A run received over OTLP out of order, before its order settles: its steps in order with room left
between their seqs. The timeline, the CLI and the API must not call that room missing steps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from apptest_helpers import empty_store, page  # noqa: F401  (fixture)
from test_otlp_order_rollups import _body, _trace

from replay_core.ingest import otlp_receiver
from replay_core.storage import room
from replay_core.understand.timeline import open_timeline

TIMELINE = "pages/timeline.py"


@pytest.fixture
def arriving(empty_store, monkeypatch):  # noqa: F811
    """Four of ten batches of one trace sent last first (the root with the first sent): each lands before
    the stored steps; past four batches' size the run is left with room for the next, gaps until quiet."""
    monkeypatch.setattr(room, "SETTLE_SMALL", 0)
    spans = _trace(0, [2] * 60)
    children, root = spans[:-1], spans[-1]
    for batch in (children[54:] + [root], children[48:54], children[42:48], children[36:42]):
        otlp_receiver.receive(empty_store, _body(batch), "application/json")
    return empty_store


def test_an_unsettled_run_has_no_missing_steps_and_says_it_is_arriving(arriving):
    tl = open_timeline(arriving, "conv")
    seqs = [s.seq for s in tl.steps]
    assert seqs == sorted(seqs) and seqs[-1] - seqs[0] + 1 > len(seqs)  # room left between the two batches
    assert tl.gaps == [] and tl.session["order_settling"]
    assert "missing" not in tl.summary() and "still arriving" in tl.summary()
    assert arriving.otlp_settle(timedelta(0)) == ["conv"]
    settled = open_timeline(arriving, "conv")
    assert [s.seq for s in settled.steps] == list(range(1, len(seqs) + 1))
    assert not settled.session["order_settling"] and "still arriving" not in settled.summary()


def test_the_timeline_page_says_arriving_not_never_arrived(arriving):
    steps = open_timeline(arriving, "conv").steps
    first_hole = next(a.seq + 1 for a, b in zip(steps, steps[1:], strict=False) if b.seq - a.seq > 1)
    at = page(TIMELINE, params={"session": "conv", "step": str(first_hole)})
    assert not at.exception
    assert not any("never arrived" in w.value for w in at.warning)
    assert any("still arriving out of order" in i.value for i in at.info)
    assert any("is not a step's number while the run's spans arrive" in i.value for i in at.info)


def test_the_sources_named_are_the_otlp_readers():
    from replay_core.ingest.formats.otel.readers import OtlpJsonFormat, OtlpProtoFormat
    from replay_core.understand.timeline import OTLP_SOURCES

    assert {OtlpJsonFormat.name, OtlpProtoFormat.name} == OTLP_SOURCES
