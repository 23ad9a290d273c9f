"""The analytics page: AppTest for numbers, filters, periods and empty states; a real browser
for "clicking a bar opens the runs list filtered to exactly the runs behind it"."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

import pytest
from apptest_helpers import (  # noqa: F401  (fixtures)
    demo_each_store,
    demo_store,
    empty_store,
    filter_values,
    metric_cards,
    page,
    set_filter,
    texts,
)

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.storage.store import SessionFilter

ANALYTICS = "pages/analytics.py"
TABS = {
    "Runs": ["Runs by status", "Success rate"],
    "Speed and cost": ["Step latency by model", "Cost and tokens"],
    "Tools and errors": ["Tool failure rate", "Error classes"],
    "Retries and loops": ["Retries, fallbacks, interventions", "Loops"],
}
CHARTS_PER_TAB = {"Runs": 2, "Speed and cost": 2, "Tools and errors": 2, "Retries and loops": 1}  # no loops in the demo


# AppTest does not hand URL values to widgets bound with bind="query-params" (the filter bar's
# search and dates, the period): those are set as widget state here, and as URLs in the browser tests.


def metrics(at) -> dict[str, str]:
    return {card["label"]: card["value"] for card in metric_cards(at, "headline")}


def test_empty_database_says_how_to_get_runs(empty_store):
    at = page(ANALYTICS)
    assert not at.exception
    assert at.info[0].value.startswith("No runs recorded yet. Load the demo runs with `agent-replay demo`")
    assert not at.get("bidi_component") and not at.get("vega_lite_chart")


def test_demo_dashboard(demo_store):
    at = page(ANALYTICS)
    assert not at.exception
    shown = metrics(at)
    assert shown == {
        "Runs": "18",
        "Success rate": "76.5%",  # 13 of the 17 finished runs
        "Median run time": "22.9 s",
        "Run time, slowest 5%": "14 min 24 s",
        "Cost (known)": "$0.2136",
        "Tokens in": "3,451,087",
        "Runs retrying": "16.7%",  # 3 of 18: shipment, CRM migration, inbox triage
        "Tool failures": "5.0%",
        "Agent took over": "33.3%",  # 1 of the 3 fallback blocks
    }
    # nothing in the 30 days before: no change shown (against nothing, tokens would read "+3,451,087")
    assert all(card["delta"] is None and card["tone"] is None for card in metric_cards(at, "headline"))
    assert "No runs in the period of the same length just before: no changes to show." in [c.value for c in at.caption]
    assert [s.value for s in at.subheader] == [*TABS["Runs"], "Failure patterns"]  # only the open tab's charts are drawn
    for tab, titles in TABS.items():
        opened = page(ANALYTICS, state={"charts": tab})
        assert not opened.exception
        assert [s.value for s in opened.subheader] == [*titles, "Failure patterns"]
        assert len(opened.get("vega_lite_chart")) == len(opened.get("download_button")) == CHARTS_PER_TAB[tab]
    assert "No run repeated a tool call with the same arguments 3+ times. 636 decision cycles (35.3 a run)" in texts(opened)


def test_filters_from_the_shared_filter_bar(demo_each_store):
    failed = page(ANALYTICS, params={"status": "failed"})
    assert not failed.exception
    assert (metrics(failed)["Runs"], metrics(failed)["Success rate"]) == ("4", "0.0%")
    gpt = page(ANALYTICS, params={"model": "gpt-4o"})
    assert metrics(gpt)["Runs"] == str(demo_each_store.count_sessions(SessionFilter(model="gpt-4o"))) == "6"
    assert metrics(gpt)["Agent took over"] == "50.0%"  # the invoice portal run's two blocks
    nothing = page(ANALYTICS, params={"q": "no run says this"})
    assert not nothing.exception
    assert nothing.info[0].value.startswith("No run matches this period and these filters.")


def test_replays_are_not_counted_unless_asked_for(demo_store):
    from replay_core.whatif.replay import replay
    from replay_core.whatif.replay_config import ReplayConfig

    for _ in range(2):
        replay(demo_store, "demo-02-coding-format-price-failed", None, None, ReplayConfig(model="recorded"))
    at = page(ANALYTICS)
    assert (metrics(at)["Runs"], metrics(at)["Success rate"]) == ("18", "76.5%")  # as before the replays
    assert "What-if fan-outs" in [s.value for s in at.subheader]  # still there, apart
    set_filter(at, "replays", True)
    assert metrics(at)["Runs"] == "20"


def test_period_and_its_previous_period(demo_each_store):
    at = page(ANALYTICS, state={"period": "7 days"})
    assert not at.exception
    since = datetime.combine(datetime.now(UTC).date(), time(), UTC) - timedelta(days=6)
    now = demo_each_store.count_sessions(SessionFilter(since=since))
    before = demo_each_store.count_sessions(SessionFilter(since=since - timedelta(days=7), until=since))
    assert 0 < now < 18 and before > 0
    runs = next(card for card in metric_cards(at, "headline") if card["label"] == "Runs")
    assert (runs["value"], runs["delta"]) == (str(now), f"{now - before:+d}")
    assert runs["tone"] == (None if now == before else "good" if now > before else "bad")
    # every change is green when it is good news and red when bad: a longer run time or more failures is bad
    bad_when_up = {
        "Median run time",
        "Run time, slowest 5%",
        "Cost (known)",
        "Tokens in",
        "Runs retrying",
        "Tool failures",
        "Agent took over",
    }
    changed = [card for card in metric_cards(at, "headline") if card["delta"] and card["delta"].strip("+-0. pts$")]
    assert len(changed) >= 3
    for card in changed:
        up = not card["delta"].startswith("-")
        assert card["tone"] == ("bad" if up == (card["label"] in bad_when_up) else "good"), card
    dated = page(ANALYTICS, params={"since": since.date().isoformat()})
    assert metrics(dated)["Runs"] == str(now)
    assert "Period: the dates in the sidebar filter." in [c.value for c in dated.caption]


def test_a_tiny_dataset_shows_helpful_states(empty_store):
    t0 = datetime.now(UTC) - timedelta(minutes=5)
    ingest(
        empty_store,
        [
            SessionEvent(session_id="only", model="gpt-4o", started_at=t0),
            StepEvent(session_id="only", event_id="e1", seq=1, type="think", timestamp=t0, content="hm", duration_ms=120),
        ],
    )
    at = page(ANALYTICS)
    assert not at.exception
    assert metrics(at)["Runs"] == "1" and metrics(at)["Success rate"] == "—"
    assert "No finished runs yet." in texts(at)
    shown = texts(page(ANALYTICS, state={"charts": "Tools and errors"}))
    assert "No tool failed in 0 calls. 🎉" in shown and "No errors in these runs. 🎉" in shown


def test_the_runs_behind_a_point_reach_the_runs_list(demo_each_store):
    """What a click does after the chart's selection: the runs page opens with that filter in its link."""
    day = demo_each_store.get_session("demo-02-coding-format-price-failed")["started_at"].date()
    target = SessionFilter(
        status="failed", since=datetime.combine(day, time(), UTC), until=datetime.combine(day + timedelta(days=1), time(), UTC)
    )
    at = page(ANALYTICS, state={"_analytics_drill": target})
    assert not at.exception
    assert at.title[0].value == "Runs"
    assert (at.query_params["status"], at.query_params["since"], at.query_params["until"]) == ("failed", str(day), str(day))
    assert (filter_values(at)["since"], filter_values(at)["until"]) == (day.isoformat(), day.isoformat())
    expected = demo_each_store.session_ids(target)
    assert "demo-02-coding-format-price-failed" in expected
    assert any(m.value.startswith(f"**{len(expected)} run") for m in at.markdown)


