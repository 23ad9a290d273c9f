#!/usr/bin/env python
"""Write the demo runs shipped with the app into data/demo/ (one native JSONL file per run).

Deterministic: every run draws from its own seeded ``random.Random`` and starts at a fixed
timestamp, ids come from counters or that generator, and nothing reads the wall clock, so
running this twice gives the same bytes (tests/test_demo_data.py holds it).

    python scripts/make_demo.py [--out DIR]      # default: data/demo

Each event is built as a ``replay_core.events`` model and written with ``to_json_dict()``
through ``orjson.dumps(..., option=OPT_SORT_KEYS)``. ``EXPECTED`` records the facts the
tests (and the UI's own tests) check about particular runs.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from replay_core.events import SessionEndEvent, SessionEvent, StepEvent  # noqa: E402

DEFAULT_OUT = ROOT / "data" / "demo"

LLAMA = "ollama/llama3.1:70b"

# USD per million tokens (input, output); a local ollama model costs nothing per token.
PRICES = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "claude-sonnet-4": (3.00, 15.00),
    LLAMA: (0.0, 0.0),
}
# (time to first token in ms, ms per output token)
SPEED = {
    "gpt-4o": (420, 11.0),
    "gpt-4o-mini": (310, 7.0),
    "claude-sonnet-4": (560, 13.0),
    LLAMA: (650, 32.0),
}

# Facts about particular runs, written by hand: the tests check the files against them.
EXPECTED: dict[str, Any] = {
    "sessions": 18,
    "refund": {"file": "01-refund-defective-backpack.jsonl", "approval_seq": 11},
    # The read_file result at seq 7 returns an outdated copy of pricing/format.py (status ok);
    # the agent rewrites the file from it and the tests break three cycles later.
    "coding_failure": {
        "file": "02-coding-format-price-failed.jsonl",
        "culprit_seq": 7,
        "first_error_seq": 18,
        "cycles_between": 3,
        "error_class": "TestFailure",
    },
    "retries": {"file": "03-shipment-status-retries.jsonl", "tool_retries": 2, "rate_limit_seq": 12},
    "multi_agent": {"file": "04-multi-agent-competitor-brief.jsonl", "agents": ["orchestrator", "researcher", "writer"]},
    "fallback_agent": {"file": "05-fallback-invoice-portal.jsonl", "failed_script_seq": 19},
    "fallback_script_only": {"file": "06-fallback-timesheet-script.jsonl"},
    "long_run": {"file": "07-crm-migration-batch7.jsonl", "min_steps": 2000, "max_bytes": 1_000_000},
    # Same task twice: identical steps up to seq divergence_seq - 1, then different search_flights args.
    "divergence": {
        "files": ["08-flight-bos-sfo-a.jsonl", "09-flight-bos-sfo-b.jsonl"],
        "divergence_seq": 6,
        "statuses": ["succeeded", "failed"],
    },
    "browser_state": {"file": "10-browser-change-address.jsonl"},
    "blocked": {"file": "13-travel-denver-offsite.jsonl", "blocked_seq": 7},
    "gap": {"file": "14-docs-crawl-gap.jsonl", "missing_seqs": [40, 41, 42, 43, 44]},
    "running": {"file": "18-oncall-checkout-5xx-running.jsonl"},
}

_ID_CHARS = string.ascii_letters + string.digits


def tok(text: str) -> int:
    """A rough token count (≈ 4 characters a token)."""
    return max(1, (len(text) + 3) // 4)


def as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class Run:
    """Builds one session: a clock, a seq counter, running context size and the events."""

    def __init__(
        self,
        filename: str,
        *,
        name: str,
        agent_id: str,
        model: str,
        workflow: str,
        environment: str,
        agent_version: str,
        tags: list[str],
        started_at: datetime,
        seed: int,
        system: str | None = None,
        metadata: dict[str, Any] | None = None,
    ):
        self.filename = filename
        self.session_id = "demo-" + filename.removesuffix(".jsonl")
        self.model = model
        self.rng = random.Random(seed)
        self.clock = started_at
        self.seq = 0
        self.steps: list[dict[str, Any]] = []
        self.messages: list[dict[str, str]] = []
        self.ctx = 180  # tool schemas and framing
        if system:
            self.messages.append({"role": "system", "content": system})
            self.ctx += tok(system)
        self.session: dict[str, Any] = {
            "session_id": self.session_id,
            "name": name,
            "agent_id": agent_id,
            "model": model,
            "workflow": workflow,
            "environment": environment,
            "agent_version": agent_version,
            "tags": tags,
            "started_at": started_at,
            "source": "demo",
        }
        if metadata:
            self.session["metadata"] = metadata
        self.end_event: dict[str, Any] | None = None
        self.dropped: set[int] = set()

    # -- plumbing -------------------------------------------------------------------------

    def wait(self, ms: int) -> None:
        self.clock += timedelta(milliseconds=int(ms))

    def _remember(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content})
        self.ctx += tok(content) + 6

    def _step(self, type_: str, *, duration_ms: float, gap_ms: int | None = None, **fields: Any) -> dict[str, Any]:
        self.wait(self.rng.randint(15, 160) if gap_ms is None else gap_ms)
        self.seq += 1
        step = {
            "session_id": self.session_id,
            "event_id": f"e{self.seq:04d}",
            "seq": self.seq,
            "type": type_,
            "timestamp": self.clock,
            "duration_ms": int(duration_ms),
        }
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        self.wait(int(duration_ms))
        return step

    def _model_call(self, out_text: str, model: str | None) -> tuple[dict[str, Any], int]:
        model = model or self.model
        tokens_in = self.ctx + self.rng.randint(0, 30)
        tokens_out = tok(out_text) + self.rng.randint(3, 14)
        price_in, price_out = PRICES[model]
        cost = round((tokens_in * price_in + tokens_out * price_out) / 1_000_000, 6)
        ttft, per_token = SPEED[model]
        duration = ttft + tokens_in * 0.015 + tokens_out * per_token * self.rng.uniform(0.85, 1.25)
        return {"model": model, "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": cost}, int(duration)

    def _context_snapshot(self) -> list[dict[str, str]]:
        return [dict(m) for m in self.messages]

    # -- steps ----------------------------------------------------------------------------

    def user(self, text: str, *, wait_ms: int = 0, metadata: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        step = self._step("input", duration_ms=0, gap_ms=wait_ms, content=text, metadata=metadata, **kw)
        self._remember("user", text)
        return step

    def think(
        self,
        text: str,
        *,
        context: bool = False,
        state: dict[str, str] | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        usage, duration = self._model_call(text, model)
        if state is not None:
            metadata = {**(metadata or {}), "state": state}
        recorded = self._context_snapshot() if context else None
        step = self._step("think", duration_ms=duration, content=text, context=recorded, metadata=metadata, **usage, **kw)
        self._remember("assistant", text)
        return step

    def decide(self, text: str, *, model: str | None = None, state: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
        usage, duration = self._model_call(text, model)
        metadata = {"state": state} if state is not None else None
        step = self._step("decision", duration_ms=duration, content=text, metadata=metadata, **usage, **kw)
        self._remember("assistant", text)
        return step

    def call(
        self,
        tool: str,
        args: Any,
        *,
        scripted: bool = False,
        model: str | None = None,
        duration_ms: int | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        call_id = "call_" + "".join(self.rng.choice(_ID_CHARS) for _ in range(12))
        rendered = f"{tool}({json.dumps(args, ensure_ascii=False)})"
        if scripted:
            usage, duration = {}, duration_ms if duration_ms is not None else self.rng.randint(2, 12)
        else:
            usage, duration = self._model_call(rendered, model)
        step = self._step(
            "tool_call", duration_ms=duration, tool_name=tool, tool_args=args, tool_call_id=call_id, **usage, **kw
        )
        self._remember("assistant", rendered)
        return step

    def result(
        self,
        call: dict[str, Any],
        content: Any,
        *,
        latency_ms: int | None = None,
        latency: tuple[int, int] = (90, 900),
        status: str = "ok",
        error_class: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        text = as_text(content)
        duration = latency_ms if latency_ms is not None else self.rng.randint(*latency)
        for key in ("agent_id", "parent_id"):
            if key in call and key not in kw:
                kw[key] = call[key]
        kw.pop("retry", None)
        step = self._step(
            "tool_result",
            duration_ms=duration,
            gap_ms=self.rng.randint(2, 25),
            tool_name=call["tool_name"],
            tool_args=call["tool_args"],
            tool_call_id=call["tool_call_id"],
            content=text,
            status=status,
            error_class=error_class,
            retry=call.get("retry"),
            **kw,
        )
        self._remember("tool", text)
        return step

    def observe(self, text: str, *, state: dict[str, str] | None = None, **kw: Any) -> dict[str, Any]:
        metadata = {"state": state} if state is not None else None
        step = self._step("observation", duration_ms=self.rng.randint(40, 400), content=text, metadata=metadata, **kw)
        self._remember("user", text)
        return step

    def error(self, text: str, error_class: str, *, duration_ms: int | None = None, **kw: Any) -> dict[str, Any]:
        duration = duration_ms if duration_ms is not None else self.rng.randint(80, 600)
        return self._step("error", duration_ms=duration, content=text, status="error", error_class=error_class, **kw)

    def span(self, content: str, *, metadata: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return self._step("span", duration_ms=0, gap_ms=self.rng.randint(5, 40), content=content, metadata=metadata, **kw)

    def close(self, span: dict[str, Any], **metadata: Any) -> None:
        """End a span now: its duration covers its children; ``metadata`` is merged in."""
        span["duration_ms"] = int((self.clock - span["timestamp"]).total_seconds() * 1000)
        if metadata:
            span["metadata"] = {**(span.get("metadata") or {}), **metadata}

    def end(self, status: str, outcome: str | None = None, error_class: str | None = None) -> None:
        self.wait(self.rng.randint(30, 250))
        self.end_event = {
            "session_id": self.session_id,
            "status": status,
            "outcome": outcome,
            "error_class": error_class,
            "ended_at": self.clock,
        }

    def drop(self, seqs: range | list[int]) -> None:
        """Lose these steps on the way (a gap in seq the UI must show, never fill in)."""
        self.dropped.update(seqs)

    # -- output ---------------------------------------------------------------------------

    def events(self) -> list[dict[str, Any]]:
        out = [SessionEvent(**self.session).to_json_dict()]
        out += [StepEvent(**s).to_json_dict() for s in self.steps if s["seq"] not in self.dropped]
        if self.end_event is not None:
            end = {k: v for k, v in self.end_event.items() if v is not None}
            out.append(SessionEndEvent(**end).to_json_dict())
        return out

    def dump(self) -> bytes:
        return b"".join(orjson.dumps(e, option=orjson.OPT_SORT_KEYS) + b"\n" for e in self.events())


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# -- 01: support agent, refund that needs a supervisor's approval ------------------------


def refund_defective_backpack() -> Run:
    run = Run(
        "01-refund-defective-backpack.jsonl",
        name="Refund request: defective backpack",
        agent_id="support-agent",
        model="gpt-4o",
        workflow="customer-support",
        environment="prod",
        agent_version="1.5.0",
        tags=["support", "refund", "approval"],
        started_at=at("2026-11-19T14:02:11"),
        seed=101,
        system=(
            "You are the support assistant of Northwind Outfitters. Be concise and friendly. "
            "Look orders and policies up with your tools before you promise anything. "
            "Refunds above $150 need a support lead's approval (request_approval) before issue_refund."
        ),
    )
    run.user(
        "Hi, I ordered the Trailhead 45L backpack (order NW-238841) two weeks ago and the seam of the left "
        "shoulder strap is already tearing. I'd like a refund, not a replacement - I've already bought a "
        "different bag. Can you help?"
    )
    run.think(
        "The customer wants a refund for a damaged item on order NW-238841. First get the order: item, price, "
        "delivery date, and whether anything was refunded already.",
        context=True,
    )
    c = run.call("get_order", {"order_id": "NW-238841"})
    run.result(
        c,
        {
            "order_id": "NW-238841",
            "status": "delivered",
            "placed_at": "2026-11-03",
            "delivered_at": "2026-11-06",
            "customer_id": "C-55120",
            "items": [{"sku": "TH-45L-SLT", "name": "Trailhead 45L Backpack - Slate", "qty": 1, "unit_price": 189.0}],
            "shipping": 0.0,
            "tax": 11.81,
            "total": 200.81,
            "payment_method": "visa",
            "refunds": [],
        },
        latency=(120, 260),
    )
    run.think(
        "Delivered Nov 6, so 13 days ago. $189.00 item + $11.81 tax, nothing refunded yet. Check the policy for "
        "defective items and its time window."
    )
    c = run.call("search_policy", {"query": "refund for defective item after delivery", "top_k": 2})
    run.result(
        c,
        [
            {
                "id": "POL-RET-004",
                "title": "Defective merchandise",
                "text": "Items with a manufacturing defect reported within 60 days of delivery qualify for a full "
                "refund including tax, or a replacement, at the customer's choice. Photos are requested but not "
                "required for orders under $250. Return shipping is free.",
            },
            {
                "id": "POL-RET-001",
                "title": "Standard returns",
                "text": "Unused items in original packaging may be returned within 30 days of delivery for a refund "
                "of the item price. Return shipping is deducted unless the item is defective.",
            },
        ],
        latency=(300, 700),
    )
    run.think(
        "A strap seam failing after two weeks is a manufacturing defect (POL-RET-004): 13 days < 60, the customer "
        "chose a refund, and the order is under $250 so no photo is needed. Full refund = $200.81 including tax. "
        "That is above the $150 limit, so I must request a support lead's approval first."
    )
    c = run.call(
        "request_approval",
        {
            "action": "issue_refund",
            "order_id": "NW-238841",
            "amount": 200.81,
            "reason": "Strap seam defect on Trailhead 45L, 13 days after delivery (POL-RET-004)",
        },
    )
    run.result(c, {"approval_id": "APR-7731", "status": "pending", "queue": "support-leads"}, latency=(150, 300))
    run.user(
        "Approved. The defect matches two other reports on this production lot of the Trailhead 45L - go ahead "
        "with the full refund and send a return label so QA can look at the bag.",
        wait_ms=214_000,
        metadata={"approval": True, "approval_id": "APR-7731", "approver": "Dana K. (support lead)", "decision": "approved"},
    )
    run.think(
        "APR-7731 approved. Issue the $200.81 refund to the original payment method, then create a prepaid return "
        "label so the warehouse can inspect the bag."
    )
    c = run.call(
        "issue_refund",
        {
            "order_id": "NW-238841",
            "amount": 200.81,
            "reason_code": "DEFECTIVE",
            "approval_id": "APR-7731",
            "destination": "original_payment_method",
        },
    )
    run.result(
        c,
        {"refund_id": "RF-90412", "status": "processed", "amount": 200.81, "currency": "USD", "expected_settlement": "3-5 business days"},
        latency=(600, 1400),
    )
    c = run.call("create_return_label", {"order_id": "NW-238841", "sku": "TH-45L-SLT", "carrier": "UPS", "reason": "defect_inspection"})
    run.result(
        c,
        {"label_id": "RL-55871", "carrier": "UPS", "sent_to_customer": True, "drop_off_by": "2026-12-03"},
        latency=(400, 900),
    )
    run.decide(
        "I'm sorry about the strap - that's a manufacturing defect and you're fully covered. I've issued a refund "
        "of $200.81 (reference RF-90412) to your original payment method; it should show up within 3-5 business "
        "days. I've also emailed you a free UPS return label (RL-55871): please drop the bag off by December 3 so "
        "our quality team can inspect it. You don't need to wait for the return for the refund to arrive."
    )
    run.end("succeeded", "Refund RF-90412 of $200.81 issued for defective backpack (order NW-238841), approved by support lead")
    return run


# -- 02: coding agent that fails because of a stale read three cycles earlier -------------

_STALE_FORMAT_PY = '''"""Price formatting helpers."""

import locale as _locale


def format_price(amount, locale="en_US"):
    """Format a float amount as a dollar string for the given locale."""
    _locale.setlocale(_locale.LC_ALL, locale + ".UTF-8")
    return "$" + _locale.format_string("%.2f", amount, grouping=True)
'''

_REWRITTEN_FORMAT_PY = '''"""Price formatting helpers."""

import locale as _locale

CURRENCY_SYMBOLS = {"USD": "$", "EUR": "\u20ac", "GBP": "\u00a3", "JPY": "\u00a5"}


def format_price(amount, locale="en_US", currency="USD"):
    """Format an amount with the currency's symbol for the given locale."""
    _locale.setlocale(_locale.LC_ALL, locale + ".UTF-8")
    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")
    return symbol + _locale.format_string("%.2f", amount, grouping=True)
