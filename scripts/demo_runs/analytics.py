"""SQL analyst runs, one good and one failed (11, 12)."""

from __future__ import annotations

from .builder import Run, at

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
    run.result(
        c,
        {"schema": "analytics", "tables": ["customers", "fx_rates", "order_items", "orders", "refunds", "regions"]},
        latency=(60, 150),
    )
    c1 = run.call("describe_table", {"table": "analytics.orders"})
    c2 = run.call("describe_table", {"table": "analytics.refunds"})
    run.result(
        c1,
        {
            "columns": [
                ["order_id", "bigint"],
                ["customer_id", "bigint"],
                ["region_id", "integer"],
                ["created_at", "timestamptz"],
                ["status", "text"],
                ["total_usd", "numeric(12,2)"],
            ]
        },
        latency=(60, 150),
    )
    run.result(
        c2,
        {
            "columns": [
                ["refund_id", "bigint"],
                ["order_id", "bigint"],
                ["amount_usd", "numeric(12,2)"],
                ["refunded_at", "timestamptz"],
            ]
        },
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
        "Week-over-week: APAC +4.7%, EMEA -3.6%, LATAM -7.5%, North America +4.7%. Total $2,050,410.88 vs $2,002,079.48, +2.4%."
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
    run.user("How many customers churned in Q3 2026, by plan? Churn = subscription cancelled and not reactivated within 30 days.")
    run.think("Count cancelled subscriptions in Q3 grouped by plan name.")
    c = run.call(
        "run_sql",
        {
            "query": "SELECT plan_name, COUNT(*) FROM analytics.subscriptions WHERE cancelled_at >= '2026-07-01' AND cancelled_at < '2026-10-01' GROUP BY plan_name"
        },
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
    run.result(
        c,
        "ERROR:  canceling statement due to statement timeout (30000 ms)",
        status="error",
        error_class="QueryTimeout",
        latency_ms=30_000,
    )
    run.think(
        "subscription_events is large. Pre-filter events to reactivations between Jul 1 and Oct 31 in a CTE and anti-join on it."
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
    run.result(
        c,
        "ERROR:  canceling statement due to statement timeout (30000 ms)",
        status="error",
        error_class="QueryTimeout",
        latency_ms=30_000,
    )
    run.error(
        "Giving up after 3 failed queries: the reactivation check over analytics.subscription_events (about 410M "
        "rows, no index on (type, at)) exceeds the 30 s statement timeout. A pre-aggregated churn table or an "
        "index on subscription_events(type, at) is needed.",
        "QueryTimeout",
    )
    run.end("failed", "No answer: churn query exceeded the 30 s statement timeout twice", "QueryTimeout")
    return run
