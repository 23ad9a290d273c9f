"""The Monitors page and the Start page's alert banner through AppTest: a firing monitor shows its
alert, the runs behind it and its pattern; an editor acknowledges and mutes it, a viewer sees no
button; a release against the one before it, metric by metric."""

from __future__ import annotations

from apptest_helpers import each_empty_store, empty_store, page, texts  # noqa: F401  (fixtures)
from monitor_workload import runs

from replay_core.monitors import check
from replay_core.vocabulary import now_utc

MONITORS, HOME = "pages/monitors.py", "pages/home.py"
RULE = {"metric": "failure_rate", "threshold": 0.2, "filters": {"workflow": "checkout"}}


def firing(store) -> dict:
    now = now_utc()
    runs(store, 60, day=3, fail=0.05, version="1.5.0", seed=21, now=now)
    runs(store, 60, day=1, fail=0.60, version="1.6.0", seed=22, now=now)  # within the last 24 h
    made = check.add(store, "checkout failures", RULE)
    assert check.check(store, made)["event"] == "opened"
    return made


def test_an_editor_sees_the_alert_and_acknowledges_and_mutes_it(each_empty_store):
    made = firing(each_empty_store)
    at = page(MONITORS)
    assert not at.exception
    shown = texts(at)
    assert "checkout failures" in shown and "🔴 firing" in shown
    assert any("at charge\\_card" in m.value for m in at.markdown), "the failure pattern is listed"
    [error] = [e.value for e in at.error]
    assert error.startswith("Alert ") and "above 20" in error
    at.button(key=f"mon_ack_{made['id']}").click().run()
    assert not at.exception
    [alert] = each_empty_store.alerts()
    assert alert["acked_by"] and alert["resolved_at"] is None
    at.button(key=f"mon_mute_{made['id']}").click().run()
    assert each_empty_store.get_monitor(made["id"])["muted_until"] is not None
    assert "muted until" in texts(at)
    releases = [d.value for d in at.dataframe if "verdict" in d.value.columns]
    checkout = releases[1].set_index("metric")
    assert checkout.loc["failure_rate", "verdict"] == "worse" and list(checkout.columns[:2]) == [
        "1.5.0",
        "1.6.0",
    ]  # the newest against the one before


def test_a_viewer_sees_no_buttons_and_start_shows_the_banner(empty_store, monkeypatch):
    made = firing(empty_store)
    monkeypatch.setenv("AGENT_REPLAY_PASSWORD", "look-only")  # a door, so the role below is the signed-in one
    at = page(MONITORS, state={"role": "viewer"})
    assert not at.exception
    assert "checkout failures" in texts(at) and at.error  # the page and its alert, read-only
    assert not [b for b in at.button if b.key and b.key.startswith("mon_")]
    home = page(HOME, state={"role": "viewer"})
    assert not home.exception
    [banner] = [w.value for w in home.warning]
    assert banner.startswith("**checkout failures**:")
    empty_store.resolve_alert(empty_store.open_alert(made["id"])["id"], now_utc())
    assert not page(HOME, state={"role": "viewer"}).warning
