"""Why did this run fail: turning point, causal chain, contradictions (understand/explain.py).

On the demo runs (data/demo, loaded with replay_core.demo), through the CLI and the API, and on
generated failing runs with a planted cause of five kinds, where the planted step must be in the
chain in at least 95 % of the runs (the figure is printed).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from cli_helpers import run_program
from starlette.testclient import TestClient
from typer.testing import CliRunner

from replay_core.cli import app
from replay_core.events import SessionEndEvent, SessionEvent, StepEvent
from replay_core.ingest.pipeline import ingest
from replay_core.server.api import create_app
from replay_core.server.auth import Access
from replay_core.understand.explain import ExplainError, explain, find_contradictions

CODING = "demo-02-coding-format-price-failed"
FLIGHT_OK, FLIGHT_FAILED = "demo-08-flight-bos-sfo-a", "demo-09-flight-bos-sfo-b"


def seqs(result) -> list[int]:
    return [link.seq for link in result.chain]


def in_order(found: list[int], wanted: list[int]) -> bool:
    it = iter(found)
    return all(any(x == w for x in it) for w in wanted)


def test_the_failing_coding_run_names_the_read_the_overwrite_and_the_tests(demo):
    result = explain(demo, CODING)
    chain = seqs(result)
    assert (4 in chain or 7 in chain) and in_order(chain, [7, 9, 18]), chain
    assert result.head.seq in (4, 7)
    assert [(c.seq, c.earlier_seq, c.resource) for c in result.contradictions] == [(7, 4, "pricing/format.py")]
    by_seq = {link.seq: link for link in result.chain}
    assert by_seq[9].kind == "acted_on" and "write_file" in by_seq[9].summary
    assert by_seq[18].kind == "first_failure" and "run_tests" in by_seq[18].summary
    assert result.cause_line().startswith(f"Likely cause: step {result.head.seq} — ")
    # no successful run of the same ticket: no turning point, and the note says why
    assert result.turning_point is None and "No successful run with the same first input" in result.notes[0]


def test_the_failed_flight_search_turns_at_step_6_against_the_successful_one(demo):
    result = explain(demo, FLIGHT_FAILED)
    tp = result.turning_point
    assert (tp.seq, tp.compared_with, tp.compared_seq, tp.kind) == (6, FLIGHT_OK, 6, "different arguments")
    assert tp.same_task and "depart_date" in tp.summary
    assert seqs(result)[0] == 6 and result.chain[-1].seq == 7


def test_only_failed_incomplete_or_unknown_runs_are_explained(demo):
    with pytest.raises(ExplainError, match="succeeded"):
        explain(demo, FLIGHT_OK)
    with pytest.raises(ExplainError, match="no such session"):
        explain(demo, "nope")


def test_replays_are_left_out_of_the_comparison_unless_asked(sqlite_store):
    t0 = datetime(2026, 5, 1, tzinfo=UTC)

    def run(sid, status, arg, **extra):
        return [
            SessionEvent(session_id=sid, workflow="w", started_at=t0, **extra),
            StepEvent(session_id=sid, event_id="1", seq=1, type="input", content="do x"),
            StepEvent(session_id=sid, event_id="2", seq=2, type="tool_call", tool_name="t", tool_args={"a": arg}),
            StepEvent(
                session_id=sid,
                event_id="3",
                seq=3,
                type="tool_result",
                tool_name="t",
                content="ok",
                status="ok" if status == "succeeded" else "error",
            ),
            SessionEndEvent(session_id=sid, status=status),
        ]

    ingest(sqlite_store, run("bad", "failed", 1) + run("bad~replay", "succeeded", 2, replay_of="bad", replay_from=1, replay_to=3))
    assert explain(sqlite_store, "bad").turning_point is None
    tp = explain(sqlite_store, "bad", include_replays=True).turning_point
    assert tp.compared_with == "bad~replay" and tp.seq == 2


def test_a_reread_after_a_write_is_not_a_contradiction():
    steps = [
        StepEvent(session_id="r", seq=1, type="tool_result", tool_name="read_file", tool_args={"path": "a.py"}, content="x = 1"),
        StepEvent(
            session_id="r", seq=2, type="tool_call", tool_name="write_file", tool_args={"path": "a.py", "content": "x = 2"}
        ),
        StepEvent(session_id="r", seq=3, type="tool_result", tool_name="read_file", tool_args={"path": "a.py"}, content="x = 2"),
        StepEvent(session_id="r", seq=4, type="tool_result", tool_name="read_file", tool_args={"path": "a.py"}, content="x = 3"),
    ]
    assert [(c.seq, c.earlier_seq) for c in find_contradictions(steps)] == [(4, 3)]


def test_cli_explain_json_and_text(demo, monkeypatch):
    monkeypatch.setenv("AGENT_REPLAY_DB_URL", demo.url)
    runner = CliRunner()
    res = runner.invoke(app, ["explain", CODING, "--json"])
    assert res.exit_code == 0, res.output
    body = orjson.loads(res.output)
    assert set(body) >= {"session", "turning_point", "chain", "contradictions"}
    assert body["session"] == CODING and {"seq", "summary"} <= set(body["chain"][0])
    assert {"seq", "earlier_seq", "summary"} <= set(body["contradictions"][0])
    res = runner.invoke(app, ["explain", FLIGHT_FAILED])
    assert res.exit_code == 0 and "turning point: step 6 against step 6 of demo-08-flight-bos-sfo-a" in res.output
    # the command as a user runs it (cli_helpers.run_program, in this process): one line, exit 1
    proc = run_program(monkeypatch, ["explain", FLIGHT_OK], {"AGENT_REPLAY_DB_URL": demo.url})
    assert proc.returncode == 1 and "succeeded" in proc.stderr and "Traceback" not in proc.stderr


def test_api_explain_route(demo):
    client = TestClient(create_app(demo, access=Access(api_tokens=("t",))))
    headers = {"authorization": "Bearer t"}
    res = client.get(f"/api/v1/sessions/{FLIGHT_FAILED}/explain", headers=headers)
    assert res.status_code == 200
    assert res.json()["turning_point"]["seq"] == 6
    assert client.get(f"/api/v1/sessions/{FLIGHT_OK}/explain", headers=headers).status_code == 409
    assert client.get("/api/v1/sessions/nope/explain", headers=headers).status_code == 404
    assert client.get(f"/api/v1/sessions/{FLIGHT_FAILED}/explain").status_code == 401


# ---------------------------------------------------------------------------- generated failing runs

KINDS = ("wrong_result", "stale_read", "timeout_retry", "budget", "permission", "wrong_argument")
T0 = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


class Gen:
    """One generated run: noise cycles around a planted cause of one kind."""

    def __init__(self, index: int, kind: str):
        self.rng = random.Random(index)
        self.sid = f"gen-{kind}-{index:03d}"
        self.kind = kind
        self.events: list = [SessionEvent(session_id=self.sid, workflow=f"gen-{kind}", agent_id="gen", started_at=T0)]
        self.seq = 0
        self.planted: list[int] = []

    def step(self, kind: str, **fields) -> int:
        self.seq += 1
        fields.setdefault("duration_ms", float(self.rng.randint(80, 400)))
        self.events.append(
            StepEvent(
                session_id=self.sid,
                event_id=f"e{self.seq}",
                seq=self.seq,
                type=kind,
                timestamp=T0 + timedelta(seconds=self.seq),
                **fields,
            )
        )
        return self.seq

    def think(self, text: str = "", tokens: int | None = None) -> int:
        return self.step(
            "think",
            content=text or f"thinking {self.rng.random():.4f}",
            tokens_in=tokens or self.rng.randint(200, 900),
            tokens_out=self.rng.randint(10, 60),
        )

    def call(
        self,
        tool: str,
        args: dict,
        result: str,
        *,
        status: str = "ok",
        error_class: str | None = None,
        duration: float | None = None,
        retry: int = 0,
    ) -> tuple[int, int]:
        cid = f"c{self.seq + 1}"
        c = self.step("tool_call", tool_name=tool, tool_args=args, tool_call_id=cid, retry=retry)
        extra = {"duration_ms": duration} if duration is not None else {}
        r = self.step(
            "tool_result",
            tool_name=tool,
            tool_args=args,
            tool_call_id=cid,
            content=result,
            status=status,
            error_class=error_class,
            **extra,
        )
        return c, r

    def noise(self, count: int) -> None:
        for _ in range(count):
            self.think()
            tool = self.rng.choice(["list_dir", "get_weather", "lookup_user", "fetch_doc"])
            self.call(tool, {"q": self.rng.randint(0, 10**6)}, f"result {self.rng.random():.6f}")
            if self.rng.random() < 0.25:  # a recovered error: a distractor the chain may name, never the planted cause
                self.call("lookup_user", {"q": "?"}, "no such user", status="error", error_class="NotFound")
                self.call("lookup_user", {"q": self.rng.randint(0, 99)}, "user ok")

    def end(self, error_class: str, text: str) -> None:
        self.step("error", status="error", error_class=error_class, content=text)
        self.events.append(SessionEndEvent(session_id=self.sid, status="failed", error_class=error_class))

    def build(self) -> Gen:
        rng = self.rng
        self.step("input", content=f"task {self.kind} {rng.random()}")
        self.noise(rng.randint(0, 5))
        if self.kind == "wrong_result":  # a read that contradicts the search, then a write on it
            path = f"src/mod_{rng.randint(0, 99)}.py"
            self.think()
            self.call(
                "search_code", {"query": "def run("}, f"{path}:{rng.randint(5, 90)}:def run(job, *, retries=3):\nother.py:3:x"
            )
            self.noise(rng.randint(0, 2))
            self.think()
            _, read = self.call("read_file", {"path": path}, "def run(job):\n    return job()\n")
            self.planted.append(read)
            self.think()
            self.call("write_file", {"path": path, "content": "def run(job, retries): ..."}, "written")
            self.noise(rng.randint(0, 2))
            self.call("run_tests", {"args": ["-q"]}, "2 failed", status="error", error_class="TestFailure")
            self.end("TestFailure", "tests still failing")
        elif self.kind == "stale_read":  # the same record read twice, two different answers
            rid = f"R-{rng.randint(100, 999)}"
            self.call("get_record", {"record_id": rid}, "balance: 100")
            self.noise(rng.randint(0, 3))
            _, second = self.call("get_record", {"record_id": rid}, "balance: 0")
            self.planted.append(second)
            self.think("Balance is zero, cannot pay.")
            self.end("PaymentRefused", "refused to pay: no balance")
        elif self.kind == "timeout_retry":  # a slow API times out, is retried, a model call follows, the budget runs out
            _, timeout = self.call(
                "slow_api",
                {"id": 1},
                "timed out",
                status="error",
                error_class="Timeout",
                duration=float(rng.randint(20000, 60000)),
            )
            self.planted.append(timeout)
            self.call("slow_api", {"id": 1}, "ok", retry=1, duration=float(rng.randint(5000, 9000)))
            self.think(tokens=rng.randint(3000, 6000))
            self.noise(rng.randint(0, 2))
            self.end("BudgetExceeded", "time budget of 60 s exceeded")
        elif self.kind == "budget":  # one model call eats the token budget
            big = self.think(tokens=rng.randint(40000, 90000))
            self.planted.append(big)
            self.noise(rng.randint(0, 3))
            self.end("TokenBudgetExceeded", "token budget of 100000 exceeded")
        elif self.kind == "permission":  # an action blocked by policy, the agent gives up
            self.think()
            _, blocked = self.call(
                "delete_account",
                {"user_id": rng.randint(1, 99)},
                "requires admin approval",
                status="blocked",
                error_class="PermissionDenied",
            )
            self.planted.append(blocked)
            self.noise(rng.randint(0, 2))
            self.step("decision", content="I cannot finish without approval.")
            self.end("Incomplete", "stopped: approval required")
        elif self.kind == "wrong_argument":  # a call with a bad argument, refused
            self.think()
            call, _ = self.call(
                "book_room",
                {"date": "2025-02-30", "nights": 2},
                "invalid value for date: 2025-02-30",
                status="error",
                error_class="ValidationError",
            )
            self.planted.append(call)
            self.noise(rng.randint(0, 2))
            self.step("decision", content="Could not book.")
            self.events.append(SessionEndEvent(session_id=self.sid, status="failed", error_class="ValidationError"))
        return self


@pytest.mark.load
def test_the_planted_cause_is_in_the_chain_of_at_least_95_percent_of_generated_runs(sqlite_store, capsys):
    runs = [Gen(i, KINDS[i % len(KINDS)]).build() for i in range(120)]
    ingest(sqlite_store, [ev for run in runs for ev in run.events])
    found, by_kind = 0, {k: [0, 0] for k in KINDS}
    for run in runs:
        chain = seqs(explain(sqlite_store, run.sid))
        hit = all(p in chain for p in run.planted)
        found += hit
        by_kind[run.kind][0] += hit
        by_kind[run.kind][1] += 1
    rate = found / len(runs)
    with capsys.disabled():
        print(
            f"\nplanted cause in the chain: {found}/{len(runs)} = {rate:.1%}; per kind: "
            + ", ".join(f"{k} {a}/{b}" for k, (a, b) in by_kind.items())
        )
    assert rate >= 0.95, by_kind


def test_a_timeout_retry_budget_run_names_all_three(sqlite_store):
    run = Gen(7, "timeout_retry").build()
    ingest(sqlite_store, run.events)
    kinds = {link.seq: link.kind for link in explain(sqlite_store, run.sid).chain}
    timeout = run.planted[0]
    assert kinds[timeout] == "retry" or kinds[timeout] == "slow"
    assert kinds[timeout + 1] == "retry"  # the retried call
    assert "failure" in kinds.values() and any(k == "budget" for k in kinds.values())


def _patterns_workload(store) -> list[str]:
    """Failing runs of each kind and, per kind, successful runs (some with a failing run's first input,
    some with another), each started a minute after the last: the failing runs' ids."""
    events, failing = [], []
    for n, (i, ok) in enumerate((i, ok) for i in range(30) for ok in (False, True) if not ok or i % 5 < 2):
        run = Gen(i, KINDS[i % len(KINDS)]).build()
        sid = f"{'ok' if ok else 'bad'}-{run.sid}-{i + (7 if ok and i % 5 == 1 else 0)}"
        started = {"started_at": T0 + timedelta(minutes=n)}
        for ev in run.events:
            if ok and isinstance(ev, StepEvent) and ev.type == "error":
                continue
            update = {"session_id": sid} | (started if isinstance(ev, SessionEvent) else {})
            if ok and isinstance(ev, SessionEndEvent):
                update |= {"status": "succeeded", "error_class": None}
            events.append(ev.model_copy(update=update))
        if not ok:
            failing.append(sid)
    ingest(store, events)
    return failing


