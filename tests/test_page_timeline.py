"""The timeline page through AppTest: deep links, jumps, gaps, notes, delete, big runs, empty states."""

from __future__ import annotations

import pytest
from apptest_helpers import (  # noqa: F401  (fixtures)
    BIG,
    FAILED_CODING,
    big_store,
    component_data,
    cursor,
    demo_each_store,
    demo_store,
    empty_store,
    jump,
    jumps,
    metric_cards,
    page,
    shown_step,
    texts,
    trigger,
)

from replay_core.events import SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import SessionFilter
from replay_core.understand.structure import build_structure, node_label
from replay_core.understand.timeline import open_timeline
from ui.common import md
from ui.timeline_view import PHONE_CSS, jump_targets, strip_ticks

TIMELINE = "pages/timeline.py"
MULTI_AGENT = "demo-04-multi-agent-competitor-brief"
GAP_RUN = "demo-14-docs-crawl-gap"


def row_buttons(at) -> list[str]:
    return [row["text"] for row in component_data(at, "step_rows")["rows"] if "seq" in row]


def test_deep_link_opens_the_failed_run_at_its_first_error(demo_each_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "18"})
    assert not at.exception
    assert at.title[0].value == md("PAY-412: add currency to format_price")  # shown as text
    summary = at.error[0].value
    assert summary.startswith("Failed after 8 cycles \\(25 steps\\); first error at step 18 \\(run\\_tests TestFailure\\)")
    assert "Outcome\\: Tests still failing after 2 fix attempts" in summary
    assert cursor(at) == 18
    assert shown_step(at)["heading"] == "📦 Tool result · step 18"
    assert shown_step(at)["error"] == "This step failed: TestFailure."
    assert "TypeError: format_price() got an unexpected keyword argument 'rounding'" in shown_step(at)["content"]["box"]
    numbers = metric_cards(at, "run_metrics")
    labels = ["Steps", "Cycles", "Errors (2 in tool calls, 1 of the run)", "Tokens", "Cost", "Duration"]
    assert [card["label"] for card in numbers] == labels
    assert [card["value"] for card in numbers[:3]] == ["25", "8", "3"]
    # The window: the cursor's row is marked, grouped under cycle headings.
    rows = row_buttons(at)
    assert rows[6].startswith("▶ 18  📦 Tool result · run_tests ❗")
    assert len(rows) == 6 + 1 + 7  # six before, the cursor, the rest of the run
    assert "Cycle 5 of 8 · steps 16–18" in [r["text"] for r in component_data(at, "step_rows")["rows"]]


@pytest.mark.parametrize("store", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
def test_the_runs_list_after_the_deep_link(demo_each_store):
    """test_browser.py's smoke test goes from the deep link above to the runs list, in Chromium on SQLite: the list's
    reads on PostgreSQL (on SQLite: test_page_runs.py's first test)."""
    at = page("pages/runs.py")
    assert not at.exception
    assert at.markdown[0].value.startswith("**18 runs**: ⏳ 1 running · ✅ 13 succeeded · ❌ 4 failed")
    assert list(at.dataframe[0].value["id"]) == [r["id"] for r in demo_each_store.list_sessions(limit=25)]


def test_the_agent_saw_its_recorded_context(demo_each_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "5"})
    transcript = component_data(at, "transcript")
    assert transcript["notes"][0].startswith("2 messages as recorded at step 2, then 2 rebuilt from steps 2–4")
    messages = transcript["messages"]
    assert [m["origin"] for m in messages] == [
        "system · as recorded at step 2",
        "user · as recorded at step 2",
        "assistant · rebuilt from step 2",
        "tool · rebuilt from step 4",
    ]


def test_at_step_8_the_agent_saw_the_search_and_the_read(demo_store):
    """The issue's case: what the agent had when it decided at step 8 holds steps 4 and 7, marked rebuilt."""
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "8"})
    assert not at.exception
    messages = component_data(at, "transcript")["messages"]
    said = "\n".join(text for m in messages for _, text in m["parts"])
    assert "pricing/format.py:42:def format_price(amount: Decimal" in said and "pricing/format.py (9 lines)" in said
    origins = [m["origin"] for m in messages]
    assert "tool · rebuilt from step 7" in origins and "system · as recorded at step 2" in origins


