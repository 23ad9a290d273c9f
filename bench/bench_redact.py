"""Redaction cost on realistic step-like dicts without secrets (the common case).

Prints two JSON lines: µs per step for ``Redactor.scrub`` and for ``Redactor.event`` (every
stored field of a StepEvent, identifiers included), next to a baseline measured in
the same run: a plain walk over the same dicts that visits every value and does nothing
(ratio = baseline / value, as for the other lower-is-better benches).

    python bench/bench_redact.py [--steps 100000]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import report  # noqa: E402

from replay_core.ingest.redact import Redactor  # noqa: E402

THOUGHTS = [
    "The user wants a refund for order {order}; look the order up first.",
    "The order was delivered on {date}, which is within the 30-day window, so a refund is allowed.",
    "Search returned 3 results. The second one (docs/refunds.md) describes the policy in detail.",
    "I should call get_order with the order id, then check the payment status before deciding.",
    "The test failed with AssertionError: expected 200, got 404. The route is probably not registered.",
    "Let me read src/app/routes.py around line {line} to see how the handler is wired.",
    "Plan: 1) reproduce the bug, 2) write a failing test, 3) fix the off-by-one in paginate().",
    "The API responded with HTTP 429 (rate limited); wait 2 seconds and retry with back-off.",
    "Summary: the customer is eligible; issue the refund of EUR 42.50 and notify them by e-mail.",
    "Nothing in the logs mentions a timeout, so the failure is more likely a schema mismatch.",
]
RESULTS = [
    '{{"order_id": "{order}", "status": "delivered", "amount": 42.5, "currency": "EUR", "items": 3}}',
    "Found 3 files:\nsrc/app/routes.py\nsrc/app/models.py\ntests/test_routes.py",
    'HTTP/1.1 200 OK\nContent-Type: application/json\n\n{{"ok": true, "id": "{order}"}}',
    "Traceback (most recent call last):\n  File \"src/app/routes.py\", line {line}, in handler\nKeyError: 'user_id'",
]
TOOLS = [
    ("get_order", lambda rnd: {"order_id": f"A-{rnd.randint(1, 9999)}"}),
    ("search", lambda rnd: {"query": "refund policy for damaged items", "limit": 5}),
    ("read_file", lambda rnd: {"path": "src/app/routes.py", "start_line": rnd.randint(1, 400), "end_line": 450}),
    ("run_shell", lambda rnd: {"command": "pytest -q tests/test_routes.py -k paginate", "timeout": 120}),
]


def make_steps(n: int, seed: int = 7) -> list[dict]:
    rnd = random.Random(seed)
    steps = []
    for i in range(n):
        fill = {"order": f"A-{rnd.randint(1, 9999)}", "date": "2026-04-17", "line": rnd.randint(1, 400)}
        kind = rnd.choice(("think", "tool_call", "tool_result", "decision"))
        step: dict = {
            "session_id": f"run-{i // 50}",
            "event_id": f"e{i}",
            "seq": i % 50,
            "type": kind,
            "timestamp": f"2026-05-01T09:{(i // 60) % 60:02d}:{i % 60:02d}Z",
            "model": "gpt-4o-mini",
            "tokens_in": rnd.randint(100, 4000),
            "tokens_out": rnd.randint(5, 400),
            "metadata": {"span_id": f"{rnd.getrandbits(64):016x}", "provider": "openai", "latency_ms": rnd.randint(50, 3000)},
        }
        if kind == "tool_call":
            name, args = rnd.choice(TOOLS)
            step["tool_name"], step["tool_args"] = name, args(rnd)
        elif kind == "tool_result":
            step["content"] = rnd.choice(RESULTS).format(**fill)
        else:
            step["content"] = " ".join(rnd.choice(THOUGHTS).format(**fill) for _ in range(rnd.randint(1, 3)))
        if rnd.random() < 0.1:
            step["context"] = [
                {"role": "system", "content": "You are a support agent. Be brief and cite the policy."},
                {"role": "user", "content": "My parcel arrived broken, can I get my money back?"},
            ]
        steps.append(step)
    return steps


def walk(value):
    """The baseline: visit every value, change nothing."""
    if isinstance(value, dict):
        for item in value.values():
            walk(item)
    elif isinstance(value, list):
        for item in value:
            walk(item)
    return value


def per_step_us(fn, steps: list[dict]) -> float:
    """Best of three passes, in µs per step."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for step in steps:
            fn(step)
        best = min(best, time.perf_counter() - start)
    return best / len(steps) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    steps = make_steps(args.steps)
    redactor = Redactor()
    assert all(redactor.scrub(s)[1] == 0 for s in steps[:1000]), "bench data must be clean"
    value = per_step_us(redactor.scrub, steps)
    baseline = per_step_us(walk, steps)
    report("redact_scrub_clean_step", value, "us/step", "<= 5", baseline, higher_is_better=False)
    # the whole event, identifiers included (what the pipeline calls), against the same walk
    from replay_core.events import StepEvent

    events = [StepEvent.model_validate(s) for s in steps]
    assert all(redactor.event(e) is e for e in events[:1000]), "bench data must be clean"
    value = per_step_us(redactor.event, events)
    report("redact_event_clean_step", value, "us/step", "<= 8", baseline, higher_is_better=False)


if __name__ == "__main__":
    main()