def test_failure_patterns_explain_each_run_as_explain_does(store):
    from replay_core.understand.explain import Reads, _explained, failure_patterns, pattern_key

    failing = _patterns_workload(store)
    shared = Reads(store)
    groups: dict[tuple, list[str]] = {}
    for sid in failing:
        alone = explain(store, sid)
        assert _explained(shared, store.get_session(sid))[0].to_dict() == alone.to_dict()
        steps = {s.stored_seq: s for s in store.load_steps(sid)}
        groups.setdefault((store.get_session(sid)["workflow"], pattern_key(alone, steps)), []).append(sid)
    patterns, skipped = failure_patterns(store)
    assert skipped == 0
    assert {(p.workflow, p.key): p.runs for p in patterns} == {k: sorted(v) for k, v in groups.items()}
    assert any(p.key[0] == "diverge" for p in patterns) and any(p.key[0] == "chain" for p in patterns)


def test_failure_patterns_read_each_run_once_not_its_peers_again(store):
    from sqlalchemy import event

    from replay_core.understand.explain import failure_patterns

    failing = _patterns_workload(store)
    statements = []
    event.listen(store.engine, "before_cursor_execute", lambda *args: args[2] == "BEGIN" or statements.append(args[2]))
    patterns, _ = failure_patterns(store)
    assert sum(len(p.runs) for p in patterns) == len(failing)
    # each failing run: its steps; each workflow: its successful and recent runs (rows and steps), read once
    assert len(statements) <= len(failing) + store.count_sessions() + 4 * len(KINDS) + 10, len(statements)