def test_jump_buttons_move_the_cursor_and_the_link(demo_each_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "18"})
    jump(at, "next_error")
    assert cursor(at) == 23
    assert at.query_params["step"] == "23"
    jump(at, "next_cycle")
    assert cursor(at) == 24
    jump(at, "first")
    assert cursor(at) == 1
    assert "step" not in at.query_params  # the default is not written to the link
    assert jumps(at)["prev"] is None
    jump(at, "last")
    assert cursor(at) == 25
    assert jumps(at)["next"] is None
    trigger(at, "step_rows", "picked", 20)
    assert cursor(at) == 20
    assert shown_step(at)["heading"] == "🔧 Tool call · step 20"


def test_the_slider_moves_the_cursor_and_the_link(demo_each_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "3"})
    strip = component_data(at, "strip")
    assert (strip["first"], strip["last"], strip["cursor"]) == (1, 25, 3)
    assert {(9, "cause"), (18, "error")} <= {tuple(t) for t in strip["ticks"]}  # ticks clicked in test_browser_timeline.py
    trigger(at, "strip", "picked", 12)  # what strip.js sends when the slider is let go at step 12
    assert cursor(at) == 12 and at.query_params["step"] == "12"
    assert shown_step(at)["heading"].endswith("· step 12")
    trigger(at, "strip", "picked", 1)
    assert cursor(at) == 1 and "step" not in at.query_params


@pytest.mark.parametrize("step, shown", [("abc", 1), ("-4", 1), ("0", 1), ("999", 25), ("9" * 40, 1), ("", 1)])
def test_a_link_with_a_step_out_of_the_run_or_not_a_number_opens_in_the_run(demo_store, step, shown):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": step})
    assert not at.exception
    assert cursor(at) == shown and shown_step(at)["heading"].endswith(f"· step {shown}")
    assert at.query_params.get("step") == (None if shown == 1 else str(shown))  # the link says what is shown


def test_an_event_link_opens_its_step_and_gives_way_to_its_step_number(demo_store):
    named = demo_store.load_steps(FAILED_CODING)[17]
    at = page(TIMELINE, params={"session": FAILED_CODING, "event": named.event_id, "step": "3"})
    assert cursor(at) == named.seq == 18 and shown_step(at)["heading"].endswith("· step 18")
    assert at.query_params["step"] == "18" and "event" not in at.query_params
    assert not at.warning
    at = page(TIMELINE, params={"session": FAILED_CODING, "event": "no-such-step"})
    assert cursor(at) == 1 and "event" not in at.query_params
    said = "This link names a step this run does not hold: event 'no-such-step'. Showing step 1."
    assert [w.value for w in at.warning] == [said]


def test_a_link_followed_in_the_same_session_opens_its_step_and_another_run_its_first(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "18"})
    jump(at, "next")
    assert cursor(at) == 19
    at.query_params["step"] = "7"  # a link to this run's step 7 followed (st.page_link, the address bar)
    at.run()
    assert cursor(at) == 7 and shown_step(at)["heading"].endswith("· step 7")
    at.query_params.clear()
    at.query_params["session"] = "demo-08-flight-bos-sfo-a"  # another run, its link naming no step
    at.run()
    assert cursor(at) == 1 and "step" not in at.query_params


def test_jump_targets_follow_cycles_and_errors(demo_store):
    tl = open_timeline(demo_store, FAILED_CODING)
    at_18 = jump_targets(tl, tl.position_of(18))
    assert at_18 == {
        "first": 1,
        "prev_cycle": 16,
        "prev": 17,
        "next": 19,
        "next_cycle": 19,
        "prev_error": None,
        "next_error": 23,
        "last": 25,
    }
    at_16 = jump_targets(tl, tl.position_of(16))  # a cycle's first step goes back to the previous cycle
    assert (at_16["prev_cycle"], at_16["next_cycle"]) == (11, 19)
    at_1 = jump_targets(tl, 0)  # the input step belongs to no cycle
    assert at_1 == {
        "first": None,
        "prev_cycle": None,
        "prev": None,
        "next": 2,
        "next_cycle": 2,
        "prev_error": None,
        "next_error": 18,
        "last": 25,
    }