'''


def coding_format_price_failed() -> Run:
    run = Run(
        "02-coding-format-price-failed.jsonl",
        name="PAY-412: add currency to format_price",
        agent_id="coding-agent",
        model="claude-sonnet-4",
        workflow="code-change",
        environment="dev",
        agent_version="1.4.0",
        tags=["coding", "pricing", "PAY-412"],
        started_at=at("2026-11-21T10:14:03"),
        seed=202,
        system=(
            "You are a coding agent working in the shop-backend repository. Use search_code, read_file, "
            "write_file and edit_file to change code, then run_tests. Keep changes minimal. "
            "You may attempt at most 2 fixes after a failing test run."
        ),
    )
    run.user(
        "Ticket PAY-412: `format_price` should accept a `currency` argument (ISO 4217 code, default \"USD\") and "
        "render the right symbol, e.g. \u20ac for EUR and \u00a3 for GBP. Update the callers in checkout and "
        "invoices to pass the order's currency. The test suite must pass."
    )
    run.think(
        "Find where format_price is defined and every call site before changing its signature.",
        context=True,
    )
    c = run.call("search_code", {"query": "format_price(", "path": "."})
    run.result(
        c,
        "pricing/format.py:42:def format_price(amount: Decimal, *, locale: str = \"en_US\", rounding: str = ROUND_HALF_EVEN) -> str:\n"
        "checkout/summary.py:88:        total_label = format_price(order.total, locale=user.locale, rounding=ROUND_HALF_UP)\n"
        "invoices/render.py:131:    cells.append(format_price(line.amount, locale=invoice.locale, rounding=ROUND_DOWN))\n"
        "invoices/render.py:164:    footer = format_price(invoice.total, locale=invoice.locale)\n"
        "tests/pricing/test_format.py:12:    assert format_price(Decimal(\"1234.5\")) == \"$1,234.50\"\n"
        "tests/pricing/test_format.py:19:    assert format_price(Decimal(\"0.125\"), rounding=ROUND_HALF_UP) == \"$0.13\"\n"
        "6 matches in 4 files",
        latency=(180, 420),
    )
    run.think("The definition is in pricing/format.py. Read it to see how the string is built before adding the symbol.")
    c = run.call("read_file", {"path": "pricing/format.py"})
    # seq 7: the culprit. The tool answered from an outdated copy of the file (status ok).
    run.result(c, "pricing/format.py (9 lines)\n" + _STALE_FORMAT_PY, latency=(40, 120))
    run.think(
        "format_price is tiny: a float amount, a locale, and a hard-coded '$'. I'll add `currency: str = \"USD\"`, "
        "map codes to symbols with a small dict, and rewrite the whole file since it's only a few lines."
    )
    c = run.call("write_file", {"path": "pricing/format.py", "content": _REWRITTEN_FORMAT_PY})
    run.result(c, "Wrote pricing/format.py (12 lines, 436 bytes).", latency=(20, 60))
    run.think("Now pass the order's currency at the call sites in checkout/summary.py and invoices/render.py.")
    c1 = run.call(
        "edit_file",
        {
            "path": "checkout/summary.py",
            "old": "format_price(order.total, locale=user.locale, rounding=ROUND_HALF_UP)",
            "new": "format_price(order.total, locale=user.locale, rounding=ROUND_HALF_UP, currency=order.currency)",
        },
    )
    c2 = run.call(
        "edit_file",
        {
            "path": "invoices/render.py",
            "old": "format_price(line.amount, locale=invoice.locale, rounding=ROUND_DOWN)",
            "new": "format_price(line.amount, locale=invoice.locale, rounding=ROUND_DOWN, currency=invoice.currency)",
        },
    )
    run.result(c1, "Replaced 1 occurrence in checkout/summary.py.", latency=(20, 60))
    run.result(c2, "Replaced 1 occurrence in invoices/render.py.", latency=(20, 60))
    run.think("Call sites updated. Run the pricing, checkout and invoice tests.")
    c = run.call("run_tests", {"args": ["tests/pricing", "tests/checkout", "tests/invoices", "-q"]})
    # seq 18: the first error.
    run.result(
        c,
        "FF.F..FF..F.F..\n"
        "=================================== FAILURES ===================================\n"
        "____________________________ test_rounding_half_up _____________________________\n"
        "    def test_rounding_half_up():\n"
        ">       assert format_price(Decimal(\"0.125\"), rounding=ROUND_HALF_UP) == \"$0.13\"\n"
        "E       TypeError: format_price() got an unexpected keyword argument 'rounding'\n"
        "tests/pricing/test_format.py:19: TypeError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/pricing/test_format.py::test_rounding_half_up - TypeError: format_price() got an unexpected keyword argument 'rounding'\n"
        "FAILED tests/checkout/test_summary.py::test_total_label - TypeError: format_price() got an unexpected keyword argument 'rounding'\n"
        "FAILED tests/checkout/test_summary.py::test_total_label_eur - TypeError: format_price() got an unexpected keyword argument 'rounding'\n"
        "FAILED tests/invoices/test_render.py::test_line_amounts_round_down - TypeError: format_price() got an unexpected keyword argument 'rounding'\n"
        "FAILED tests/invoices/test_render.py::test_footer_total - AssertionError: assert '$1,234.50' == '1\u00a0234,50\u00a0$'\n"
        "FAILED tests/pricing/test_format.py::test_decimal_exact - AssertionError: assert '$0.30' == '$0.30000'\n"
        "8 failed, 8 passed in 1.84s",
        status="error",
        error_class="TestFailure",
        latency=(1800, 2600),
    )
    run.think(
        "Callers and tests pass `rounding=`, which format_price doesn't accept - they must have been written "
        "against a newer signature. I'll add a `rounding` parameter and quantize the amount with Decimal."
    )
    c = run.call(
        "edit_file",
        {
            "path": "pricing/format.py",
            "old": 'def format_price(amount, locale="en_US", currency="USD"):',
            "new": 'def format_price(amount, locale="en_US", currency="USD", rounding="ROUND_HALF_EVEN"):\n'
            '    amount = Decimal(str(amount)).quantize(Decimal("0.01"), rounding=rounding)',
        },
    )
    run.result(c, "Replaced 1 occurrence in pricing/format.py.", latency=(20, 60))
    c = run.call("run_tests", {"args": ["tests/pricing", "tests/checkout", "tests/invoices", "-q"]})
    run.result(
        c,
        "FFFF.FFF.FFF.F..\n"
        "=================================== FAILURES ===================================\n"
        "___________________________ test_default_formatting ____________________________\n"
        ">       amount = Decimal(str(amount)).quantize(Decimal(\"0.01\"), rounding=rounding)\n"
        "E       NameError: name 'Decimal' is not defined\n"
        "pricing/format.py:10: NameError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/pricing/test_format.py::test_default_formatting - NameError: name 'Decimal' is not defined\n"
        "FAILED tests/pricing/test_format.py::test_keyword_only_locale - Failed: DID NOT RAISE <class 'TypeError'>\n"
        "FAILED tests/checkout/test_summary.py::test_total_label - NameError: name 'Decimal' is not defined\n"
        "FAILED tests/invoices/test_render.py::test_line_amounts_round_down - NameError: name 'Decimal' is not defined\n"
        "12 failed, 4 passed in 1.91s",
        status="error",
        error_class="TestFailure",
        latency=(1800, 2600),
    )
    run.think(
        "Now Decimal is undefined, and test_keyword_only_locale expects `locale` to be keyword-only - the tests "
        "describe a different implementation from the one I read. That was my second fix attempt; stop here."
    )
    run.error(
        "Stopping: test suite still failing after 2 fix attempts (12 failed, 4 passed). Changes are left "
        "uncommitted in the working tree for review.",
        "TestFailure",
    )
    run.end("failed", "Tests still failing after 2 fix attempts (12 failed, 4 passed); changes not committed", "TestFailure")
    return run


# -- 03: flaky HTTP tool (two timeouts, then success) and a model rate limit -------------


def shipment_status_retries() -> Run:
    run = Run(
        "03-shipment-status-retries.jsonl",
        name="Shipment status for PO-77120",
        agent_id="logistics-assistant",
        model="gpt-4o-mini",
        workflow="shipment-status",
        environment="staging",
        agent_version="1.5.0",
        tags=["logistics", "retries"],
        started_at=at("2026-11-23T13:05:42"),
        seed=303,
        system="You answer shipment questions for the customer service team. Use the TMS and carrier APIs; give status, last scan and ETA.",
    )
    run.user(
        "Brightwater Foods is asking where purchase order PO-77120 is. It shipped with Freightline last Thursday. "
        "Can you give me the current status and the ETA to their Dayton DC?"
    )
    run.think("Look PO-77120 up in the TMS to get the carrier's PRO number, then ask the carrier.")
    c = run.call("tms_lookup", {"po_number": "PO-77120"})
    run.result(
        c,
        {
            "po_number": "PO-77120",
            "carrier": "Freightline",
            "pro_number": "FL-558213",
            "pallets": 6,
            "ship_date": "2026-11-19",
            "origin": "Allentown, PA",
            "destination": "Dayton, OH (Brightwater DC 3)",
            "promised_delivery": "2026-11-24",
        },
        latency=(200, 500),
    )
    run.think("Query Freightline's tracking API for PRO FL-558213.")
    args = {"url": "https://api.freightline.example/v2/shipments/FL-558213/status", "timeout_s": 10}
    first = run.call("http_get", args)
    run.result(
        first,
        "ReadTimeout: no response from api.freightline.example within 10.0 s",
        status="error",
        error_class="TimeoutError",
        latency_ms=10_000,
    )
    # The runtime retries the same call with backoff: no new model call, so no tokens.
    run.wait(2_000)
    c = run.call("http_get", args, scripted=True, retry=1, parent_id=first["event_id"])
    run.result(
        c,
        "ReadTimeout: no response from api.freightline.example within 10.0 s",
        status="error",
        error_class="TimeoutError",
        latency_ms=10_000,
    )
    run.wait(4_000)
    c = run.call("http_get", args, scripted=True, retry=2, parent_id=first["event_id"])
    run.result(
        c,
        {
            "pro_number": "FL-558213",
            "status": "IN_TRANSIT",
            "last_scan": {"location": "Columbus, OH terminal", "time": "2026-11-23T05:42:00Z", "event": "Departed terminal"},
            "eta": "2026-11-24T16:00:00Z",
            "appointment": {"date": "2026-11-24", "window": "14:00-18:00 ET", "confirmed": True},
            "pieces": 6,
        },
        latency=(700, 1500),
    )
    # seq 12: the model provider throttles the next call; the runtime waits and retries it.
    err = run.error(
        "RateLimitError: Rate limit reached for gpt-4o-mini on tokens per min (TPM): Limit 200000, Used 198733, "
        "Requested 2391. Please try again in 337ms.",
        "RateLimitError",
        model="gpt-4o-mini",
        duration_ms=240,
    )
    run.wait(400)
    run.think(
        "Freightline shows the 6 pallets departed the Columbus, OH terminal at 05:42 UTC today, heading to Dayton. "
        "ETA Nov 24 inside the confirmed 14:00-18:00 appointment, which matches the promised date.",
        retry=1,
        parent_id=err["event_id"],
    )
    run.decide(
        "PO-77120 (Freightline PRO FL-558213, 6 pallets) left the Columbus, OH terminal at 05:42 UTC today and is "
        "in transit to Brightwater DC 3 in Dayton. ETA: Monday Nov 24, within the confirmed 14:00-18:00 ET "
        "delivery appointment - on time against the promised date."
    )
    run.end("succeeded", "Status and ETA for PO-77120 given after 2 carrier API timeouts and 1 model rate limit")
    return run


# -- 04: multi-agent run: orchestrator, researcher and writer spans ----------------------


def multi_agent_competitor_brief() -> Run:
    run = Run(
        "04-multi-agent-competitor-brief.jsonl",
        name="Weekly competitor brief: home EV chargers",
        agent_id="orchestrator",
        model="claude-sonnet-4",
        workflow="market-brief",
        environment="prod",
        agent_version="1.5.0",
        tags=["multi-agent", "research", "weekly"],
        started_at=at("2026-11-24T07:30:00"),
        seed=404,
        system="You coordinate a researcher and a writer to produce short market briefs. Check the draft against the findings before publishing.",
    )
    run.user(
        "Prepare this week's one-page competitor brief on US home EV charger pricing: VoltNest, ChargeWell, AmpHaus "
        "and Circuit EV. Focus on list price changes and promotions since last Monday (Nov 17)."
    )
    orch = run.span("orchestrator: weekly competitor brief", agent_id="orchestrator")
    oid = orch["event_id"]
    run.think(
        "Split the work: the researcher collects current prices and promotions for the four brands, with sources, "
        "and diffs them against last week's snapshot; the writer turns the findings into a one-page brief. "
        "I review the draft before publishing.",
        agent_id="orchestrator",
        parent_id=oid,
    )
    res = run.span("researcher: collect prices and promotions", agent_id="researcher", parent_id=oid)
    rid = res["event_id"]
    r = {"agent_id": "researcher", "parent_id": rid}
    run.think(
        "Search the current price of each brand's 40-48A home charger, then compare with the Nov 17 snapshot.",
        model="gpt-4o-mini",
        **r,
    )
    queries = [
        ("VoltNest Home 48A charger price", [{"title": "VoltNest Home 48A Level 2 Charger", "url": "https://voltnest.example/home-48a", "snippet": "Now $599 (was $649). 48A, 25 ft cable, Wi-Fi scheduling."}]),
        ("ChargeWell Pulse 48 Black Friday", [{"title": "ChargeWell Black Friday: 20% off Pulse 48", "url": "https://chargewell.example/deals", "snippet": "Pulse 48 $549, 20% off at checkout through Dec 1 ($439.20)."}]),
        ("AmpHaus Level 2 40A price", [{"title": "AmpHaus L2 40A", "url": "https://amphaus.example/l2-40a", "snippet": "$399. Free shipping. Hardwired or NEMA 14-50."}]),
        ("Circuit EV Wall Unit price installation promo", [{"title": "Circuit EV Wall Unit", "url": "https://circuitev.example/wall-unit", "snippet": "$475. Professional installation from $299. Free-install offer ended Nov 23."}]),
    ]
    calls = [run.call("web_search", {"query": q, "num_results": 3}, model="gpt-4o-mini", **r) for q, _ in queries]
    for call_, (_, hits) in zip(calls, queries, strict=True):
        run.result(call_, {"results": hits}, latency=(600, 1500))
    c = run.call("fetch_url", {"url": "https://snapshots.internal.example/pricing/ev-chargers/2026-11-17.json"}, model="gpt-4o-mini", **r)
    run.result(
        c,
        {
            "date": "2026-11-17",
            "prices_usd": {"VoltNest Home 48A": 649, "ChargeWell Pulse 48": 549, "AmpHaus L2 40A": 399, "Circuit EV Wall Unit": 475},
            "promos": {"Circuit EV Wall Unit": "free standard installation through 2026-11-23"},
        },
        latency=(150, 400),
    )
    run.think(
        "Changes since Nov 17: VoltNest cut $649 -> $599 (-7.7%); ChargeWell list unchanged at $549 but 20% off "
        "through Dec 1 ($439.20); AmpHaus unchanged at $399; Circuit EV unchanged at $475 and its free-install "
        "promo ended Nov 23.",
        model="gpt-4o-mini",
        **r,
    )
    findings = (
        "Findings (sources: brand pages, Nov 17 snapshot):\n"
        "- VoltNest Home 48A: $599, was $649 (-7.7%), permanent list price cut\n"
        "- ChargeWell Pulse 48: $549 list, 20% off through Dec 1 = $439.20 (cheapest this week)\n"
        "- AmpHaus L2 40A: $399, unchanged\n"
        "- Circuit EV Wall Unit: $475, unchanged; free installation offer ended Nov 23"
    )
    run.decide(findings, model="gpt-4o-mini", **r)
    run.close(res)
    wri = run.span("writer: draft the one-page brief", agent_id="writer", parent_id=oid)
    w = {"agent_id": "writer", "parent_id": wri["event_id"]}
    run.think(
        "One page: a headline, a price table for the four brands, three bullets on what changed, and one line on "
        "what to watch next week (post-Black-Friday pricing).",
        **w,
    )
    brief = (
        "# Home EV chargers - week of Nov 24\n\n"
        "**Headline:** ChargeWell is the cheapest 48A charger this week at $439.20 (20% off through Dec 1); "
        "VoltNest cut its list price by $50.\n\n"
        "| Brand | Model | Price | vs Nov 17 |\n|---|---|---|---|\n"
        "| ChargeWell | Pulse 48 | $549 ($439.20 promo) | promo |\n"
        "| VoltNest | Home 48A | $599 | -$50 |\n"
        "| Circuit EV | Wall Unit | $475 | free install ended |\n"
        "| AmpHaus | L2 40A | $399 | = |\n\n"
        "- VoltNest's cut looks permanent (no promo banner).\n"
        "- ChargeWell's discount ends Dec 1.\n"
        "- Circuit EV's effective price rose by the cost of installation.\n\n"
        "**Watch next week:** whether ChargeWell's price returns to $549 after Dec 1."
    )
    c = run.call("write_doc", {"title": "Competitor brief: home EV chargers (Nov 24)", "format": "markdown", "content": brief}, **w)
    run.result(c, {"doc_id": "DOC-3317", "url": "https://docs.internal.example/d/DOC-3317", "words": 141}, latency=(300, 700))
    run.decide("Draft DOC-3317 is ready: headline, price table, three bullets, next-week watch item.", **w)
    run.close(wri)
    run.think(
        "Check the draft against the findings: VoltNest $599 (-$50), ChargeWell $439.20 until Dec 1, AmpHaus $399, "
        "Circuit EV $475 with the install offer ended - all match. The headline is supported. Publish.",
        agent_id="orchestrator",
        parent_id=oid,
    )
    c = run.call("publish_doc", {"doc_id": "DOC-3317", "channel": "#market-intel"}, agent_id="orchestrator", parent_id=oid)
    run.result(c, {"published": True, "doc_id": "DOC-3317", "channel": "#market-intel"}, latency=(200, 500))
    run.decide(
        "Published the Nov 24 competitor brief (DOC-3317) to #market-intel. Main points: ChargeWell cheapest at "
        "$439.20 until Dec 1, VoltNest cut $50 to $599, Circuit EV's free installation ended.",
        agent_id="orchestrator",
        parent_id=oid,
    )
    run.close(orch)
    run.end("succeeded", "Brief DOC-3317 published to #market-intel")
    return run


# -- 05/06: deterministic scripts in fallback blocks --------------------------------------


def fallback_invoice_portal() -> Run:
    run = Run(
        "05-fallback-invoice-portal.jsonl",
        name="Upload invoice INV-2291 to Kestrel Supply portal",
        agent_id="ap-invoice-bot",
        model="gpt-4o",
        workflow="supplier-invoice-upload",
        environment="prod",
        agent_version="1.4.0",
        tags=["fallback", "browser", "accounts-payable"],
        started_at=at("2026-11-20T09:00:00"),
        seed=505,
        system=(
            "You take over a scripted browser task when a scripted step fails. Finish the block's task on the "
            "current page, then say what changed so the script can be fixed."
        ),
    )
    run.user(
        "Scheduled job: upload approved invoice INV-2291 (Kestrel Supply, $4,812.60, PO-66017) to the supplier "
        "portal and record the confirmation number."
    )
    s = {"agent_id": "script", "scripted": True}

    login = run.span(
        "fallback block: Log in to the Kestrel Supply portal",
        agent_id="script",
        metadata={"block": "fallback", "task": "Log in to the Kestrel Supply portal"},
    )
    p = {"parent_id": login["event_id"]}
    c = run.call("browser.goto", {"url": "https://portal.kestrelsupply.example/login"}, **s, **p)
    run.result(c, "200 OK - 'Kestrel Supply | Vendor Portal | Sign in'", latency=(700, 1500))
    c = run.call("browser.fill", {"selector": "#username", "value": "ap-automation"}, **s, **p)
    run.result(c, "filled #username", latency=(30, 90))
    c = run.call("browser.click", {"selector": "button#sso-login"}, **s, **p)
    run.result(c, "Navigated to /dashboard - signed in as ap-automation (single sign-on)", latency=(1200, 2400))
    run.close(login, agent_invoked=False, success=True)

    upload = run.span(
        "fallback block: Upload invoice INV-2291 and submit it",
        agent_id="script",
        metadata={"block": "fallback", "task": "Upload invoice INV-2291 against PO-66017 and submit it"},
    )
    p = {"parent_id": upload["event_id"]}
    c = run.call("browser.goto", {"url": "https://portal.kestrelsupply.example/invoices/new"}, **s, **p)
    run.result(c, "200 OK - 'New invoice'", latency=(600, 1200))
    c = run.call("browser.fill", {"selector": "#po-number", "value": "PO-66017"}, **s, **p)
    run.result(c, "filled #po-number", latency=(30, 90))
    c = run.call("browser.fill", {"selector": "#invoice-amount", "value": "4812.60"}, **s, **p)
    run.result(c, "filled #invoice-amount", latency=(30, 90))
    c = run.call("browser.upload", {"selector": "input#invoice-pdf", "file": "invoices/2026-11/INV-2291.pdf"}, **s, **p)
    run.result(c, "uploaded INV-2291.pdf (182 KB)", latency=(400, 900))
    c = run.call("browser.click", {"selector": "button#submit-invoice"}, **s, **p)
    # seq 19: the scripted action fails; the agent takes over inside the same block.
    run.result(
        c,
        "No element matches selector \"button#submit-invoice\" (waited 5000 ms). The page may have changed since "
        "the script was recorded.",
        status="error",
        error_class="SelectorNotFound",
        latency_ms=5000,
    )
    a = {"agent_id": "ap-invoice-bot", **p}
    run.think(
        "The scripted submit button 'button#submit-invoice' is gone. Take a snapshot of the form to find the "
        "current submit control.",
        context=True,
        **a,
    )
    c = run.call("browser.snapshot", {"mode": "accessibility"}, **a)
    run.result(
        c,
        "form \"New invoice\"\n"
        "  textbox \"PO number\" value=\"PO-66017\"\n"
        "  textbox \"Amount (USD)\" value=\"4812.60\"\n"
        "  file \"Invoice PDF\" value=\"INV-2291.pdf\"\n"
        "  checkbox \"I confirm this invoice matches the purchase order\" name=po_match_confirm checked=false\n"
        "  button \"Review & send\" data-testid=invoice-review-send disabled\n"
        "  link \"Save as draft\"",
        latency=(200, 500),
    )
    run.think(
        "The submit button is now 'Review & send' and stays disabled until the PO-match checkbox is ticked. "
        "The invoice matches PO-66017 (same amount), so tick it and click 'Review & send'.",
        **a,
    )
    c1 = run.call("browser.check", {"selector": "input[name=po_match_confirm]"}, **a)
    c2 = run.call("browser.click", {"selector": "[data-testid=invoice-review-send]"}, **a)
    run.result(c1, "checked input[name=po_match_confirm]", latency=(30, 90))
    run.result(
        c2,
        "Navigated to /invoices/review - 'Review invoice INV-2291': PO-66017, $4,812.60, 1 attachment. "
        "Buttons: [Back] [Confirm and send]",
        latency=(700, 1300),
    )
    run.think("A review step was added before sending. Everything matches; confirm.", **a)
    c = run.call("browser.click", {"selector": "button:has-text('Confirm and send')"}, **a)
    run.result(
        c,
        "Navigated to /invoices/INV-2291 - banner: 'Invoice submitted. Confirmation number KS-CNF-480193.'",
        latency=(900, 1800),
    )
    run.decide(
        "Invoice INV-2291 submitted, confirmation KS-CNF-480193. The script needs updating: submit is now "
        "'Review & send' (data-testid=invoice-review-send), enabled only after ticking po_match_confirm, and "
        "followed by a review page with 'Confirm and send'.",
        **a,
    )
    run.close(upload, agent_invoked=True, success=True)

    c = run.call("erp.record_submission", {"invoice": "INV-2291", "portal_confirmation": "KS-CNF-480193"}, **s)
    run.result(c, {"updated": True, "invoice": "INV-2291", "state": "submitted_to_supplier"}, latency=(100, 300))
    run.end("succeeded", "INV-2291 submitted (KS-CNF-480193); agent fallback used once for a changed submit button")
    return run


def fallback_timesheet_script() -> Run:
    run = Run(
        "06-fallback-timesheet-script.jsonl",
        name="Submit weekly timesheet (week 47)",
        agent_id="timesheet-bot",
        model="gpt-4o-mini",
        workflow="timesheet-submit",
        environment="staging",
        agent_version="1.4.0",
        tags=["fallback", "browser"],
        started_at=at("2026-11-21T17:00:00"),
        seed=606,
    )
    s = {"agent_id": "script", "scripted": True}
    block = run.span(
        "fallback block: Submit week 47 timesheet",
        agent_id="script",
        metadata={"block": "fallback", "task": "Submit week 47 timesheet (38.5 h) on the contractor portal"},
    )
    p = {"parent_id": block["event_id"]}
    c = run.call("browser.goto", {"url": "https://contractors.example/timesheets/2026-W47"}, **s, **p)
    run.result(c, "200 OK - 'Timesheet 16-22 Nov 2026 (draft)'", latency=(600, 1200))
    c = run.call("browser.fill", {"selector": "#hours-total", "value": "38.5"}, **s, **p)
    run.result(c, "filled #hours-total", latency=(30, 90))
    c = run.call("browser.select", {"selector": "#project", "value": "ACME-MOBILE-2026"}, **s, **p)
    run.result(c, "selected ACME-MOBILE-2026", latency=(30, 90))
    c = run.call("browser.click", {"selector": "button#submit-timesheet"}, **s, **p)
    run.result(c, "Navigated to /timesheets/2026-W47 - status: Submitted for approval", latency=(800, 1600))
    run.close(block, agent_invoked=False, success=True)
    run.end("succeeded", "Week 47 timesheet submitted by script; agent not needed")
    return run


# -- 07: long data migration (> 2,000 steps) ----------------------------------------------

_COMPANY_A = [
    "Hartwell", "Bluegate", "Copperline", "Northfield", "Marlow", "Stillwater", "Redfern", "Ashby", "Kestrel",
    "Lindqvist", "Oakmont", "Parkside", "Quill", "Ridgeway", "Sable", "Tamarack", "Upland", "Vesta",
    "Willow Creek", "Yardley", "Brookhaven", "Cedar & Pine", "Dunmore", "Elmstead", "Fairbanks",
]
_COMPANY_B = [
    "Dental", "Logistics", "Bakery", "Architects", "Veterinary", "Hardware", "Print Co.", "Physio", "Roofing",
    "Legal LLP", "Outfitters", "Florists", "Auto Repair", "Brewing", "Accounting", "Pharmacy", "Opticians",
]
_VALIDATION = [
    ("billing_country", "UK", "expected ISO 3166-1 alpha-2 (GB)"),
    ("vat_id", "DE 81 234", "malformed VAT id"),
    ("industry_code", "99-X", "unknown NAICS code"),
    ("owner_email", "", "required field is empty"),
    ("currency", "RMB", "expected ISO 4217 (CNY)"),
]


def crm_migration_batch7() -> Run:
    total = 520
    run = Run(
        "07-crm-migration-batch7.jsonl",
        name="Migrate legacy CRM accounts, batch 7",
        agent_id="crm-migrator",
        model=LLAMA,
        workflow="crm-migration",
        environment="prod",
        agent_version="1.5.0",
        tags=["migration", "batch", "long-run"],
        started_at=at("2026-11-22T01:00:00"),
        seed=707,
    )
    run.user(
        f"Migrate the {total} accounts of legacy batch 7 (ACC-20001 to ACC-{20000 + total}) from LegacyCRM to "
        "Atlas with field mapping v3. Flag records that fail validation for manual review; checkpoint every 100."
    )
    rng = run.rng
    migrated, flagged = 0, 0
    for i in range(1, total + 1):
        run.ctx = 1900 + rng.randint(0, 350)  # sliding window: instructions + the last few records
        acc = f"ACC-{20000 + i}"
        company = f"{rng.choice(_COMPANY_A)} {rng.choice(_COMPANY_B)}"
        contacts = rng.randint(1, 9)
        run.think(f"{acc} ({company}), {contacts} contacts: map with v3 and write to Atlas.")
        args = {"legacy_id": acc, "mapping": "v3"}
        first = run.call("migrate_account", args)
        roll = rng.random()
        if roll < 0.03:
            run.result(first, "Atlas API timed out after 30 s (POST /v2/accounts)", status="error", error_class="TimeoutError", latency_ms=30_000)
            run.wait(3_000)
            c = run.call("migrate_account", args, scripted=True, retry=1, parent_id=first["event_id"])
        else:
            c = first
        if 0.03 <= roll < 0.055:
            field, value, why = rng.choice(_VALIDATION)
            run.result(c, {"error": "validation_failed", "field": field, "value": value, "detail": why}, status="error", error_class="ValidationError", latency=(150, 500))
            f = run.call("flag_for_review", {"legacy_id": acc, "reason": f"{field}: {why}"})
            flagged += 1
            run.result(f, {"ticket": f"MIG7-{flagged:03d}"}, latency=(60, 200))
            run.decide(f"{acc} flagged (MIG7-{flagged:03d}): {field} '{value}' - {why}. Continue.")
        else:
            fields = rng.randint(11, 19)
            run.result(c, {"atlas_id": f"atl_{20000 + i}", "fields": fields, "contacts": contacts}, latency=(250, 1100))
            migrated += 1
            run.decide(f"{acc} migrated: {fields} fields, {contacts} contacts.")
        if i % 100 == 0:
            c = run.call("write_checkpoint", {"batch": 7, "last": acc, "migrated": migrated, "flagged": flagged})
            run.result(c, {"saved": True, "checkpoint": f"b7-{i:03d}"}, latency=(40, 150))
    run.decide(f"Batch 7 done: {migrated} accounts migrated, {flagged} flagged for manual review (MIG7-001..MIG7-{flagged:03d}).")
    run.end("succeeded", f"Batch 7: {migrated}/{total} migrated, {flagged} flagged for review")
    return run


# -- 08/09: same task twice, diverging at one tool call -----------------------------------


def _flight_search(filename: str, started_at: datetime, variant: str) -> Run:
    run = Run(
        filename,
        name="Find cheapest flight BOS\u2192SFO",
        agent_id="trip-planner",
        model="gpt-4o",
        workflow="flight-search",
        environment="prod",
        agent_version="1.5.0",
        tags=["travel", "flights"],
        started_at=started_at,
        seed=808,  # both runs share the seed: identical until they diverge
        system="You are a travel assistant. Search with the tools, compare options and never book without explicit confirmation.",
    )
    run.user(
        "Find me the cheapest round trip from Boston to San Francisco, leaving Thursday Dec 17 and coming back "
        "Monday Dec 21. Economy, one adult, at most one stop. Don't book yet, just show me the best option."
    )
    run.think(
        "Get the traveler's profile first (home airport, loyalty programs, bag habits), then search flights.",
        context=True,
    )
    c = run.call("get_traveler_profile", {"traveler_id": "self"})
    run.result(
        c,
        {"name": "Sam Rivera", "home_airports": ["BOS"], "loyalty": ["JetBlue TrueBlue", "Alaska Mileage Plan"], "seat": "aisle", "bags": "carry-on only"},
        latency=(90, 200),
    )
    run.think(
        "Origin BOS, destination SFO, out Thursday Dec 17, back Monday Dec 21, 1 adult, economy, max 1 stop, "
        "sorted by price. Carry-on only, so basic fares are fine if a carry-on is included."
    )
    # seq 6: the two runs part ways here.
    year = "2026" if variant == "a" else "2025"
    search = run.call(
        "search_flights",
        {
            "origin": "BOS",
            "destination": "SFO",
            "depart_date": f"{year}-12-17",
            "return_date": f"{year}-12-21",
            "adults": 1,
            "cabin": "economy",
            "max_stops": 1,
            "sort": "price",
        },
    )
    if variant == "a":
        run.result(
            search,
            {
                "currency": "USD",
                "offers": [
                    {"offer_id": "OF-7Q2K1", "carrier": "JetBlue", "stops": 1, "via": "JFK", "out": "06:05-12:31", "back": "13:40-22:58", "fare": "Blue Basic", "price": 318.40},
                    {"offer_id": "OF-7Q2K4", "carrier": "Alaska", "stops": 0, "out": "08:30-12:05", "back": "10:15-18:59", "fare": "Saver", "price": 342.10},
                    {"offer_id": "OF-7Q2L0", "carrier": "United", "stops": 1, "via": "ORD", "out": "07:00-13:14", "back": "12:25-23:40", "fare": "Basic Economy", "price": 351.96},
                ],
            },
            latency=(1800, 3200),
        )
        run.think(
            "Cheapest is JetBlue at $318.40 via JFK (Blue Basic); the Alaska nonstop is $23.70 more. Check Blue "
            "Basic's rules: the traveler flies carry-on only, so a carry-on must be included."
        )
        c = run.call("get_fare_rules", {"offer_id": "OF-7Q2K1"})
        run.result(
            c,
            {"fare": "Blue Basic", "carry_on": "included", "checked_bag": "$40", "seat_selection": "fee", "changes": "not permitted", "refund": "no"},
            latency=(300, 700),
        )
        run.decide(
            "Best option: JetBlue via JFK, $318.40 round trip (offer OF-7Q2K1). Out Thu Dec 17 06:05 -> 12:31, "
            "back Mon Dec 21 13:40 -> 22:58, one stop each way. Blue Basic includes a carry-on but allows no "
            "changes or refunds. For $23.70 more, Alaska flies nonstop (08:30 -> 12:05), and you have Mileage Plan. "
            "Nothing is booked - tell me which one you want."
        )
        run.end("succeeded", "Cheapest: JetBlue OF-7Q2K1 $318.40 (1 stop via JFK); nonstop alternative $342.10")
    else:
        run.result(
            search,
            {"error": "INVALID_DATE", "message": "depart_date 2025-12-17 is in the past"},
            status="error",
            error_class="InvalidArgument",
            latency=(200, 400),
        )
        run.think(
            "The search API rejects Dec 17, 2025 as a past date. I can't tell which dates the traveler means, and "
            "I shouldn't guess."
        )
        run.decide(
            "I couldn't search: December 17 appears to be in the past for the flight search. Could you confirm "
            "your travel dates (and the year)?"
        )
        run.end("failed", "No flight found: search rejected the dates as past (2025-12-17); asked the user to confirm", "InvalidArgument")
    return run


def flight_bos_sfo_a() -> Run:
    return _flight_search("08-flight-bos-sfo-a.jsonl", at("2026-11-25T16:20:05"), "a")


def flight_bos_sfo_b() -> Run:
    return _flight_search("09-flight-bos-sfo-b.jsonl", at("2026-11-26T09:45:31"), "b")


# -- 10: browser agent recording its own state (goal, memory, page summary) --------------


def browser_change_address() -> Run:
    goal = "Change the delivery address of order W-58213 to 41 Larch Street, Apt 3, Portland, ME 04101, only if it has not shipped"
    run = Run(
        "10-browser-change-address.jsonl",
        name="Change delivery address for order W-58213",
        agent_id="web-navigator",
        model="claude-sonnet-4",
        workflow="browser-task",
        environment="prod",
        agent_version="1.5.1",
        tags=["browser", "account"],
        started_at=at("2026-11-24T19:12:40"),
        seed=1010,
        system="You operate a web browser for the user. Before each action, state your goal, what you remember and what the page shows.",
    )
    run.user(
        "Please change the delivery address of my Homestead Goods order W-58213 to 41 Larch Street, Apt 3, "
        "Portland, ME 04101 - I'll be at my sister's that week. Only if it hasn't shipped yet."
    )
    run.think(
        "Open the order list of the Homestead Goods account to find W-58213 and its status.",
        context=True,
        state={"goal": goal, "memory": "Nothing done yet.", "page_summary": "Blank tab."},
    )
    c = run.call("browser.navigate", {"url": "https://www.homesteadgoods.example/account/orders"})
    run.result(
        c,
        "Page 'Your orders': W-58213 - placed Nov 22 - Processing [View] [Track]; W-57790 - Delivered Nov 12; "
        "W-56102 - Delivered Oct 30.",
        latency=(900, 1800),
    )
    run.think(
        "W-58213 is still Processing, so it hasn't shipped and the address can be changed. Open the order.",
        state={
            "goal": goal,
            "memory": "W-58213 status: Processing (not shipped).",
            "page_summary": "Order list: W-58213 Processing; two older orders delivered.",
        },
    )
    c = run.call("browser.click", {"selector": "a[href='/account/orders/W-58213']"})
    run.result(
        c,
        "Order W-58213: Cast iron skillet 12in, Linen apron. Ship to: 9 Pine Hill Rd, Bangor, ME 04401. "
        "Buttons: [Change address] [Cancel order] [Contact support]",
        latency=(700, 1400),
    )
    run.think(
        "The order page has a 'Change address' button; the current ship-to is in Bangor. Click it.",
        state={
            "goal": goal,
            "memory": "W-58213 not shipped. Current ship-to: 9 Pine Hill Rd, Bangor, ME 04401.",
            "page_summary": "Order detail W-58213 with Change address / Cancel order / Contact support.",
        },
    )
    c = run.call("browser.click", {"selector": "button:has-text('Change address')"})
    run.result(
        c,
        "Dialog 'Edit delivery address': Street, Apt/Suite, City, State, ZIP (prefilled with the Bangor address). "
        "Buttons: [Save] [Cancel]",
        latency=(300, 700),
    )
    run.think(
        "Fill in the new address and save.",
        state={
            "goal": goal,
            "memory": "W-58213 not shipped. Address dialog open.",
            "page_summary": "Edit delivery address dialog with five fields.",
        },
    )
    c = run.call(
        "browser.fill_form",
        {"fields": {"Street": "41 Larch Street", "Apt/Suite": "Apt 3", "City": "Portland", "State": "ME", "ZIP": "04101"}},
    )
    run.result(c, "5 fields filled.", latency=(200, 500))
    c = run.call("browser.click", {"selector": "dialog button:has-text('Save')"})
    run.result(
        c,
        "Dialog closed. Banner: 'Address updated. Your order will ship to 41 Larch Street, Apt 3, Portland, ME 04101.'",
        latency=(800, 1500),
    )
    run.observe(
        "Order page now shows Ship to: 41 Larch Street, Apt 3, Portland, ME 04101; status still Processing.",
        state={
            "goal": goal,
            "memory": "Address changed and confirmed by the site's banner.",
            "page_summary": "Order detail W-58213, ship-to Portland ME 04101, Processing.",
        },
    )
    run.decide(
        "Done. Order W-58213 hadn't shipped yet (status Processing), and its delivery address is now 41 Larch "
        "Street, Apt 3, Portland, ME 04101 - the order page confirms the change.",
        state={
            "goal": goal,
            "memory": "Task complete.",
            "page_summary": "Order detail W-58213, ship-to Portland ME 04101, Processing.",
        },
    )
    run.end("succeeded", "Delivery address of W-58213 changed to Portland, ME")
    return run


# -- 11/12: SQL analyst, one good and one failed ------------------------------------------

_REVENUE_SQL = """WITH o AS (
  SELECT region_id, date_trunc('week', created_at) AS week, SUM(total_usd) AS gross
  FROM analytics.orders
  WHERE status = 'completed' AND created_at >= '2026-11-02' AND created_at < '2026-11-16'
  GROUP BY 1, 2
), r AS (
  SELECT o.region_id, date_trunc('week', o.created_at) AS week, SUM(rf.amount_usd) AS refunded
  FROM analytics.refunds rf JOIN analytics.orders o USING (order_id)
  WHERE o.created_at >= '2026-11-02' AND o.created_at < '2026-11-16'
  GROUP BY 1, 2
)
SELECT g.name AS region, o.week::date AS week, o.gross - COALESCE(r.refunded, 0) AS net_revenue
FROM o JOIN analytics.regions g USING (region_id)
LEFT JOIN r USING (region_id, week)
ORDER BY region, week"""


def sql_weekly_revenue() -> Run:
    run = Run(
        "11-sql-weekly-revenue.jsonl",
        name="Net revenue by region, week of Nov 9",
        agent_id="sql-analyst",
        model="gpt-4o",
        workflow="analytics-qa",
        environment="prod",
        agent_version="1.5.0",
        tags=["sql", "analytics"],
        started_at=at("2026-11-18T08:15:22"),
        seed=1111,
        system="You answer business questions with read-only SQL on the analytics warehouse (PostgreSQL). Show numbers with their definition.",
    )
    run.user("What was net revenue by region last week (Nov 9-15), and how does it compare with the week before?")
    run.think("Net revenue = completed orders minus refunds. Check which tables hold orders, refunds and regions.")
    c = run.call("list_tables", {"schema": "analytics"})
    run.result(c, {"schema": "analytics", "tables": ["customers", "fx_rates", "order_items", "orders", "refunds", "regions"]}, latency=(60, 150))
    c1 = run.call("describe_table", {"table": "analytics.orders"})
    c2 = run.call("describe_table", {"table": "analytics.refunds"})
    run.result(
        c1,
        {"columns": [["order_id", "bigint"], ["customer_id", "bigint"], ["region_id", "integer"], ["created_at", "timestamptz"], ["status", "text"], ["total_usd", "numeric(12,2)"]]},
        latency=(60, 150),
    )
    run.result(
        c2,
        {"columns": [["refund_id", "bigint"], ["order_id", "bigint"], ["amount_usd", "numeric(12,2)"], ["refunded_at", "timestamptz"]]},
        latency=(60, 150),
    )
    run.think(
        "Weeks start on Monday: Nov 2 and Nov 9. Sum completed orders per region and week, subtract refunds of "
        "those orders, join region names."
    )
    c = run.call("run_sql", {"query": _REVENUE_SQL})
    run.result(
        c,
        "region        | week       | net_revenue\n"
        "--------------+------------+------------\n"
        "APAC          | 2026-11-02 |  288407.33\n"
        "APAC          | 2026-11-09 |  301992.81\n"
        "EMEA          | 2026-11-02 |  412880.15\n"
        "EMEA          | 2026-11-09 |  398112.40\n"
        "LATAM         | 2026-11-02 |   96240.10\n"
        "LATAM         | 2026-11-09 |   88975.62\n"
        "North America | 2026-11-02 | 1204551.90\n"
        "North America | 2026-11-09 | 1261330.05\n"
        "(8 rows, 1.42 s)",
        latency=(1300, 1700),
    )
    run.think(
        "Week-over-week: APAC +4.7%, EMEA -3.6%, LATAM -7.5%, North America +4.7%. Total $2,050,410.88 vs "
        "$2,002,079.48, +2.4%."
    )
    run.decide(
        "Net revenue (completed orders minus refunds on them), week of Nov 9 vs week of Nov 2:\n"
        "- North America: $1,261,330.05 (+4.7%)\n"
        "- EMEA: $398,112.40 (-3.6%)\n"
        "- APAC: $301,992.81 (+4.7%)\n"
        "- LATAM: $88,975.62 (-7.5%)\n"
        "Total: $2,050,410.88, up 2.4% from $2,002,079.48. EMEA and LATAM declined; the growth came from North America and APAC."
    )
    run.end("succeeded", "Answered: net revenue by region, +2.4% week over week")
    return run


def sql_churn_failed() -> Run:
    run = Run(
        "12-sql-churn-by-plan-failed.jsonl",
        name="Q3 churn by plan",
        agent_id="sql-analyst",
        model="gpt-4o-mini",
        workflow="analytics-qa",
        environment="staging",
        agent_version="1.4.0",
        tags=["sql", "analytics"],
        started_at=at("2026-11-18T15:40:09"),
        seed=1212,
        system="You answer business questions with read-only SQL on the analytics warehouse (PostgreSQL). Queries time out after 30 s.",
    )
    run.user(
        "How many customers churned in Q3 2026, by plan? Churn = subscription cancelled and not reactivated "
        "within 30 days."
    )
    run.think("Count cancelled subscriptions in Q3 grouped by plan name.")
    c = run.call(
        "run_sql",
        {"query": "SELECT plan_name, COUNT(*) FROM analytics.subscriptions WHERE cancelled_at >= '2026-07-01' AND cancelled_at < '2026-10-01' GROUP BY plan_name"},
    )
    run.result(
        c,
        'ERROR:  column "plan_name" does not exist\nLINE 1: SELECT plan_name, COUNT(*) FROM analytics.subscriptions WHERE...\n'
        'HINT:  Perhaps you meant to reference the column "subscriptions.plan_id".',
        status="error",
        error_class="ProgrammingError",
        latency=(40, 120),
    )
    run.think(
        "Plans are referenced by plan_id; join analytics.plans for the name. Exclude customers who reactivated "
        "within 30 days using subscription_events."
    )
    q2 = (
        "SELECT p.name AS plan, COUNT(DISTINCT s.customer_id) AS churned\n"
        "FROM analytics.subscriptions s JOIN analytics.plans p ON p.plan_id = s.plan_id\n"
        "WHERE s.cancelled_at >= '2026-07-01' AND s.cancelled_at < '2026-10-01'\n"
        "  AND NOT EXISTS (SELECT 1 FROM analytics.subscription_events e\n"
        "                  WHERE e.customer_id = s.customer_id AND e.type = 'reactivated'\n"
        "                    AND e.at BETWEEN s.cancelled_at AND s.cancelled_at + interval '30 days')\n"
        "GROUP BY p.name ORDER BY churned DESC"
    )
    c = run.call("run_sql", {"query": q2})
    run.result(c, "ERROR:  canceling statement due to statement timeout (30000 ms)", status="error", error_class="QueryTimeout", latency_ms=30_000)
    run.think(
        "subscription_events is large. Pre-filter events to reactivations between Jul 1 and Oct 31 in a CTE and "
        "anti-join on it."
    )
    q3 = (
        "WITH react AS (SELECT customer_id, at FROM analytics.subscription_events\n"
        "               WHERE type = 'reactivated' AND at >= '2026-07-01' AND at < '2026-11-01')\n"
        "SELECT p.name AS plan, COUNT(DISTINCT s.customer_id) AS churned\n"
        "FROM analytics.subscriptions s JOIN analytics.plans p ON p.plan_id = s.plan_id\n"
        "LEFT JOIN react r ON r.customer_id = s.customer_id\n"
        " AND r.at BETWEEN s.cancelled_at AND s.cancelled_at + interval '30 days'\n"
        "WHERE s.cancelled_at >= '2026-07-01' AND s.cancelled_at < '2026-10-01' AND r.customer_id IS NULL\n"
        "GROUP BY p.name ORDER BY churned DESC"
    )
    c = run.call("run_sql", {"query": q3})
    run.result(c, "ERROR:  canceling statement due to statement timeout (30000 ms)", status="error", error_class="QueryTimeout", latency_ms=30_000)
    run.error(
        "Giving up after 3 failed queries: the reactivation check over analytics.subscription_events (about 410M "
        "rows, no index on (type, at)) exceeds the 30 s statement timeout. A pre-aggregated churn table or an "
        "index on subscription_events(type, at) is needed.",
        "QueryTimeout",
    )
    run.end("failed", "No answer: churn query exceeded the 30 s statement timeout twice", "QueryTimeout")
    return run


# -- 13: travel booker whose first booking is blocked by a human approver ----------------


def travel_denver_offsite() -> Run:
    run = Run(
        "13-travel-denver-offsite.jsonl",
        name="Book hotel for Denver offsite",
        agent_id="travel-booker",
        model="gpt-4o",
        workflow="trip-booking",
        environment="prod",
        agent_version="1.5.0",
        tags=["travel", "booking", "approval"],
        started_at=at("2026-11-26T11:03:17"),
        seed=1313,
        system="You book business travel. Bookings go through an approver. Company hotel cap: $250 per night in Denver.",
    )
    run.user("Book 3 nights, Dec 8-11, near the Colorado Convention Center in Denver for Priya Natarajan (team offsite).")
    run.think("Search hotels within walking distance of the convention center for Dec 8-11, 1 guest.")
    c = run.call("search_hotels", {"near": "Colorado Convention Center, Denver", "check_in": "2026-12-08", "check_out": "2026-12-11", "guests": 1, "radius_km": 1.5})
    run.result(
        c,
        {
            "hotels": [
                {"id": "H-DEN-114", "name": "The Crawford Hotel", "distance_km": 1.4, "rating": 4.8, "nightly_usd": 412.0},
                {"id": "H-DEN-087", "name": "Hyatt Place Denver Downtown", "distance_km": 0.6, "rating": 4.3, "nightly_usd": 229.0},
                {"id": "H-DEN-203", "name": "Embassy Suites Denver Downtown", "distance_km": 0.4, "rating": 4.4, "nightly_usd": 264.0},
            ]
        },
        latency=(900, 1800),
    )
    run.think("The Crawford Hotel has the best rating (4.8). Book it for the three nights.")
    c = run.call("book_hotel", {"hotel_id": "H-DEN-114", "guest": "Priya Natarajan", "check_in": "2026-12-08", "check_out": "2026-12-11"})
    # seq 7: the approver refuses the action.
    run.result(
        c,
        "Action blocked: booking request denied by approver M. Okafor - 'The Crawford is $412/night, over the "
        "$250/night policy cap for Denver. Please pick something within policy.'",
        status="blocked",
        error_class="ApprovalDenied",
        latency_ms=96_000,
    )
    run.think(
        "I ignored the $250/night cap. Within policy: Hyatt Place Denver Downtown at $229/night, 0.6 km from the "
        "convention center, rated 4.3. Book that."
    )
    c = run.call("book_hotel", {"hotel_id": "H-DEN-087", "guest": "Priya Natarajan", "check_in": "2026-12-08", "check_out": "2026-12-11"})
    run.result(
        c,
        {"confirmation": "HPD-88412057", "hotel": "Hyatt Place Denver Downtown", "nights": 3, "nightly_usd": 229.0, "total_usd": 778.41, "approved_by": "M. Okafor"},
        latency_ms=41_000,
    )
    run.decide(
        "Booked Hyatt Place Denver Downtown for Priya Natarajan, Dec 8-11 (3 nights, $229/night, $778.41 with "
        "taxes), confirmation HPD-88412057. It's a 0.6 km walk to the Colorado Convention Center. My first choice "
        "(The Crawford, $412/night) was declined as over the $250 policy cap."
    )
    run.end("succeeded", "Hotel booked within policy after the first choice was blocked by the approver")
    return run


# -- 14: a docs crawl with steps lost on the way (seq 40-44 missing) ---------------------

_DOC_PAGES = [
    ("/docs/", "Overview", 6), ("/docs/install", "Installation", 9), ("/docs/quickstart", "Quickstart", 11),
    ("/docs/concepts/sessions", "Sessions", 8), ("/docs/concepts/steps", "Steps", 14), ("/docs/concepts/cycles", "Decision cycles", 7),
    ("/docs/guides/import", "Importing runs", 12), ("/docs/guides/compare", "Comparing runs", 10),
    ("/docs/guides/replay", "What-if replay", 15), ("/docs/guides/annotate", "Annotations", 5),
    ("/docs/reference/cli", "CLI reference", 21), ("/docs/reference/http-api", "HTTP API", 18),
    ("/docs/reference/sdk", "Python SDK", 24), ("/docs/faq", "FAQ", 13), ("/docs/changelog", "Changelog", 17),
]


def docs_crawl_gap() -> Run:
    run = Run(
        "14-docs-crawl-gap.jsonl",
        name="Index product docs for the help bot",
        agent_id="docs-indexer",
        model="gpt-4o-mini",
        workflow="docs-crawl",
        environment="dev",
        agent_version="1.5.1",
        tags=["crawler", "indexing"],
        started_at=at("2026-11-19T22:10:00"),
        seed=1414,
    )
    run.user("Crawl https://docs.agentreplay.example/docs/ (15 pages), chunk each page and upsert the chunks into the help-bot index.")
    for path, title, chunks in _DOC_PAGES:
        run.ctx = 900 + run.rng.randint(0, 200)
        run.think(f"Next page: {path} ({title}). Fetch it, then chunk and upsert.")
        c = run.call("fetch_page", {"url": f"https://docs.agentreplay.example{path}"})
        words = chunks * run.rng.randint(160, 220)
        run.result(c, {"status": 200, "title": title, "words": words, "chunks": chunks}, latency=(250, 900))
        run.decide(f"{path}: {chunks} chunks upserted ({words} words).")
    run.decide("Crawl complete: 15 pages, 190 chunks upserted into help-bot index.")
    # The recorder lost five events of this run (the end of page 9 and most of page 10).
    run.drop(range(40, 45))
    run.end("succeeded", "15 pages indexed")
    return run


# -- 15: support, account locked ----------------------------------------------------------


def support_account_locked() -> Run:
    run = Run(
        "15-support-account-locked.jsonl",
        name="Account locked after failed logins",
        agent_id="support-agent",
        model="gpt-4o-mini",
        workflow="customer-support",
        environment="prod",
        agent_version="1.5.0",
        tags=["support", "account"],
        started_at=at("2026-11-25T08:02:51"),
        seed=1515,
        system="You are a support assistant for Fieldnote (a note-taking SaaS). Verify identity before unlocking accounts or resetting MFA.",
    )
    run.user("I can't log in - it says my account is locked. I tried my password a few times after switching phones. Username rkowalski.")
    run.think("Check the account state and why it's locked.")
    c = run.call("get_account", {"username": "rkowalski"})
    run.result(
        c,
        {"username": "rkowalski", "status": "locked", "reason": "too_many_failed_logins", "failed_attempts": 6, "locked_at": "2026-11-25T07:58:12Z", "mfa": "totp", "plan": "Team"},
        latency=(100, 250),
    )
    run.think(
        "Locked after 6 failed attempts; MFA is an authenticator app and they changed phones, so they'll need an "
        "MFA reset too. Verify identity first with a link to the address on file."
    )
    c = run.call("send_verification", {"username": "rkowalski", "channel": "email_on_file"})
    run.result(c, {"sent": True, "channel": "email_on_file", "expires_in_min": 15}, latency=(300, 600))
    run.decide("I've sent a verification link to the email address on your account. Please click it and tell me when you're done.")
    run.user("Done, the page says 'identity verified'.", wait_ms=71_000)
    c = run.call("check_verification", {"username": "rkowalski"})
    run.result(c, {"verified": True, "verified_at": "2026-11-25T08:04:37Z"}, latency=(80, 200))
    run.think("Verified. Unlock the account and reset MFA so they can enroll the new phone at next login.")
    c1 = run.call("unlock_account", {"username": "rkowalski", "reason": "verified_user_request"})
    c2 = run.call("reset_mfa", {"username": "rkowalski", "method": "totp"})
    run.result(c1, {"status": "active", "failed_attempts": 0}, latency=(100, 250))
    run.result(c2, {"mfa": "pending_enrollment"}, latency=(100, 250))
    run.decide(
        "Your account is unlocked. I've also reset two-factor authentication: when you log in, you'll be asked to "
        "scan a new QR code with the authenticator app on your new phone. If you don't remember your password, "
        "use 'Forgot password' on the login page."
    )
    run.end("succeeded", "Account unlocked and MFA reset after identity verification")
    return run


# -- 16: coding agent on a local model, succeeds -------------------------------------------


def coding_pagination_fix() -> Run:
    run = Run(
        "16-coding-pagination-fix.jsonl",
        name="BUG-1187: empty last page in paginate()",
        agent_id="coding-agent",
        model=LLAMA,
        workflow="code-change",
        environment="dev",
        agent_version="1.5.0",
        tags=["coding", "bugfix", "local-model"],
        started_at=at("2026-11-27T14:31:10"),
        seed=1616,
        system="You are a coding agent working in the shop-backend repository. Fix the bug, add a regression test, run the tests.",
    )
    run.user(
        "BUG-1187: the last page of /api/orders?page=N is always empty when the number of orders is a multiple of "
        "page_size. Fix paginate() in api/pagination.py and add a regression test."
    )
    run.think("Read api/pagination.py.", context=True)
    c = run.call("read_file", {"path": "api/pagination.py"})
    run.result(
        c,
        "api/pagination.py (8 lines)\n"
        "import math\n\n\n"
        "def paginate(items, page, page_size=25):\n"
        '    """Return (page_items, total_pages) for a 1-based page number."""\n'
        "    total_pages = math.floor(len(items) / page_size) + 1\n"
        "    start = (page - 1) * page_size\n"
        "    return items[start:start + page_size], total_pages\n",
        latency=(30, 90),
    )
    run.think(
        "floor(n / size) + 1 overcounts when n is a multiple of size: 50 items with page_size 25 gives 3 pages, "
        "and page 3 is empty. Use ceil, with at least 1 page for an empty list."
    )
    c = run.call(
        "edit_file",
        {"path": "api/pagination.py", "old": "total_pages = math.floor(len(items) / page_size) + 1", "new": "total_pages = max(1, math.ceil(len(items) / page_size))"},
    )
    run.result(c, "Replaced 1 occurrence in api/pagination.py.", latency=(20, 60))
    c = run.call("read_file", {"path": "tests/api/test_pagination.py"})
    run.result(
        c,
        "tests/api/test_pagination.py (14 lines)\n"
        "from api.pagination import paginate\n\n\n"
        "def test_first_page():\n"
        "    items = list(range(60))\n"
        "    assert paginate(items, 1, 25) == (list(range(25)), 3)\n\n\n"
        "def test_partial_last_page():\n"
        "    items = list(range(60))\n"
        "    assert paginate(items, 3, 25) == (list(range(50, 60)), 3)\n\n\n"
        "def test_empty():\n"
        "    assert paginate([], 1, 25) == ([], 1)\n",
        latency=(30, 90),
    )
    run.think("Add a regression test for an exact multiple: 50 items, page_size 25 -> 2 pages, page 2 full.")
    c = run.call(
        "append_file",
        {
            "path": "tests/api/test_pagination.py",
            "text": "\n\ndef test_exact_multiple_has_no_empty_page():  # BUG-1187\n"
            "    items = list(range(50))\n"
            "    assert paginate(items, 2, 25) == (list(range(25, 50)), 2)\n",
        },
    )
    run.result(c, "Appended 4 lines to tests/api/test_pagination.py.", latency=(20, 60))
    c = run.call("run_tests", {"args": ["tests/api", "-q"]})
    run.result(c, "..............\n14 passed in 0.38s", latency=(900, 1600))
    run.decide(
        "Fixed BUG-1187: paginate() now computes total_pages = max(1, ceil(n / page_size)), so an exact multiple no "
        "longer yields an empty last page. Added test_exact_multiple_has_no_empty_page; tests/api passes (14 tests)."
    )
    run.end("succeeded", "BUG-1187 fixed with a regression test; tests pass")
    return run


# -- 17: inbox triage that overflows the context window -----------------------------------


def inbox_triage_overflow() -> Run:
    run = Run(
        "17-inbox-triage-context-overflow.jsonl",
        name="Triage shared support inbox (morning batch)",
        agent_id="inbox-triage",
        model="gpt-4o-mini",
        workflow="inbox-triage",
        environment="staging",
        agent_version="1.4.0",
        tags=["email", "triage"],
        started_at=at("2026-11-20T06:30:00"),
        seed=1717,
        system="You triage the shared support inbox: label each unread thread (billing, bug, how-to, spam), route it, and draft replies for billing questions.",
    )
    run.user("Scheduled: morning triage of unread threads in the support inbox.")
    run.think("List the unread threads first.")
    c = run.call("list_threads", {"folder": "support", "unread": True, "limit": 50})
    run.result(
        c,
        {
            "count": 38,
            "threads": [
                {"id": "T-88213", "subject": "Re: Re: Re: invoice discrepancy Q3", "messages": 47, "attachments": 3},
                {"id": "T-88240", "subject": "Export to CSV drops the last column", "messages": 2, "attachments": 1},
                {"id": "T-88244", "subject": "How do I add a teammate?", "messages": 1, "attachments": 0},
                {"id": "T-88251", "subject": "Charged twice this month", "messages": 3, "attachments": 0},
            ],
            "more": 34,
        },
        latency=(400, 900),
    )
    run.think("T-88213 is the longest and about billing. Read it fully, attachments included, to draft a reply.")
    c = run.call("get_thread", {"thread_id": "T-88213", "include_attachments": True})
    run.result(
        c,
        "47 messages between the customer's finance team and billing (Jul 3 - Nov 19). Attachments: "
        "Statement_Q3.pdf (212 pages, extracted to text), usage_export.csv (18,400 rows), "
        "credit_note_draft.docx. [recorded content truncated: 498,311 characters]",
        latency=(2500, 4000),
    )
    run.ctx += 124_600  # the whole thread went into the prompt
    run.error(
        "ContextWindowExceededError: This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131772 tokens. Please reduce the length of the messages.",
        "ContextWindowExceededError",
        model="gpt-4o-mini",
        duration_ms=390,
    )
    err = run.steps[-1]
    run.wait(1000)
    run.error(
        "ContextWindowExceededError: This model's maximum context length is 128000 tokens. However, your messages "
        "resulted in 131772 tokens. Please reduce the length of the messages.",
        "ContextWindowExceededError",
        model="gpt-4o-mini",
        duration_ms=360,
        retry=1,
        parent_id=err["event_id"],
    )
    run.end("failed", "Stopped at thread T-88213: attachments pushed the prompt past the 128k context window", "ContextWindowExceededError")
    return run


# -- 18: on-call triage still running --------------------------------------------------------


def oncall_checkout_running() -> Run:
    run = Run(
        "18-oncall-checkout-5xx-running.jsonl",
        name="Investigate checkout-api 5xx spike",
        agent_id="oncall-triage",
        model="claude-sonnet-4",
        workflow="incident-triage",
        environment="prod",
        agent_version="1.5.1",
        tags=["oncall", "incident"],
        started_at=at("2026-11-27T23:41:07"),
        seed=1818,
        system="You are the first responder for production alerts. Find the likely cause with metrics, logs, deploys and traces; propose a mitigation; do not change production yourself.",
    )
    run.user("[ALERT] checkout-api: HTTP 5xx ratio 7.8% over 5m (threshold 2%) - us-east-1 - firing since 23:36 UTC")
    run.think("Confirm the error rate and when it started.", context=True)
    c = run.call(
        "query_metrics",
        {
            "query": 'sum(rate(http_requests_total{service="checkout-api",code=~"5.."}[5m])) / sum(rate(http_requests_total{service="checkout-api"}[5m]))',
            "range": "1h",
            "step": "1m",
        },
    )
    run.result(c, {"summary": "0.3% until 23:34, 6.9% at 23:36, 8.1% at 23:41", "max": 0.081, "step_change_at": "2026-11-27T23:35:00Z"}, latency=(400, 900))
    run.think("A step change at 23:35 points to a deploy or a dependency. Check recent deploys and error logs together.")
    c1 = run.call("get_recent_deploys", {"service": "checkout-api", "since": "2026-11-27T22:30:00Z"})
    c2 = run.call("search_logs", {"service": "checkout-api", "level": "error", "since": "2026-11-27T23:30:00Z", "limit": 20})
    run.result(
        c1,
        {"deploys": [{"version": "2026.11.27-3", "at": "2026-11-27T23:34:50Z", "by": "ci", "change": "bump payments-client 4.2.0 -> 4.3.0"}]},
        latency=(200, 500),
    )
    run.result(
        c2,
        "412 matching lines since 23:30. Top messages:\n"
        "  391x PaymentsClientError: 400 Bad Request from payments-gateway POST /v3/charges: unknown field \"idempotency_scope\"\n"
        "   21x upstream request timeout (payments-gateway, 5000 ms)",
        latency=(900, 1800),
    )
    run.think(
        "Errors start one minute after deploy 2026.11.27-3, which bumped payments-client to 4.3.0; the new client "
        "sends idempotency_scope, which payments-gateway rejects. Confirm on a failing trace before proposing a "
        "rollback of checkout-api to 2026.11.27-2."
    )
    run.call("query_traces", {"service": "checkout-api", "status": "error", "since": "2026-11-27T23:35:00Z", "limit": 5})
    # No result yet and no session_end: the run is still going.
    return run


# -- output ---------------------------------------------------------------------------------

RUNS: list[Callable[[], Run]] = [
    refund_defective_backpack,
    coding_format_price_failed,
    shipment_status_retries,
    multi_agent_competitor_brief,
    fallback_invoice_portal,
    fallback_timesheet_script,
    crm_migration_batch7,
    flight_bos_sfo_a,
    flight_bos_sfo_b,
    browser_change_address,
    sql_weekly_revenue,
    sql_churn_failed,
    travel_denver_offsite,
    docs_crawl_gap,
    support_account_locked,
    coding_pagination_fix,
    inbox_triage_overflow,
    oncall_checkout_running,
]


def generate(out: Path) -> list[Path]:
    """Write every demo run into ``out``; remove demo files of ours that are no longer produced."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for make in RUNS:
        run = make()
        path = out / run.filename
        path.write_bytes(run.dump())
        written.append(path)
    names = {p.name for p in written}
    for stale in out.glob("[0-9][0-9]-*.jsonl"):
        if stale.name not in names:
            stale.unlink()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: data/demo)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(f"{path.name}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
