"""What the commands print with: JSON for scripts, values and tables for people.

Light on purpose (orjson; rich only when something is printed for people): a plain `stats` prints
through it before Typer, rich's console or the Store are imported (fast_stats.py).
"""

import sys
from typing import Any

import orjson


def print_json(value: Any) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode() + "\n")


def fmt(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4f}"
    if hasattr(value, "strftime"):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def make_console(**options):
    from rich.console import Console

    return Console(highlight=False, markup=False, **options)


STATS_HEADINGS = {
    "success_rate": "success",
    "p50_ms": "p50 run s",
    "p95_ms": "p95 run s",
    "tokens_in": "tokens in",
    "tokens_out": "tokens out",
    "cost_usd": "cost $",
    "retry_rate": "retry",
    "tool_failure_rate": "tool fail",
    "fallback_rate": "fallback",
}


def stat(name: str, value: Any) -> str:
    if value is None:
        return "—"
    if name.endswith("_rate"):
        return f"{value:.1%}"
    if name.endswith("_ms"):
        return f"{value / 1000:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    return fmt(value)


def show_stats(items: list[dict], by: str | None, json: bool, console=None) -> None:
    """`stats`' output; the console is made only for a table or "no runs" (rich's import: half of a fast `stats --json`)."""
    if json:
        print_json(items if by else items[0])
        return
    console = console or make_console(soft_wrap=True)
    if not items:
        console.print("no runs")
        return
    from rich.table import Table

    if by is None:  # one group: a metric a line
        table = Table("metric", "value")
        for k, v in items[0].items():
            table.add_row(STATS_HEADINGS.get(k, k), stat(k, v))
    else:
        table = Table(*(STATS_HEADINGS.get(k, k) for k in items[0]))
        for item in items:
            table.add_row(*(stat(k, v) for k, v in item.items()))
    console.print(table)


def when(value: Any) -> str:
    return "time not recorded" if value is None else fmt(value)


def readable_table(*columns: str, fixed: tuple[str, ...] = ()):
    """A rich Table for people at any width: `fixed` columns (statuses, numbers, times) keep their width,
    the others fold onto more lines. Nothing is cut to "open…": a value is read whole or not shown
    (commands show fewer columns by default, the rest with --wide or --json)."""
    from rich.table import Table

    table = Table()
    for name in columns:
        if name in fixed:
            table.add_column(name, no_wrap=True, min_width=len(name))
        else:
            table.add_column(name, overflow="fold")
    return table


def unique_prefixes(ids: list[str], shortest: int) -> dict[str, str]:
    """Each id -> its shortest prefix (at least `shortest` characters) that no other id starts with."""
    ordered = sorted(set(ids))
    out = {}
    for i, value in enumerate(ordered):
        neighbours = [ordered[j] for j in (i - 1, i + 1) if 0 <= j < len(ordered)]  # in sorted order, only these can share more
        common = max((_common(value, n) for n in neighbours), default=0)
        out[value] = value[: max(shortest, common + 1)]
    return out


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class AmbiguousPrefix(ValueError):
    """A prefix several ids start with (or none)."""


def resolve_prefix(given: str, ids: list[str], what: str) -> str:
    """The id `given` names: itself, or the one id it is a prefix of."""
    if given in ids:
        return given
    found = [i for i in ids if i.startswith(given)]
    if len(found) == 1:
        return found[0]
    if not found:
        raise AmbiguousPrefix(f"no {what} {given!r}")
    raise AmbiguousPrefix(f"{given!r} starts {len(found)} {what} ids ({', '.join(sorted(found)[:5])}…): give more of it")
