"""The analytics page's failure patterns (AppTest): failed demo runs grouped by turning point or
chain head, and a button that lists exactly the runs of one pattern, each linked to its timeline."""

from __future__ import annotations

import re

from apptest_helpers import demo_store, page  # noqa: F401  (fixtures)

from replay_core.understand.explain import failure_patterns

ANALYTICS = "pages/analytics.py"


def plain(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_failure_patterns_are_listed_and_a_button_opens_exactly_their_runs(demo_store):
    patterns, skipped = failure_patterns(demo_store)
    assert skipped == 0
    flight = next(p for p in patterns if p.workflow == "flight-search")
    assert (
        flight.sentence
        == "1 of 1 failures of flight-search diverge from a successful run at search_flights with different arguments"
    )
    assert flight.runs == ["demo-09-flight-bos-sfo-b"]
    coding = next(p for p in patterns if p.workflow == "code-change")
    assert coding.key == ("chain", "search_code", "contradiction", None) and coding.runs == ["demo-02-coding-format-price-failed"]
    failing = {sid for p in patterns for sid in p.runs}
    assert "demo-08-flight-bos-sfo-a" not in failing and len(failing) == sum(len(p.runs) for p in patterns)

    at = page(ANALYTICS, timeout=120)
    assert not at.exception
    assert "Failure patterns" in [s.value for s in at.subheader]
    shown = [plain(m.value) for m in at.markdown]
    assert flight.sentence in shown
    index = patterns.index(flight)
    at.button(key=f"pattern_{index}").click().run()
    assert not at.exception
    assert f"**{flight.sentence}**:" in [plain(m.value) for m in at.markdown]
    links = [el.proto for el in at.get("page_link")]
    assert [link.label for link in links] == flight.runs
    assert [(link.page, link.query_string) for link in links] == [("timeline", f"session={sid}") for sid in flight.runs]
