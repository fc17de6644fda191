"""What the report holds, whatever it is rendered as: per scenario a column per target, its verdict,
and every failure in full.

The text, Markdown and HTML renderings (parity/report/text.py, markdown.py, html.py)
read only this: a table whose cells stay short, each failing cell marked ``[n]``, and under it the
numbered failures and notes with the whole message, the same text pytest prints for the check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from parity.targets import default_targets

ORACLE = "oracle"
#: The row of a failure that is the whole column's (a run or a scenario, not one property or case).
VERDICT_ROW = "verdict"


@dataclass(frozen=True)
class Options:
    device: str = "cpu"
    dtype: str = "float32"
    seed: int = 0
    ddp: bool = False
    #: Random examples per property of the table in the ``properties`` scenario (after its explicit ones).
    examples: int = 3
    #: The oracle model's provenance when it is NVIDIA's remote code: its commit and each file's sha256
    #: (``oracle.remote_source.RemoteCodeSource.describe``); empty for the built-in model.
    oracle: tuple[str, ...] = ()
    #: The targets under test, in the order named (``--target``; ``impl`` when none is): their columns
    #: come first and in full; every other column is a control, summarised in a line unless unexpected.
    under_test: tuple[str, ...] = ("impl",)
    #: Show the controls in full in the terminal too (``--controls``); the files always hold them.
    controls: bool = False


@dataclass
class Column:
    """One target's (or the oracle's) figures for a scenario and its verdict."""

    name: str
    expect: str  # "pass", "fail", or "reference" for the oracle
    holds: bool | None
    figures: dict[str, Any]
    error: str | None = None  # the scenario failed to build or run: never as expected
    #: "the target raised ..." (docs/dataset.md, Crashes): a crash, not a verdict on the property;
    #: as expected only when it is one of the target's ``known_crashes``.
    crashed: str | None = None
    known_crash: bool = False
    #: Row (a figure's name, or ``VERDICT_ROW``) -> the failure's whole message, as the check raised it.
    failures: dict[str, str] = field(default_factory=dict)
    #: Row -> what a passing check noted (hazards, precision findings), each in full.
    notes: dict[str, list[str]] = field(default_factory=dict)
    #: The verdict's tensor comparisons (``parity.budget.Comparison``), for the HTML page's plots.
    comparisons: list = field(default_factory=list, repr=False)
    #: Dataset columns: key -> (samples x positions) booleans, where a served sample differed from the oracle's.
    differences: dict[str, Any] = field(default_factory=dict, repr=False)
    #: Distributed columns: case -> its worst error over budget (the cases' plot).
    worst_ratios: dict[str, float] = field(default_factory=dict, repr=False)
    #: Dataset columns: the index a resumed run served first (the padded sample whose mask the cache keeps).
    served_first: int | None = None
    #: What is wrong, in one sentence (``parity.compare.Verdict.diagnosis``); None when it holds.
    diagnosis: str | None = None
    #: A built-in column beside the targets under test (impl, a known bug): summarised unless unexpected.
    control: bool = False

    @property
    def as_expected(self) -> bool:
        if self.error is not None:
            return False
        if self.crashed is not None:
            return self.known_crash
        return self.expect == "reference" or self.holds == (self.expect == "pass")

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "error (UNEXPECTED)"
        if self.crashed is not None:
            return "crashed (known upstream crash)" if self.known_crash else "crashed (UNEXPECTED)"
        if self.expect == "reference":
            return "reference"
        state = "within budget" if self.holds else "outside budget"
        meaning = {True: "ok" if self.expect == "pass" else "caught", False: "UNEXPECTED"}[self.as_expected]
        return f"{state} ({meaning})"


@dataclass
class ScenarioResult:
    name: str
    title: str
    budget: str
    columns: list[Column] = field(default_factory=list)

    @property
    def as_expected(self) -> bool:
        return all(column.as_expected for column in self.columns)


def verdict_column(target, verdict, figures: dict[str, Any]) -> Column:
    """A target's column judged by a ``parity.compare.Verdict``: the failure as ``assert_verdict``
    raises it (the text pytest prints for the property), a passing verdict's precision notes, the
    comparisons for the plots."""
    from parity.compare import ParityFailure

    notes = [comparison.describe() for comparison in verdict.notes]
    notes += [verdict.uninformative] if verdict.holds and verdict.uninformative else []
    return Column(
        target.name, target.expect, verdict.holds, figures,
        failures={} if verdict.holds else {VERDICT_ROW: str(ParityFailure(verdict))},
        notes={VERDICT_ROW: notes} if notes else {}, comparisons=verdict.comparisons, diagnosis=verdict.diagnosis,
    )


def oracle_column(figures: dict[str, Any]) -> Column:
    """The reference's own figures beside the targets'; it has no verdict of its own."""
    return Column(ORACLE, "reference", None, figures)


@dataclass(frozen=True)
class Entry:
    """A failure, or a cell's notes, under a table, numbered; its cell carries ``[number]``."""

    number: int
    column: Column
    row: str
    text: str
    is_failure: bool
    #: How many notes the text holds (one per line group); 1 for a failure.
    count: int = 1

    @property
    def heading(self) -> str:
        """``known-bug:local-mean, diffusion/window-parity: failure (caught)``, or ``impl: 20 notes``."""
        where = self.column.name if self.row == VERDICT_ROW else f"{self.column.name}, {self.row}"
        if not self.is_failure:
            return f"{where}: {self.count} note{'s' if self.count > 1 else ''}"
        return f"{where}: failure ({'caught' if self.column.as_expected else 'UNEXPECTED'})"