def chart_rows(at, index: int = 0) -> list[dict]:
    """The rows a drawn chart (the page's `index`th) hands the browser, which draws its marks and their labels."""
    import pyarrow as pa

    chart = at.get("vega_lite_chart")[index]
    return pa.ipc.open_stream(chart.proto.datasets[0].data.data).read_all().to_pylist()


def test_a_days_bar_and_rate_count_the_runs_behind_them(demo_each_store):
    """On SQLite and on PostgreSQL: what a mark says (its label, read by the browser tests below on SQLite) is what
    a click on it lists: a day's bar of a status counts that day's runs of that status, and a day's retry rate
    is the share of that day's runs with a retry."""

    def behind(day: str, **narrow) -> list[str]:
        start = datetime.combine(date.fromisoformat(day), time(), UTC)
        return demo_each_store.session_ids(SessionFilter(since=start, until=start + timedelta(days=1), **narrow))

    bars = chart_rows(page(ANALYTICS))
    assert {row["status"] for row in bars} >= {"succeeded", "failed"}
    assert sum(row["runs"] for row in bars) == 18
    for row in bars:
        assert row["runs"] == len(behind(row["day"], status=row["status"])), row
    rates = [row for row in chart_rows(page(ANALYTICS, state={"charts": "Retries and loops"})) if row["has"] == "retry"]
    assert any(row["rate"] for row in rates)
    for row in rates:
        assert row["rate"] == pytest.approx(len(behind(row["day"], has="retry")) / len(behind(row["day"]))), row