def test_the_strip_has_a_tick_for_every_kind_of_place_to_jump_to(demo_each_store):
    from replay_core.understand.explain import explain

    tl = open_timeline(demo_each_store, FAILED_CODING)
    ticks = strip_ticks(
        tl, 3, {7}, hits=[17, 22], explanation=explain(demo_each_store, FAILED_CODING), structure=build_structure(tl.columns)
    )
    by_kind: dict[str, list[int]] = {}
    for t in ticks:
        by_kind.setdefault(t["what"], []).append(t["seq"])
    assert by_kind["error"] == [18, 23, 25] and by_kind["cause"] == [4, 7, 9, 18, 25]
    assert by_kind["note"] == [7] and by_kind["search hit"] == [17, 22] and by_kind["you are here"] == [3]
    assert by_kind["cycle start"] == [c.first_seq for c in tl.cycles]
    flights = open_timeline(demo_each_store, "demo-09-flight-bos-sfo-b")
    ticks = strip_ticks(flights, 1, set(), explanation=explain(demo_each_store, "demo-09-flight-bos-sfo-b"))
    assert {"seq": 6, "what": "turning point", "lane": "what went wrong"} in ticks
    retries = open_timeline(demo_each_store, "demo-03-shipment-status-retries")
    assert [t["seq"] for t in strip_ticks(retries, 1, set()) if t["what"] == "retry"] == [s.seq for s in retries.steps if s.retry]


def test_missing_steps_are_shown_as_missing(demo_each_store):
    at = page(TIMELINE, params={"session": GAP_RUN, "step": "42"})
    assert not at.exception
    assert any("5 steps never arrived \\(steps 40–44 missing\\)" in w.value for w in at.warning)
    assert "Step 42 was never received; showing step 45, the next one that was." in [i.value for i in at.info]
    assert shown_step(at)["heading"].endswith("step 45")
    assert "🕳️ steps 40–44 missing: never received" in [r["text"] for r in component_data(at, "step_rows")["rows"]]


def test_an_incomplete_run_says_so(demo_store):
    running = demo_store.list_sessions(SessionFilter(status="running"))[0]["id"]
    assert demo_store.expire_idle(idle=__import__("datetime").timedelta(0)) == 1
    at = page(TIMELINE, params={"session": running})
    assert at.warning[0].value.startswith("Incomplete\\: stopped sending events after")
    assert any(w.value.startswith("This run stopped sending events at") for w in at.warning)


def test_multi_agent_structure(demo_store):
    at = page(TIMELINE, params={"session": MULTI_AGENT, "step": "9"}, state={"step_tab": "Structure"})
    assert not at.exception
    inside = [line for line in shown_step(at)["lines"] if line.startswith("Inside:")]
    assert inside == [
        "Inside: 🧩 orchestrator: weekly competitor brief (steps 2–26, 24 ste… › "
        "🧩 researcher: collect prices and promotions (steps 4–17, 13…"
    ]
    rows = row_buttons(at)
    assert rows[0].startswith("3  💭 Thought")  # the run's own agent is not repeated
    assert rows[2].startswith("5  [researcher] 💭 Thought")
    tree = [b for b in at.button if b.key and b.key.startswith("node_")]
    assert tree[1].label == (
        "\u2003\u2003**🧩 researcher\\: collect prices and promotions \\(steps 4–17, 13 steps inside\\)** ← you are here"
    )
    tree[0].click().run()  # a node is a way there: its group's first step
    assert at.session_state["step"] == 2


