"""`agent-replay stats` (understand.headline, plain Python) gives analytics.headline's numbers."""

from __future__ import annotations

import math

import pytest

from replay_core.storage.store import SessionFilter
from replay_core.understand import analytics, headline


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def test_dimensions_are_the_same():
    assert set(headline.DIMENSIONS) == set(analytics.DIMENSIONS)


@pytest.mark.parametrize("by", [None, *analytics.DIMENSIONS])
def test_stats_equals_the_dashboards_headline(demo, by):
    for flt in (None, SessionFilter(status="failed"), SessionFilter(experiments=True)):
        want = analytics.headline(analytics.load(demo, flt), by).to_dicts()
        got = headline.headline(demo, flt, by)
        assert [list(r) for r in got] == [list(r) for r in want]
        for g, w in zip(got, want, strict=True):
            assert all(_same(g[k], w[k]) for k in w), (by, g, w)


def test_no_runs(store):
    assert headline.headline(store) == analytics.headline(analytics.load(store)).to_dicts()