def test_fanout_table(empty_store):
    t0 = datetime.now(UTC) - timedelta(hours=1)
    events = [
        SessionEvent(session_id="src", model="gpt-4o", started_at=t0),
        StepEvent(session_id="src", event_id="e1", seq=1, type="think", timestamp=t0, content="plan", tokens_in=10),
        SessionEndEvent(session_id="src", status="succeeded", ended_at=t0 + timedelta(seconds=2)),
        SessionEvent(
            session_id="rep",
            model="gpt-4o-mini",
            started_at=t0,
            replay_of="src",
            replay_from=1,
            replay_to=1,
            replay_config={"model": "gpt-4o-mini"},
        ),
        StepEvent(session_id="rep", event_id="e1", seq=1, type="think", timestamp=t0, content="plan", tokens_in=7),
        SessionEndEvent(session_id="rep", status="succeeded", ended_at=t0 + timedelta(seconds=1)),
    ]
    ingest(empty_store, events)
    at = page(ANALYTICS)
    assert not at.exception
    assert "What-if fan-outs" in [s.value for s in at.subheader]
    table = at.dataframe[0].value
    assert list(table["run"]) == ["the original", "replay"] and list(table["model"]) == ["gpt-4o", "gpt-4o-mini"]
    assert list(table["tokens"]) == ["10", "7"]
    # in words, not raw columns: the original's status, what the replay did, a link to compare the two
    assert table["what happened"].tolist()[0] == "✅ succeeded" and "replay_outcome" not in table.columns
    assert table["compare"].tolist()[1] == "/compare?a=src&b=rep" and table["compare"].isna().tolist()[0]


# ---------------------------------------------------------------------------- in a browser


@pytest.fixture(scope="module")
def browser_page(chromium, demo_app):
    """The app served on the demo runs (never written to here), its database's URL, and a browser tab."""
    base, url = demo_app
    tab = chromium.new_page(viewport={"width": 1600, "height": 3000})
    yield base, url, tab
    tab.close()


@pytest.mark.browser
def test_deep_links_set_the_shared_filters(browser_page):
    from playwright.sync_api import expect

    from replay_core.storage.store import Store

    base, url, tab = browser_page
    store = Store(url)
    since = datetime.combine(datetime.now(UTC).date(), time(), UTC) - timedelta(days=6)
    for query, expected in (
        ("period=7+days", store.count_sessions(SessionFilter(since=since))),
        (f"since={since.date()}&status=failed", store.count_sessions(SessionFilter(since=since, status="failed"))),
    ):
        tab.goto(f"{base}/analytics?{query}")
        tab.wait_for_selector("text=Runs by status", timeout=60_000)
        # waited for, not read once: a rerun still drawing can show the row half redrawn (seen once in CI)
        expect(tab.locator(".st-key-headline .metric .value").first).to_have_text(str(expected), timeout=30_000)
    tab.goto(f"{base}/analytics?q=no+run+says+this")
    tab.wait_for_selector("text=No run matches this period and these filters.", timeout=60_000)