def test_structure_of_retries_and_spans(demo_store):
    tl = open_timeline(demo_store, "demo-03-shipment-status-retries")
    structure = build_structure(tl.columns)
    labels = [node_label(tl.steps, n) for n in structure.walk()]
    assert labels == [
        "🔁 retries of step 6 (http_get) (steps 6–11, 4 steps inside, 1 error)",
        "🔁 retries of step 12 (steps 12–13, 1 step inside)",
    ]
    assert structure.ancestors(tl.position_of(9)) == [tl.position_of(6)]


def test_goal_and_memory_show_when_recorded(demo_store):
    at = page(TIMELINE, params={"session": "demo-10-browser-change-address", "step": "6"}, state={"step_tab": "Goal & memory"})
    assert not at.exception
    assert at.segmented_control(key="step_tab").options == [
        "What the agent saw",
        "Totals so far",
        "Structure",
        "Review",
        "Goal & memory",
    ]
    assert "**Goal**" in [m.value for m in at.markdown]
    jump(at, "first")  # nothing recorded yet at the first step: the first view instead
    assert not at.exception
    assert "Goal & memory" not in at.segmented_control(key="step_tab").options
    assert at.segmented_control(key="step_tab").value == "What the agent saw"
    transcript = component_data(at, "transcript")
    assert transcript["messages"] == [] and transcript["notes"][-1] == "Nothing yet: this is the start of the run."


def test_only_the_open_tab_is_drawn(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "5"})
    transcript = lambda: [el for el in at.get("bidi_component") if el.key == "transcript"]  # noqa: E731
    totals = lambda: [el for el in at.get("bidi_component") if el.key == "totals_metrics"]  # noqa: E731
    assert transcript() and not at.get("form") and not totals()
    at.segmented_control(key="step_tab").set_value("Totals so far").run()
    assert not transcript() and [card["value"] for card in metric_cards(at, "totals_metrics") if card["label"] == "Tool calls"]
    jump(at, "next")  # the view stays open from step to step
    assert shown_step(at)["heading"].endswith("step 6") and not transcript()


def test_everything_recorded_for_a_step_is_drawn_only_when_opened(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "5"})
    recorded = lambda: [j for j in at.json if '"event_id"' in j.value]  # noqa: E731
    assert not recorded()
    at.session_state["step_raw"] = True
    at.run()
    assert recorded() and '"seq": 5' in recorded()[0].value
    jump(at, "next")  # stays open from step to step
    assert '"seq": 6' in recorded()[0].value


def test_review_notes_are_saved_and_shown_on_their_step(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "18"}, state={"step_tab": "Review"})
    at.radio(key="review_target").set_value("Step 18")
    at.radio(key="review_label").set_value("bad")
    at.text_area(key="review_text").set_value("Edited callers before reading the tests: see step 19.")
    at.text_input(key="review_author").set_value("Ana")
    at.button(key="FormSubmitter:review-Save note").click().run()
    notes = demo_store.annotations(FAILED_CODING)
    assert [(n["label"], n["text"], n["author"], n["event_id"]) for n in notes] == [
        ("bad", "Edited callers before reading the tests: see step 19.", "Ana", "e0018")
    ]
    assert shown_step(at)["notes"] == [
        f"👎 Bad — Ana: Edited callers before reading the tests: see step 19. · "
        f"{notes[0]['created_at'].strftime('%Y-%m-%d %H:%M UTC')}"
    ]
    assert row_buttons(at)[6].endswith("📝 — FF.F..FF..F.F..")
    # After a save no verdict is picked (no accidental approval) and the name stays.
    assert at.radio(key="review_label").value is None
    assert at.text_input(key="review_author").value == "Ana"
    at.button(key="FormSubmitter:review-Save note").click().run()
    assert "Pick a verdict." in [e.value for e in at.error]
    assert len(demo_store.annotations(FAILED_CODING)) == 1
    # A run-level note shows under the summary, for everyone opening the run.
    at.radio(key="review_target").set_value("This run")
    at.radio(key="review_label").set_value("needs_attention")
    at.button(key="FormSubmitter:review-Save note").click().run()
    assert demo_store.count_sessions(SessionFilter(review="needs_attention")) == 1
    assert any(m.value.startswith("🚩 Needs attention — Ana") for m in at.markdown)


