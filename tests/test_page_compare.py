"""The compare page through the app (AppTest): the first divergence, the aligned columns, a pair's diff, totals."""

from __future__ import annotations

from apptest_helpers import big_events, demo_store, empty_store, page, texts  # noqa: F401  (fixtures)

from replay_core.events import StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.whatif.replay import replay
from replay_core.whatif.replay_config import ReplayConfig
from ui.common import md

PAGE = "pages/compare.py"
A, B = "demo-08-flight-bos-sfo-a", "demo-09-flight-bos-sfo-b"


def test_the_demo_pair_opens_at_step_6(demo_store):
    at = page(PAGE, params={"a": A, "b": B})
    assert not at.exception
    assert at.error[0].value == md(
        "First divergence — different arguments: Step 6: both called search_flights, with different arguments — "
        "depart_date: A “2026-12-17”, B “2025-12-17”; return_date: A “2026-12-21”, B “2025-12-21”."
    )
    totals, aligned = at.dataframe
    assert totals.value["B"].tolist() == ["9", "3", "2431", "249", "$0.0086", "6.3 s", "❌ failed (InvalidArgument)"]
    assert aligned.value[""].tolist().index("▶ first divergence") == 5
    assert aligned.value["match"].tolist() == ["=", "=", "=", "=", "=", "≠", "≠", "≠", "only A", "only A", "≠"]
    pair = at.selectbox(key=f"pair_{A}_{B}")
    assert pair.index == 5
    assert at.text[-1].value == (
        "Value of ['tool_args']['depart_date'] changed from \"2026-12-17\" to \"2025-12-17\".\n"
        "Value of ['tool_args']['return_date'] changed from \"2026-12-21\" to \"2025-12-21\"."
    )
    pair.set_value(8).run()  # the fare-rules call only A made
    assert "B has no step here." in texts(at)


def test_arriving_from_a_replay_compares_it_with_its_source_range(demo_store):
    result = replay(demo_store, A, 5, 9, ReplayConfig(model="recorded"))
    at = page(PAGE, params={"b": result.session})
    assert at.query_params["a"] in (A, [A])  # the source was put in the link
    assert "The source run is cut to the replayed range: steps 5–9." in texts(at)
    assert at.success[0].value == "No divergence: the two runs took the same steps and ended the same way."
    at.toggle(key="whole").set_value(True).run()
    assert at.error[0].value.startswith(md("First divergence — missing step: Step 1 of A"))


def test_long_runs_open_at_the_first_divergence(empty_store):
    a_events = big_events(5000, "long-a")
    b_events = [ev.model_copy(update={"session_id": "long-b"}) for ev in a_events]
    k = next(i for i, ev in enumerate(b_events) if isinstance(ev, StepEvent) and ev.seq == 3002)  # a tool call
    b_events[k] = b_events[k].model_copy(update={"tool_args": {"row": 9999}})
    ingest(empty_store, a_events + b_events)
    at = page(PAGE, params={"a": "long-a", "b": "long-b"})
    assert not at.exception
    assert at.error[0].value.startswith(md("First divergence — different arguments: Step 3002: both called lookup"))
    aligned = at.dataframe[1].value
    assert len(aligned) == 40 and aligned[""].tolist()[5] == "▶ first divergence"
    assert "Opened at the first divergence: rows 2997–3036 of 5000." in [c.value for c in at.caption], [
        c.value for c in at.caption
    ]


def test_trace_text_is_shown_as_text(empty_store):
    from replay_core.events import SessionEvent

    evil = "<script>alert(1)</script> **bold** [link](http://x)"
    ingest(
        empty_store,
        [
            SessionEvent(session_id="x1", name="x1"),
            StepEvent(session_id="x1", seq=1, type="think", content="plain"),
            SessionEvent(session_id="x2", name="x2"),
            StepEvent(session_id="x2", seq=1, type="think", content=evil),
        ],
    )
    at = page(PAGE, params={"a": "x1", "b": "x2"})
    assert at.error[0].value == md("First divergence — different text: Step 1: A thought “plain”; B thought “" + evil + "”.")
    assert evil in [t.value for t in at.text]  # the step itself, as text


def test_a_comparison_is_made_once_per_version_of_both_runs(empty_store, monkeypatch):
    """Picking a pair reruns the page, not the comparison; a new step in either run makes it anew.
    The pair picker lists the rows the table shows (labelling every row of two long runs took seconds)."""
    import replay_core.understand.compare as compare_module

    made = []
    real = compare_module.compare
    monkeypatch.setattr(compare_module, "compare", lambda *a, **k: made.append(a[1:3]) or real(*a, **k))
    a_events = big_events(3000, "cache-a")
    # each its own name: AppTest tells a picker's options apart by their labels
    b_events = [
        ev.model_copy(update={"session_id": "cache-b"} | ({} if isinstance(ev, StepEvent) else {"name": "run B"}))
        for ev in a_events
    ]
    k = next(i for i, ev in enumerate(b_events) if isinstance(ev, StepEvent) and ev.seq == 1502)  # a tool call
    b_events[k] = b_events[k].model_copy(update={"tool_args": {"row": 9999}})
    ingest(empty_store, a_events + b_events)
    at = page(PAGE, params={"a": "cache-a", "b": "cache-b"})
    assert not at.exception and made == [("cache-a", "cache-b")]
    pair = at.selectbox(key="pair_cache-a_cache-b")
    assert pair.options[pair.index].startswith("A 1502 / B 1502") and len(pair.options) == 40
    pair.set_value(pair.value + 1).run()
    assert not at.exception and at.selectbox(key="pair_cache-a_cache-b").options[5 + 1].startswith("A 1503 / B 1503")
    assert len(made) == 1
    ingest(empty_store, [StepEvent(session_id="cache-b", seq=99_999, type="think", content="one more")])
    at.run()
    assert not at.exception and len(made) == 2
    at.run()
    assert len(made) == 2


def test_a_replay_that_answered_reads_answered_not_succeeded_beside_the_failed_original(demo_store):
    from openai_server import OpenAIServer

    coding = "demo-02-coding-format-price-failed"
    with OpenAIServer() as server:
        server.script(server.text("Stopping here."))
        result = replay(demo_store, coding, 8, None, ReplayConfig(model="openai/m", api_base=server.base_url, backoff_s=0.01))
    assert demo_store.get_session(result.session)["status"] == "succeeded"  # the stored status alone would say ✅
    at = page(PAGE, params={"a": coding, "b": result.session})
    assert not at.exception
    totals = at.dataframe[0].value
    outcome = dict(zip(totals[""], totals["B"], strict=True))["outcome"]
    assert "succeeded" not in outcome and "✅" not in outcome
    assert outcome.startswith("💬 answered, diverged from the original at step 8") and "scorer" in outcome
    assert dict(zip(totals[""], totals["A"], strict=True))["outcome"].startswith("❌ failed")
    timeline = page("pages/timeline.py", params={"session": result.session})
    assert not timeline.exception
    ended = next(m.value for m in timeline.markdown if "**Ended:**" in m.value)
    assert "succeeded" not in ended and md("answered, diverged") in ended