def controls_only(result: ScenarioResult) -> bool:
    """A scenario no target under test ran in, every control in it as expected: nothing to act on there."""
    compared = [c for c in result.columns if c.expect != "reference"]
    return bool(compared) and all(c.control and c.as_expected for c in compared)


def reading_order(results: list[ScenarioResult]) -> tuple[list[ScenarioResult], list[ScenarioResult]]:
    """The scenarios of the targets under test (and any with an unexpected control), in their order; then
    those of the controls alone, which every rendering shows after all of them, collapsed."""
    return [r for r in results if not controls_only(r)], [r for r in results if controls_only(r)]


def shown_columns(result: ScenarioResult, controls: bool = True) -> list[Column]:
    """The columns a rendering shows in full: every one with ``controls``; else the targets under
    test, the oracle, and any control whose verdict is unexpected."""
    return [c for c in result.columns if controls or not c.control or not c.as_expected]


def entries(result: ScenarioResult, columns: list[Column] | None = None) -> list[Entry]:
    """Every failure, and each cell's notes together, of the scenario (of ``columns``, default all),
    column by column, in row order, numbered from 1."""
    found = []
    for column in result.columns if columns is None else columns:
        rows = [*column.figures, VERDICT_ROW]
        for row in rows:
            if row in column.failures:
                found.append((column, row, column.failures[row], True))
            if notes := column.notes.get(row):
                found.append((column, row, "\n".join(notes), False, len(notes)))
    return [Entry(number, *entry) for number, entry in enumerate(found, start=1)]


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.9g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    if value is None:
        return "-"
    return str(value)


def table(result: ScenarioResult, columns: list[Column] | None = None) -> tuple[list[str], list[list[str]]]:
    """Header and rows: a row per figure, then the verdict; a cell with failures or notes ends in ``[n]``.
    ``columns``: the columns shown (default all), numbered as :func:`entries` numbers them."""
    columns = result.columns if columns is None else columns
    marks: dict[tuple[str, str], list[str]] = {}
    for entry in entries(result, columns):
        marks.setdefault((entry.column.name, entry.row), []).append(f"[{entry.number}]")

    def cell(column: Column, row: str, text: str) -> str:
        return " ".join([text, *marks.get((column.name, row), [])])

    rows = list(dict.fromkeys(key for column in columns for key in column.figures))
    body = [[row, *(cell(c, row, fmt(c.figures.get(row))) for c in columns)] for row in rows]
    body.append([VERDICT_ROW, *(cell(c, VERDICT_ROW, c.verdict) for c in columns)])
    return ["", *(c.name for c in columns)], body