def test_editors_can_delete_a_run(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING})
    assert at.button(key="delete_run").disabled
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete_run").click().run()
    assert demo_store.get_session(FAILED_CODING) is None
    assert at.title[0].value == "Runs"


def test_viewers_cannot_delete(demo_store, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look")
    at = page(TIMELINE, params={"session": FAILED_CODING}, state={"role": "viewer"})
    assert not at.exception
    assert not [b for b in at.button if b.key == "delete_run"]
    assert at.title[0].value == md("PAY-412: add currency to format_price")  # shown as text


def test_unknown_run_in_the_link(demo_store):
    at = page(TIMELINE, params={"session": "no-such-run"})
    assert not at.exception
    assert at.error[0].value.startswith("There is no run with the id “no\\-such\\-run”")
    assert at.title[0].value == "Timeline"
    assert "Pick a run in the sidebar, or open one from the **Runs** page." in [c.value for c in at.caption]


def test_empty_database(empty_store):
    at = page(TIMELINE)
    assert not at.exception
    assert at.info[0].value.startswith("No runs recorded yet: there is nothing to show on a timeline.")


def test_a_run_without_steps(empty_store):
    ingest(empty_store, [SessionEvent(session_id="bare", name="just opened")])
    at = page(TIMELINE, params={"session": "bare"})
    assert not at.exception
    assert at.info[-1].value.startswith("This run has no steps yet.")


def test_a_one_step_run_has_nowhere_to_jump(empty_store):
    ingest(empty_store, [StepEvent(session_id="one", type="think", content="only thought")])
    at = page(TIMELINE, params={"session": "one"})
    assert not at.exception
    strip = component_data(at, "strip")  # its script draws the buttons alone: no slider over one step (a browser test)
    assert (strip["first"], strip["last"]) == (1, 1) and set(jumps(at).values()) == {None}
    assert shown_step(at)["heading"] == "💭 Thought · step 1"


def test_text_from_a_trace_is_never_markup(empty_store):
    evil = "<img src=x onerror=alert(1)> **bold** [link](http://evil.test) :red[red] $x$"
    ingest(
        empty_store,
        [StepEvent(session_id="evil", type="think", content=evil), StepEvent(session_id="evil", type="decision", content="done")],
    )
    at = page(TIMELINE, params={"session": "evil", "step": "1"})
    assert not [m.value for m in at.markdown if "<img" in m.value or "**bold**" in m.value]  # never as markdown
    assert shown_step(at)["content"] == {"line": evil}  # set as text by the step's view, exactly as recorded
    assert [h.proto.body for h in at.html] == [PHONE_CSS]  # the only HTML is the page's own stylesheet


@pytest.mark.parametrize("step", ["5003", "9999"])
def test_a_ten_thousand_step_run_renders_only_a_window(big_store, step):
    at = page(TIMELINE, params={"session": BIG, "step": step}, timeout=60)
    assert not at.exception
    assert metric_cards(at, "run_metrics")[0]["value"] == "9,996"
    assert len(row_buttons(at)) <= 16
    if step == "5003":
        assert "Step 5003 was never received; showing step 5005, the next one that was." in [i.value for i in at.info]
    else:
        assert shown_step(at)["heading"] == "📦 Tool result · step 9999"
    assert "1 earlier step" not in texts(at)


# ------------------------------------------------------------------ why it failed, navigation, verbatim content


def plain(text: str) -> str:
    import re

    return re.sub(r"\\(.)", r"\1", text)


def test_the_header_says_what_was_asked_how_it_ended_and_why(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING})
    assert not at.exception
    header = next(plain(m.value) for m in at.markdown if m.value.startswith("**Asked:**"))
    assert "Ticket PAY-412" in header and "**Ended:** " in header and "Tests still failing after 2 fix attempts" in header
    assert (
        "**Why:** Likely cause: step 4 — " in header and "step 9 (acted on it)" in header and "step 18 (first failure)" in header
    )
    cause = [b for b in at.button if b.key and b.key.startswith("cause_")]
    assert [b.label for b in cause] == ["Step 4", "Step 7", "Step 9", "Step 18", "Step 25"]
    at.button(key="cause_7").click().run()
    assert at.session_state["step"] == 7 and at.query_params["step"] == "7"


