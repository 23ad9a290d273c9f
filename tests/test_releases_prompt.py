"""A prompt version (a run's metadata.prompt_version) as a release dimension, on SQLite and PostgreSQL: a new
prompt failing more on one workflow is worse there, and its built-in monitor opens one alert."""

from __future__ import annotations

from datetime import timedelta

from monitor_workload import NOW, runs

from replay_core.monitors import check as monitors
from replay_core.monitors import releases
from replay_core.monitors.releases import NO_EVIDENCE, WORSE


def test_a_new_prompt_version_failing_more_is_worse_and_alerts_once(store):
    runs(store, 120, day=3, fail=0.10, version="1.5.0", seed=1, prompt_version="p1")
    runs(store, 120, day=1, fail=0.40, version="1.5.0", seed=3, prompt_version="p2")  # same agent version, new prompt
    runs(store, 120, day=1, fail=0.10, version="1.5.0", seed=4, workflow="search", prompt_version="p2")
    runs(store, 30, day=1, fail=0.10, version="1.5.0", seed=5)  # no prompt version: in neither side
    assert [v for v, _ in store.first_seen("prompt_version")] == ["p1", "p2"]
    result = releases.compare(store, "p1", "p2", dimension="prompt_version")
    checkout = {m.metric: m for m in result.scopes["checkout"]}
    assert checkout["failure_rate"].verdict == WORSE and checkout["failure_rate"].a.runs == 120
    assert {m.metric: m.verdict for m in result.scopes["search"]}["failure_rate"] == NO_EVIDENCE  # no p1 runs there
    monitor = monitors.find(store, "release prompt_version")  # the built-in monitor, added when first asked for
    sent: list[dict] = []

    def record(url, body, secret_env):
        sent.append(body)
        return [{"ok": True, "status": 200}]

    monitors.set_webhook(store, monitor, "http://hooks.invalid/prompts")
    for hours in (0, 1):
        monitors.check(store, store.get_monitor(monitor["id"]), NOW + timedelta(hours=hours), deliver_to=record)
    (alert,) = store.alerts(monitor["id"])
    assert alert["figure"]["release"]["b"] == "p2" and "prompt_version=" not in alert["figure"]["runs_link"]
    assert [b["event"] for b in sent] == ["opened"] and sent[0]["monitor"] == "release prompt_version"
    assert alert["figure"]["patterns"]  # the failure pattern among the new prompt's failed runs
