"""Coding and on-call runs: a fix that fails because of a stale read three cycles earlier (02), a
pagination fix on a local model (16), and an on-call triage still running (18)."""

from __future__ import annotations

from .builder import LLAMA, Run, at

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
        'Ticket PAY-412: `format_price` should accept a `currency` argument (ISO 4217 code, default "USD") and '
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
        'pricing/format.py:42:def format_price(amount: Decimal, *, locale: str = "en_US", rounding: str = ROUND_HALF_EVEN) -> str:\n'
        "checkout/summary.py:88:        total_label = format_price(order.total, locale=user.locale, rounding=ROUND_HALF_UP)\n"
        "invoices/render.py:131:    cells.append(format_price(line.amount, locale=invoice.locale, rounding=ROUND_DOWN))\n"
        "invoices/render.py:164:    footer = format_price(invoice.total, locale=invoice.locale)\n"
        'tests/pricing/test_format.py:12:    assert format_price(Decimal("1234.5")) == "$1,234.50"\n'
        'tests/pricing/test_format.py:19:    assert format_price(Decimal("0.125"), rounding=ROUND_HALF_UP) == "$0.13"\n'
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
        '>       assert format_price(Decimal("0.125"), rounding=ROUND_HALF_UP) == "$0.13"\n'
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
        '>       amount = Decimal(str(amount)).quantize(Decimal("0.01"), rounding=rounding)\n'
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
        {
            "path": "api/pagination.py",
            "old": "total_pages = math.floor(len(items) / page_size) + 1",
            "new": "total_pages = max(1, math.ceil(len(items) / page_size))",
        },
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
    run.result(
        c,
        {"summary": "0.3% until 23:34, 6.9% at 23:36, 8.1% at 23:41", "max": 0.081, "step_change_at": "2026-11-27T23:35:00Z"},
        latency=(400, 900),
    )
    run.think("A step change at 23:35 points to a deploy or a dependency. Check recent deploys and error logs together.")
    c1 = run.call("get_recent_deploys", {"service": "checkout-api", "since": "2026-11-27T22:30:00Z"})
    c2 = run.call("search_logs", {"service": "checkout-api", "level": "error", "since": "2026-11-27T23:30:00Z", "limit": 20})
    run.result(
        c1,
        {
            "deploys": [
                {
                    "version": "2026.11.27-3",
                    "at": "2026-11-27T23:34:50Z",
                    "by": "ci",
                    "change": "bump payments-client 4.2.0 -> 4.3.0",
                }
            ]
        },
        latency=(200, 500),
    )
    run.result(
        c2,
        "412 matching lines since 23:30. Top messages:\n"
        '  391x PaymentsClientError: 400 Bad Request from payments-gateway POST /v3/charges: unknown field "idempotency_scope"\n'
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
