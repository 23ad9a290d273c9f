"""The demo runs shipped with the app, one builder function per run, grouped by kind of agent.

`RUNS` lists them in file order; `EXPECTED` records facts about particular runs that
tests/test_demo_data.py checks the written files against.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .analytics import sql_churn_failed, sql_weekly_revenue
from .automation import crm_migration_batch7, fallback_invoice_portal, fallback_timesheet_script
from .builder import Run
from .coding import coding_format_price_failed, coding_pagination_fix, oncall_checkout_running
from .support import inbox_triage_overflow, refund_defective_backpack, shipment_status_retries, support_account_locked
from .travel import flight_bos_sfo_a, flight_bos_sfo_b, travel_denver_offsite
from .web import browser_change_address, docs_crawl_gap, multi_agent_competitor_brief

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
