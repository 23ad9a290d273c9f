"""Monitors on generated workloads, on SQLite and PostgreSQL: a real regression fires exactly one alert
naming the runs and the failure pattern behind it; a 3-run blip and noise at the same mean fire
nothing; the alert resolves once; the webhook (a local server) gets the documented body, signed,
retried after a 500; two replicas judge each monitor once per period."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from monitor_workload import NOW, runs

from replay_core.monitors import check as monitors
from replay_core.monitors.rules import RuleError, parse_rule
from replay_core.storage.actor import Actor, PermissionDenied
from replay_core.storage.store import Store

FAILURE_RATE_CHANGE = {
    "metric": "failure_rate",
    "window_hours": 24,
    "change": True,
    "min_runs": 30,
    "filters": {"workflow": "checkout"},
}


def test_rules_are_checked_field_by_field():
    assert parse_rule(FAILURE_RATE_CHANGE).change
    for wrong, says in [
        ({"metric": "vibes", "threshold": 1}, "metric: expected one of"),
        ({"metric": "failure_rate"}, "give a threshold, or change: true"),
        ({"metric": "failure_rate", "threshold": 0.2, "change": True}, "not both"),
        ({"metric": "failure_rate", "threshold": 2}, "a fraction between 0 and 1"),
        ({"metric": "incomplete_runs", "change": True}, "a count is judged against a threshold"),
        ({"metric": "failure_rate", "threshold": float("nan")}, "threshold: expected a finite number"),
        ({"metric": "failure_rate", "threshold": 0.1, "min_runs": 0}, "min_runs"),
        ({"metric": "error_class_runs", "threshold": 3}, "error_class: give it with error_class_runs"),
        ({"metric": "failure_rate", "threshold": 0.1, "filters": {"colour": "red"}}, "filters:"),
    ]:
        with pytest.raises(RuleError, match=says):
            parse_rule(wrong)


def test_a_real_regression_fires_once_with_its_runs_and_pattern_then_resolves_once(store):
    sent: list[tuple[str, dict]] = []
    runs(store, 120, day=2, fail=0.10, version="1.5.0", seed=1)  # the window before: ~10 % failing
    runs(store, 120, day=1, fail=0.40, version="1.6.0", seed=2)  # 1.6.0: ~40 % failing
    runs(store, 120, day=2, fail=0.10, workflow="search", seed=3)  # another workflow, unchanged
    runs(store, 120, day=1, fail=0.10, workflow="search", seed=9)
    made = monitors.add(store, "checkout failures", FAILURE_RATE_CHANGE, webhook_url="http://127.0.0.1:9/hook")
    other = monitors.add(store, "search failures", FAILURE_RATE_CHANGE | {"filters": {"workflow": "search"}})

    def record(url, body, secret_env):
        sent.append((url, body))
        return [{"ok": True, "status": 200}]

    now = NOW - timedelta(minutes=1)
    found = monitors.check(store, made, now, deliver_to=record)
    assert found["verdict"] == "firing" and found["event"] == "opened"
    assert found["current"]["low"] > found["baseline"]["high"]
    assert monitors.check(store, store.get_monitor(other["id"]), now, deliver_to=record)["verdict"] == "ok"
    again = monitors.check(store, made, now + timedelta(minutes=5), deliver_to=record)
    assert again["verdict"] == "firing" and again["event"] is None  # still firing: no second alert
    [alert] = store.alerts()
    assert alert["monitor"] == "checkout failures" and alert["resolved_at"] is None
    figure = alert["figure"]
    assert "status=failed" in figure["runs_link"] and "workflow=checkout" in figure["runs_link"]
    assert any("charge_card" in p for p in figure["patterns"]), figure["patterns"]
    [(url, body)] = sent
    assert body["event"] == "opened" and body["monitor"] == "checkout failures" and body["runs_link"] == figure["runs_link"]
    assert body["patterns"] == figure["patterns"]  # named before delivery, and kept with the alert

    # a day later 1.6.1 is back at 10 %: the rule stops firing, the alert resolves, once
    runs(store, 120, day=0, fail=0.10, version="1.6.1", seed=4)
    later = NOW + timedelta(hours=23)
    assert monitors.check(store, made, later, deliver_to=record)["event"] == "resolved"
    assert monitors.check(store, made, later + timedelta(minutes=5), deliver_to=record)["event"] is None
    [alert] = store.alerts()
    assert alert["resolved_at"] is not None
    assert [b["event"] for _, b in sent] == ["opened", "resolved"]


def test_a_pass_judges_from_the_rollups_and_names_an_alerts_patterns_only_when_shown(store, monkeypatch):
    from replay_core.understand import explain

    runs(store, 120, day=2, fail=0.10, seed=1)
    runs(store, 120, day=1, fail=0.40, version="1.6.0", seed=2)
    made = monitors.add(store, "checkout failures", FAILURE_RATE_CHANGE)

    def no_steps(*args, **kwargs):
        raise AssertionError("a monitors pass read steps")

    with monkeypatch.context() as m:  # the pass beside ingest: run rows and rollups only
        m.setattr(store, "load_steps", no_steps)
        m.setattr(explain, "failure_patterns", no_steps)
        assert "checkout failures" in monitors.check_due(store, NOW - timedelta(minutes=1))
    [stored] = store.alerts(made["id"])
    assert stored["figure"]["patterns"] is None and stored["figure"]["patterns_of"]["status"] == "failed"
    [shown] = monitors.alerts(store, made["id"])
    assert any("charge_card" in p for p in shown["figure"]["patterns"]), shown["figure"]
    assert store.alerts(made["id"])[0]["figure"]["patterns"] == shown["figure"]["patterns"]  # kept: named once
    assert monitors.details(store, store.get_monitor(made["id"]))["open_alert"]["figure"] == shown["figure"]


def test_a_blip_and_noise_fire_nothing(store):
    runs(store, 3, day=1, fail=1.0, seed=5)  # 3 of 3 failed: a blip
    blip = monitors.add(store, "blip", {"metric": "failure_rate", "threshold": 0.2, "min_runs": 20})
    result = monitors.check(store, blip, NOW)
    assert result["verdict"] == "no evidence" and "3 runs in the window, fewer than the 20" in result["sentence"]
    runs(store, 150, day=3, fail=0.15, seed=6, workflow="noise")
    runs(store, 150, day=2, fail=0.15, seed=7, workflow="noise")
    noise = monitors.add(store, "noise", FAILURE_RATE_CHANGE | {"filters": {"workflow": "noise"}})
    assert monitors.check(store, noise, NOW - timedelta(days=1, minutes=1))["verdict"] == "ok"
    assert store.alerts() == []


def test_only_editors_add_monitors(store):
    viewer = Actor("vera", "viewer")
    with pytest.raises(PermissionDenied):
        monitors.add(store, "x", FAILURE_RATE_CHANGE, actor=viewer)
    with pytest.raises(RuleError, match="webhook: expected an http"):
        monitors.add(store, "x", FAILURE_RATE_CHANGE, webhook_url="file:///etc/passwd")


class Receiver:
    """A webhook receiver on 127.0.0.1 that answers 500 to the first `fail` posts, then 200."""

    def __init__(self, fail: int):
        self.posts: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["content-length"]))
                receiver.posts.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(500 if len(receiver.posts) <= fail else 200)
                self.send_header("content-length", "0")
                self.end_headers()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


def test_the_webhook_gets_the_documented_body_signed_and_retried_after_a_500(sqlite_store, monkeypatch):
    from replay_core.monitors.deliver import SIGNATURE_HEADER, deliver

    monkeypatch.setenv("HOOK_SECRET", "s3cret-for-tests")
    receiver = Receiver(fail=1)
    alert = {"event": "opened", "monitor": "m", "text": "[opened] m: …"}
    attempts = deliver(receiver.url, alert, "HOOK_SECRET", backoff_s=0.01)
    assert attempts == [{"ok": False, "status": 500}, {"ok": True, "status": 200}]
    assert len(receiver.posts) == 2
    headers, body = receiver.posts[1]
    assert json.loads(body) == alert
    expected = "sha256=" + hmac.new(b"s3cret-for-tests", body, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER.lower()] == expected
    slack = deliver("http://127.0.0.1:9/hooks.slack.com/services/x", alert, None, tries=1)
    assert slack[0]["ok"] is False  # nothing listens there: said, not raised
    monkeypatch.delenv("HOOK_SECRET")
    assert deliver(receiver.url, alert, "HOOK_SECRET")[0]["error"].startswith("the signing secret's variable HOOK_SECRET")
    receiver.httpd.shutdown()


def test_two_replicas_judge_each_monitor_once_per_period(store):
    runs(store, 40, day=1, fail=0.5, seed=8)
    for i in range(3):
        monitors.add(store, f"m{i}", {"metric": "failure_rate", "threshold": 0.2, "min_runs": 20})
    other = Store(store.url)
    results: list[list[str]] = []
    barrier = threading.Barrier(2)

    def replica(s: Store):
        barrier.wait()
        results.append(monitors.check_due(s, NOW))

    threads = [threading.Thread(target=replica, args=(s,)) for s in (store, other)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results[0] + results[1]) == ["m0", "m1", "m2", "release agent_version"]
    assert len(store.alerts()) == 3
    assert monitors.check_due(store, NOW + timedelta(seconds=10)) == []  # same period: nobody again
    other.close()


def test_the_cli_adds_checks_lists_mutes_and_acknowledges(sqlite_store, monkeypatch):
    from cli_helpers import run_main

    from replay_core.vocabulary import now_utc

    runs(sqlite_store, 40, day=1, fail=0.6, seed=10, now=now_utc())  # the command judges the last 24 h of now
    db = sqlite_store.url

    def cli(*args: str, role: str | None = None):
        return run_main(monkeypatch, [*args, "--db", db], {"AGENT_REPLAY_CLI_ROLE": role})

    made = cli("monitor", "add", "checkout", "--metric", "failure_rate", "--threshold", "0.2", "--workflow", "checkout")
    assert made.returncode == 0, made.stderr
    assert "runs that failed, of the runs that ended (workflow checkout, last 24 h) above 0.2" in made.stdout
    bad = cli("monitor", "add", "x", "--metric", "vibes", "--threshold", "1")
    assert bad.returncode == 1 and "metric: expected one of" in bad.stderr
    checked = cli("monitor", "check", "checkout")
    assert checked.returncode == 0 and "checkout: firing [alert opened]" in checked.stdout
    [row] = json.loads(cli("monitor", "list", "--json").stdout)
    assert row["last_verdict"] == "firing" and row["alert_open"] is True
    assert cli("monitor", "mute", "checkout", "--hours", "2").returncode == 0
    [alert] = json.loads(cli("monitor", "history", "--json").stdout)
    assert cli("monitor", "ack", str(alert["id"])).returncode == 0
    refused = cli("monitor", "mute", "checkout", role="viewer")
    assert refused.returncode == 1 and "viewers may not add, mute or acknowledge monitors" in refused.stderr
    entries = [e["action"] for e in sqlite_store.audit_entries(limit=10)]
    assert entries.count("manage_monitors") >= 3
