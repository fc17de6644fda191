"""The report's ``properties`` scenario: every record of the property table on a small random budget.

It lives in the table, the floor above the report, because the report may import the training and
dataset wings but never the table it would need to read (docs/design.md, Layout); the CLI hands it to
:func:`parity.report.scenarios.run_report` with the report's own scenarios (:data:`ALL_SCENARIOS`).
"""

from __future__ import annotations

from collections.abc import Callable

from parity.report.model import Column, Options, ScenarioResult
from parity.report.scenarios import SCENARIOS, Scenario, first_line
from parity.safety.crash import is_known
from parity.table.rows import catching, properties_for
from parity.targets import Target


def properties_scenario(targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
    """The whole property suite in miniature, so a break the suite can find fails the report too.

    A target expected to pass runs every property it has the interface for: the explicit examples,
    then ``options.examples`` drawn ones. A known bug runs the properties that must catch it, until
    one does. A cell says how many examples held, or the first line of the failure and its kind.
    """
    result = ScenarioResult(
        "properties",
        f"every property of the table: explicit examples + {options.examples} drawn (derandomized, no shrinking)",
        "each property's own (bitwise for datasets; docs/budget.md for training maths)",
    )
    for target in targets:
        table = properties_for(target)
        if target.is_known_bug:
            table = [prop for prop in catching(target.name) if prop.applies_to(target)] or table
        if not table:
            continue
        column = Column(target.name, target.expect, True, {})
        for prop in table:
            if not column.holds and target.is_known_bug:
                column.figures[prop.name] = "-"
                continue
            progress(f"properties: {target.name} / {prop.name}")
            _property_cell(column, prop, target, options)
        result.columns.append(column)
    return result


def _property_cell(column: Column, prop, target: Target, options: Options) -> None:
    """The property's row of the column: a short cell; the failure or notes in full beside it."""
    try:
        found = prop.hunt(
            target.load(prop.interface),
            max_examples=options.examples,
            shrink=False,
            device=options.device if options.device in prop.devices else "cpu",
            target=target,
        )
    except Exception as error:  # the harness (or a target's loading) raised: not a counterexample
        column.figures[prop.name] = f"crashed: {type(error).__name__}: {first_line(error)}"
        column.failures[prop.name] = f"{type(error).__name__}: {error}"
        column.holds = False
        column.diagnosis = column.diagnosis or f"{prop.name} could not run: {type(error).__name__}: {first_line(error, 80)}"
        return
    if found.found:
        column.figures[prop.name] = f"FAILS at example {found.examples_to_failure}: {first_line(found.message)}"
        column.failures[prop.name] = f"{found.message}\nFalsifying example: {found.counterexample}"
        column.holds = False
        column.diagnosis = column.diagnosis or f"{prop.name}: {_diagnosis(found.message)}"
    elif found.crash:  # the target raised (docs/dataset.md, Crashes): a failure unless it is a known one
        known = is_known(found.crash_signature, target.known_crashes)
        column.figures[prop.name] = f"crashed{' (known)' if known else ''}: {first_line(found.crash)}"
        if not known:
            column.failures[prop.name] = f"{found.crash}\nFalsifying example: {found.crash_counterexample}"
            column.holds = False
            column.diagnosis = column.diagnosis or f"{prop.name}: {first_line(found.crash, 100)}"
    else:
        column.figures[prop.name] = f"holds; note: {first_line(found.notes[0])}" if found.notes else "holds"
        if found.notes:
            column.notes[prop.name] = list(found.notes)


def _diagnosis(message: str) -> str:
    """A property's failure in one sentence: the diagnosis its verdict leads with (``kinds: diagnosis``
    on the first line of a ``ParityFailure``), else the message's first line."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else ""
    _kinds, colon, rest = first.partition(": ")
    return rest if colon and rest else first_line(message, 100)


#: Every scenario of ``python -m parity``, in the order the report shows them.
ALL_SCENARIOS = {**SCENARIOS, "properties": Scenario("properties", "any", properties_scenario)}