def unexpected(results: list[ScenarioResult]) -> list[tuple[ScenarioResult, Column]]:
    """Every (scenario, column) whose verdict is not what its target expects: the targets under test
    first, then the controls, each in scenario order."""
    wrong = [(r, c) for r in results for c in r.columns if not c.as_expected]
    return sorted(wrong, key=lambda pair: pair[1].control)


def verdict_line(results: list[ScenarioResult]) -> str:
    """The overall verdict, one line: what the exit status says; where it is unexpected, by column
    (the targets under test first), each with the scenarios it is unexpected in."""
    wrong = unexpected(results)
    if not wrong:
        named = list(dict.fromkeys(c.name for r in results for c in r.columns if not c.control and c.expect != "reference"))
        controls = any(c.control for r in results for c in r.columns)
        if not named:  # no column of the targets under test ran: claim nothing of them
            return "parity: no column of the targets under test ran" + (
                "; the controls are as expected" if controls else "")
        if set(named) <= _shipped() and controls:
            return "parity: every impl column holds and every known bug is caught"
        says = ", ".join(f"{name} {'holds' if _expects_pass(results, name) else 'is caught'}" for name in named)
        return f"parity: {says}" + ("; the controls are as expected (impl holds, every known bug is caught)" if controls else "")
    by_column: dict[str, list[str]] = {}
    for result, column in wrong:
        by_column.setdefault(column.name, []).append(result.name)
    return "parity: UNEXPECTED verdicts in " + "; ".join(f"{name} ({', '.join(where)})" for name, where in by_column.items())


def _shipped() -> set[str]:
    """The columns of the repository's own code (impl's dataset, loss and trainer, the logits trainer): "impl"."""
    return {target.name for target in default_targets().values() if not target.is_known_bug}


def _expects_pass(results: list[ScenarioResult], name: str) -> bool:
    return next(c.expect for r in results for c in r.columns if c.name == name) == "pass"


def diagnoses(results: list[ScenarioResult]) -> list[str]:
    """``column, scenario: what is wrong`` for every unexpected verdict that has a diagnosis (a column
    expected to fail that holds says so instead): what the first screen shows under the verdict."""
    lines = []
    for result, column in unexpected(results):
        if column.error is not None:
            what = column.error
        elif column.holds and column.expect == "fail":
            what = "holds, but this target is expected to fail: the properties no longer catch it"
        else:
            what = column.diagnosis or "see its failure below"
        lines.append(f"{column.name}, {result.name}: {what}")
    return lines


def as_json(results: list[ScenarioResult], options: Options, third_party: Mapping[tuple[str, str], int] | None = None) -> str:
    """The verdicts, figures and failures (the comparisons behind the plots stay out), and the third-party
    warnings counted while the scenarios ran (``parity.safety.third_party``), one entry per distinct message."""
    plain = ("name", "expect", "holds", "figures", "error", "crashed", "known_crash", "failures", "notes", "diagnosis",
             "control")
    return json.dumps(
        {
            "options": asdict(options),
            "as_expected": all(r.as_expected for r in results),
            "scenarios": [
                {
                    "name": r.name,
                    "title": r.title,
                    "budget": r.budget,
                    "columns": [{key: getattr(c, key) for key in plain} for c in r.columns],
                    "as_expected": r.as_expected,
                    "verdicts": {c.name: c.verdict for c in r.columns},
                }
                for r in results
            ],
            "third_party_messages": [{"source": source, "message": message, "count": number}
                                     for (source, message), number in sorted((third_party or {}).items())],
        },
        indent=2,
        default=str,
    )