def click_mark(base, tab, label_part: str, *, not_part: str | None = None, charts: str = "Runs") -> str:
    """Open the dashboard on the tab of `charts`, click the first mark whose accessible label holds
    `label_part` (and not `not_part`), wait for the runs list; returns the clicked mark's label."""
    tab.goto(f"{base}/analytics?{urlencode({'charts': charts})}")
    selector = f'[aria-label*="{label_part}"]' + (f':not([aria-label*="{not_part}"])' if not_part else "")
    mark = tab.locator(selector).first
    mark.wait_for(timeout=60_000)
    label = mark.get_attribute("aria-label")
    mark.dispatch_event("click")  # on the mark itself: another series may draw a point at the same place
    tab.wait_for_selector("h1:has-text('Runs')", timeout=30_000)
    tab.wait_for_selector("text=/\\d+ runs?:/", timeout=30_000)
    return label


def listed(tab) -> int:
    summary = next(t for t in tab.locator('[data-testid="stMarkdownContainer"]').all_inner_texts() if re.match(r"\d+ runs?:", t))
    return int(summary.split(" ")[0])


def marked_day(label: str) -> date:
    return datetime.strptime(re.search(r"day \(year-month-date\): ([A-Za-z]+ \d+, \d+)", label).group(1), "%b %d, %Y").date()


@pytest.mark.browser
def test_clicking_a_bar_opens_exactly_the_runs_behind_it(browser_page):
    from replay_core.storage.store import Store

    base, url, tab = browser_page
    store = Store(url)
    label = click_mark(base, tab, "status: failed")
    day = marked_day(label)
    assert f"status=failed&since={day}&until={day}" in tab.url
    start = datetime.combine(day, time(), UTC)
    behind = store.session_ids(SessionFilter(status="failed", since=start, until=start + timedelta(days=1)))
    assert behind and listed(tab) == len(behind) == int(re.search(r"runs: (\d+)", label).group(1))
    click_mark(base, tab, "model: gpt-4o;", charts="Speed and cost")
    assert "model=gpt-4o&" in tab.url and listed(tab) == store.count_sessions(SessionFilter(model="gpt-4o")) == 6


@pytest.mark.browser
def test_clicking_the_retry_rate_lists_the_retrying_runs(browser_page):
    from replay_core.storage.store import Store

    base, url, tab = browser_page
    # a day with retries: which day, and its rate, depend on the hour the demo runs were shifted to
    label = click_mark(
        base, tab, "%;  : retry", not_part="Share of runs: 0%", charts="Retries and loops"
    )  # the y title is in the label
    day = marked_day(label)
    assert f"has=retry&since={day}&until={day}" in tab.url
    start = datetime.combine(day, time(), UTC)
    store = Store(url)
    assert listed(tab) == len(store.session_ids(SessionFilter(has="retry", since=start, until=start + timedelta(days=1))))
    click_mark(base, tab, "tool_name: run_tests", charts="Tools and errors")
    assert "failed_tool=run_tests" in tab.url and listed(tab) == 1


@pytest.mark.browser
def test_cost_by_choice_survives_a_closed_tab(browser_page):
    """A closed tab's widgets are not drawn, so Streamlit drops their state; the model/agent
    choice of the cost chart is kept beside it and is still chosen when its tab opens again."""
    base, url, tab = browser_page
    tab.goto(f"{base}/analytics?{urlencode({'charts': 'Speed and cost'})}")
    tab.wait_for_selector("text=Cost and tokens", timeout=60_000)
    cost_by = tab.get_by_role("radiogroup", name="Cost by")
    cost_by.get_by_role("radio", name="agent", exact=True).click()
    tab.locator('[aria-label*="agent: "]').first.wait_for(timeout=30_000)  # the cost bars are by agent now
    tab.get_by_role("tab", name="Runs").click()
    tab.wait_for_selector("text=Runs by status", timeout=30_000)
    tab.wait_for_selector("text=Cost and tokens", state="detached", timeout=30_000)
    tab.get_by_role("tab", name="Speed and cost").click()
    tab.wait_for_selector("text=Cost and tokens", timeout=30_000)
    tab.locator('[aria-label*="agent: "]').first.wait_for(timeout=30_000)
    assert cost_by.get_by_role("radio", name="agent", exact=True).get_attribute("aria-checked") == "true"
