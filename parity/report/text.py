"""The report in a terminal: the verdict first, a table per scenario within ``WIDTH`` columns, and
under each table its failures and notes in full (wrapped, never cut)."""

from __future__ import annotations

from parity.report.model import ScenarioResult, entries, table, verdict_line
from parity.report.text_table import indented, text_table

#: No line of the report is longer, whatever the number of targets.
WIDTH = 120


def _entries(result: ScenarioResult, failures_only: bool = False, unexpected_only: bool = False) -> list[str]:
    shown = [
        e for e in entries(result)
        if (e.is_failure or not failures_only) and (not unexpected_only or not e.column.as_expected)
    ]
    return [f"{indented(f'[{e.number}] {e.heading}', '', WIDTH)}\n{indented(e.text, '    ', WIDTH)}" for e in shown]


def format_scenario(result: ScenarioResult) -> str:
    if not result.columns:  # a scenario that did not run: its title says why
        return indented(f"== {result.name}: {result.title}", "", WIDTH)
    header, body = table(result)
    parts = [
        indented(f"== {result.name}: {result.title}", "", WIDTH),
        indented(f"budget: {result.budget}", "   ", WIDTH),
        text_table(header, body, width=WIDTH),
    ]
    listed = _entries(result)
    if listed:
        parts += ["", *listed]
    return "\n".join(parts)


def format_report(results: list[ScenarioResult], quiet: bool = False) -> str:
    """Everything, or with ``quiet`` the verdict line and the unexpected failures in full."""
    verdict = indented(verdict_line(results), "", WIDTH)
    if quiet:
        unexpected = [
            f"== {r.name}\n" + "\n".join(listed)
            for r in results
            if (listed := _entries(r, failures_only=True, unexpected_only=True))
        ]
        return "\n\n".join([verdict, *unexpected])
    return "\n\n".join([verdict, *(format_scenario(result) for result in results), verdict])
