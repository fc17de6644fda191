"""The report in a terminal: the verdict first, with what is wrong under it; then a table per
scenario within ``WIDTH`` columns, the targets under test in full and the controls in a line each.

What a reader acts on comes first (docs/report.md, Reading the report): the verdict line, one
diagnosis per unexpected verdict, then per scenario the columns under test (a control only when it
is unexpected, or with ``controls``), their failures in full (wrapped, never cut; repeated lines
collapsed to one), and notes counted in one line each: the files hold them in full.
"""

from __future__ import annotations

import re

from parity.report.model import (
    Column,
    Entry,
    ScenarioResult,
    diagnoses,
    entries,
    reading_order,
    shown_columns,
    table,
    verdict_line,
)
from parity.report.text_table import indented, text_table

#: No line of the report is longer, whatever the number of targets.
WIDTH = 120
#: Above the scenarios in which only the built-in controls ran, after every scenario of the targets under test.
CONTROLS_HEADING = "== the controls' own scenarios (no target under test runs in them; every control as expected)"


def collapse_repeats(text: str) -> str:
    """Runs of lines that differ in one number only become the first line and the others' numbers:
    ``dataset[1] of a resumed run ... got 0.0, reference 1.0  (the same for 2, 4, 5, 6)``. Lines that
    differ in more (another tensor, another error) all stay."""
    lines = text.splitlines()
    kept, k = [], 0
    while k < len(lines):
        varying = _one_number_apart(lines[k], lines[k + 1]) if k + 1 < len(lines) else None
        if varying is None:
            kept.append(lines[k])
            k += 1
            continue
        end, others = k + 1, []
        while end < len(lines) and _one_number_apart(lines[k], lines[end]) == varying:
            others.append(re.findall(r"\d+", lines[end])[varying])
            end += 1
        kept.append(f"{lines[k]}  (the same for {', '.join(others)})")
        k = end
    return "\n".join(kept)


def _one_number_apart(first: str, other: str) -> int | None:
    """The position of the one number in which two lines differ, if that is all they differ in."""
    if re.sub(r"\d+", "#", first) != re.sub(r"\d+", "#", other):
        return None
    apart = [n for n, (a, b) in enumerate(zip(re.findall(r"\d+", first), re.findall(r"\d+", other), strict=True)) if a != b]
    return apart[0] if len(apart) == 1 else None


def _entry(entry: Entry) -> str:
    heading = indented(f"[{entry.number}] {entry.heading}", "", WIDTH)
    if not entry.is_failure:  # notes do not decide the verdict: counted here, in full in the files
        return heading
    return f"{heading}\n{indented(collapse_repeats(entry.text), '    ', WIDTH)}"


def control_line(column: Column) -> str:
    """A control in a line (wrapped if its diagnosis is long): ``control NAME: caught as expected (...)``."""
    if column.holds and column.expect == "pass":
        said = "holds as expected"
    elif column.crashed is not None:
        said = "crashed as expected (a known upstream crash)"
    else:
        said = "caught as expected"
    why = f" ({column.diagnosis})" if column.diagnosis and not column.holds else ""
    return indented(f"control {column.name}: {said}{why}", "  ", WIDTH)


def format_scenario(result: ScenarioResult, controls: bool = False) -> str:
    if not result.columns:  # a scenario that did not run: its title says why
        return indented(f"== {result.name}: {result.title}", "", WIDTH)
    shown = shown_columns(result, controls)
    parts = [
        indented(f"== {result.name}: {result.title}", "", WIDTH),
        indented(f"budget: {result.budget}", "   ", WIDTH),
    ]
    if any(c.expect != "reference" for c in shown):
        header, body = table(result, shown)
        parts.append(text_table(header, body, width=WIDTH))
        listed = [_entry(e) for e in entries(result, shown)]
        if listed:
            parts += ["", *listed]
    summarised = [c for c in result.columns if not any(c is s for s in shown)]
    if summarised:
        parts += ["", *(control_line(c) for c in summarised)]
    return "\n".join(parts)


def format_report(results: list[ScenarioResult], quiet: bool = False, controls: bool = False) -> str:
    """Everything (the controls summarised unless ``controls``), or with ``quiet`` the verdict, its
    diagnoses and the unexpected failures in full."""
    verdict = indented(verdict_line(results), "", WIDTH)
    head = "\n".join([verdict, *(indented(line, "  ", WIDTH) for line in diagnoses(results))])
    if quiet:
        unexpected = [
            f"== {r.name}\n" + "\n".join(listed)
            for r in results
            if (listed := [_entry(e) for e in entries(r, [c for c in r.columns if not c.as_expected]) if e.is_failure])
        ]
        return "\n\n".join([head, *unexpected])
    yours, theirs = reading_order(results)
    collapsed = [CONTROLS_HEADING, *(format_scenario(result, controls) for result in theirs)] if theirs else []
    return "\n\n".join([head, *(format_scenario(result, controls) for result in yours), *collapsed, verdict])