def test_the_header_tells_what_it_did_a_sentence_per_group_of_cycles(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING})
    header = next(plain(m.value) for m in at.markdown if m.value.startswith("**Asked:**"))
    assert (
        "**Did:** Steps 2–4: searched code once. Steps 5–7: read file once. Steps 8–10: wrote file once. "
        "Steps 11–15: edited file twice. Steps 16–18: ran tests once (failed)."
    ) in header
    assert header.index("**Did:**") < header.index("**Ended:**") < header.index("**Why:**")


def test_the_explanation_is_computed_once_per_version_of_the_run(demo_store, monkeypatch):
    import replay_core.understand.explain as explain_module
    import ui.timeline_view as tv

    calls = []
    real = explain_module.explain
    monkeypatch.setattr(tv, "explain", lambda store, sid, **kw: calls.append(sid) or real(store, sid, **kw))
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "3"})
    jump(at, "next")
    trigger(at, "strip", "picked", 12)  # the slider let go at step 12
    assert calls == [FAILED_CODING] and at.session_state["step"] == 12
    ingest(demo_store, [StepEvent(session_id=FAILED_CODING, seq=26, type="think", content="one more thought")])
    jump(at, "prev")  # the run changed: explained again
    assert calls == [FAILED_CODING, FAILED_CODING]


def test_a_succeeded_run_has_no_cause_line(demo_store):
    at = page(TIMELINE, params={"session": "demo-08-flight-bos-sfo-a"})
    header = next(plain(m.value) for m in at.markdown if m.value.startswith("**Asked:**"))
    assert "**Why:**" not in header and not [b for b in at.button if b.key and b.key.startswith("cause_")]


def test_go_to_step_and_search_with_next_and_previous_hit(demo_each_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "1"})
    trigger(at, "strip", "picked", 12)  # what strip.js sends for 12 entered in its go-to box
    assert at.session_state["step"] == 12
    at.text_input(key="run_search").input("run_tests").run()
    assert any(c.value.startswith("4 steps match") for c in at.caption)  # 17 and 22 call run_tests, 18 and 23 answer
    assert {(17, "search hit"), (22, "search hit")} <= {tuple(t) for t in component_data(at, "strip")["ticks"]}
    assert any(
        c.value.startswith("Step 17\\: ") and "**run\\_tests**" in c.value for c in at.caption
    )  # the next hit, matched words marked
    at.button(key="hit_next").click().run()
    assert at.session_state["step"] == 17
    at.button(key="hit_next").click().run()
    assert at.session_state["step"] == 18
    at.button(key="hit_prev").click().run()
    assert at.session_state["step"] == 17
    at.text_input(key="run_search").input("no-such-thing-here").run()
    assert any("No step holds" in c.value for c in at.caption)


def test_rows_show_more_than_45_characters(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "2"})
    row = next(plain(label) for label in row_buttons(at) if label.startswith("▶ 2"))
    assert "Find where format_price is defined and every call site before changing" in row


def test_content_is_shown_exactly_as_recorded(empty_store):
    code = "def f(x) -> int:\n    if x:\n        return 1\n    return 0\n"
    ingest(
        empty_store,
        [
            StepEvent(
                session_id="verb", seq=1, type="tool_call", tool_name="write_file", tool_args={"path": "f.py", "content": code}
            ),
            StepEvent(
                session_id="verb", seq=2, type="tool_result", tool_name="search", content="f.py:1:def f(x) -> int:\n  indented"
            ),
            StepEvent(session_id="verb", seq=3, type="decision", content="a -> b"),
        ],
    )
    at = page(TIMELINE, params={"session": "verb", "step": "1"})
    call = shown_step(at)["call"]
    assert call["tree"] == {"path": "f.py", "content": code} and call["long"] == [["content", code]]  # the file written, verbatim
    at = page(TIMELINE, params={"session": "verb", "step": "2"})
    assert shown_step(at)["content"] == {"box": "f.py:1:def f(x) -> int:\n  indented"}
    at = page(TIMELINE, params={"session": "verb", "step": "3"})
    assert shown_step(at)["content"] == {"line": "a -> b"} and not any("→" in m.value for m in at.markdown)


def test_json_content_is_a_tree_with_the_recorded_text_one_click_away(empty_store):
    payload = '{"rows": 25, "ok": true}'
    huge = "[" + ",".join(["1"] * 12_000) + "]"  # JSON past MAX_TEXT: in a box, cut and said so, not a tree
    ingest(
        empty_store,
        [
            StepEvent(session_id="js", seq=1, type="tool_result", tool_name="q", content=payload),
            StepEvent(session_id="js", seq=2, type="tool_result", tool_name="q", content=huge),
            StepEvent(session_id="js", seq=3, type="tool_call", tool_name="q", tool_args="select 1"),
            StepEvent(session_id="js", seq=4, type="tool_result", tool_name="q", content="{not json"),
        ],
    )
    at = page(TIMELINE, params={"session": "js", "step": "1"})
    assert shown_step(at)["content"] == {"tree": {"rows": 25, "ok": True}, "recorded": payload}
    at = page(TIMELINE, params={"session": "js", "step": "2"})
    box = shown_step(at)["content"]["box"]
    assert box.startswith("[1,1,1") and box.endswith(f"… ({len(huge) - 20_000:,} more characters)")
    at = page(TIMELINE, params={"session": "js", "step": "3"})
    assert shown_step(at)["call"] == {"tool": "q", "text": "select 1"}
    at = page(TIMELINE, params={"session": "js", "step": "4"})
    assert shown_step(at)["content"] == {"line": "{not json"}


def test_a_write_shows_its_diff_against_the_earlier_read(demo_store):
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "9"})
    assert not at.exception
    assert "**What it changes in pricing/format.py**" in [plain(m.value) for m in at.markdown]
    assert any(
        plain(c.value).startswith("Diff against the read at step 7 (derived by this app, not recorded).") for c in at.caption
    )
    diff = next(c for c in at.code if c.value.startswith("--- pricing/format.py (the read at step 7)"))
    assert diff.language == "diff" and '+CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}' in diff.value
    at = page(TIMELINE, params={"session": FAILED_CODING, "step": "12"})
    assert any(plain(c.value).startswith("No earlier read of checkout/summary.py in this run") for c in at.caption)


def test_replay_from_here_and_compare_with_the_turning_point_run(demo_store):
    at = page(TIMELINE, params={"session": "demo-09-flight-bos-sfo-b", "step": "6"})
    links = {el.proto.label: el.proto for el in at.get("page_link")}
    assert links["Replay from here"].query_string == "session=demo-09-flight-bos-sfo-b&step=6"
    compare = links["Compare with demo-08-flight-bos-sfo-a"]
    assert compare.page == "compare" and compare.query_string == "a=demo-09-flight-bos-sfo-b&b=demo-08-flight-bos-sfo-a"


def test_a_cost_priced_from_list_prices_says_estimated(empty_store):
    from framework_captures import post

    post(empty_store, "openai-agents-openinference-ok")
    (run,) = empty_store.list_sessions()
    think = next(s for s in empty_store.load_steps(run["id"]) if s.type == "think")
    at = page(TIMELINE, params={"session": run["id"], "step": str(think.seq)})
    assert not at.exception
    cost = next(card for card in metric_cards(at, "run_metrics") if card["label"] == "Cost")
    assert cost["value"] == "$0.0001 (estimated)"
    assert "$0.0000246 estimated from list prices" in shown_step(at)["facts"]
    assert think.cost_usd == pytest.approx(2.46e-05)  # shown as $0.0000246, not as a zero
