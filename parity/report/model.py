"""What the report holds, whatever it is rendered as: per scenario a column per target, its verdict,
and every failure in full.

The text, Markdown and HTML renderings (parity/report/text.py, markdown.py, html.py)
read only this: a table whose cells stay short, each failing cell marked ``[n]``, and under it the
numbered failures and notes with the whole message, the same text pytest prints for the check.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

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
        notes={VERDICT_ROW: notes} if notes else {}, comparisons=verdict.comparisons,
    )


def oracle_column(figures: dict[str, Any]) -> Column:
    """The reference's own figures beside the targets'; it has no verdict of its own."""
    return Column(ORACLE, "reference", None, figures)


@dataclass(frozen=True)
class Entry:
    """A failure or a note under a table, numbered; its cell carries ``[number]``."""

    number: int
    column: Column
    row: str
    text: str
    is_failure: bool

    @property
    def heading(self) -> str:
        """``known-bug:local-mean, diffusion/window-parity: failure (caught)``."""
        where = self.column.name if self.row == VERDICT_ROW else f"{self.column.name}, {self.row}"
        if not self.is_failure:
            return f"{where}: note"
        return f"{where}: failure ({'caught' if self.column.as_expected else 'UNEXPECTED'})"


def entries(result: ScenarioResult) -> list[Entry]:
    """Every failure and note of the scenario, column by column, in row order, numbered from 1."""
    found = []
    for column in result.columns:
        rows = [*column.figures, VERDICT_ROW]
        for row in rows:
            if row in column.failures:
                found.append((column, row, column.failures[row], True))
            found += [(column, row, note, False) for note in column.notes.get(row, ())]
    return [Entry(number, *entry) for number, entry in enumerate(found, start=1)]


def fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.9g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.3e}"
    if value is None:
        return "-"
    return str(value)


def table(result: ScenarioResult) -> tuple[list[str], list[list[str]]]:
    """Header and rows: a row per figure, then the verdict; a cell with failures or notes ends in ``[n]``."""
    marks: dict[tuple[str, str], list[str]] = {}
    for entry in entries(result):
        marks.setdefault((entry.column.name, entry.row), []).append(f"[{entry.number}]")

    def cell(column: Column, row: str, text: str) -> str:
        return " ".join([text, *marks.get((column.name, row), [])])

    rows = list(dict.fromkeys(key for column in result.columns for key in column.figures))
    body = [[row, *(cell(c, row, fmt(c.figures.get(row))) for c in result.columns)] for row in rows]
    body.append([VERDICT_ROW, *(cell(c, VERDICT_ROW, c.verdict) for c in result.columns)])
    return ["", *(c.name for c in result.columns)], body


def unexpected(results: list[ScenarioResult]) -> list[str]:
    """``scenario/column`` of every verdict that is not what its target expects."""
    return [f"{r.name}/{c.name}" for r in results for c in r.columns if not c.as_expected]


def verdict_line(results: list[ScenarioResult]) -> str:
    """The overall verdict, one line: what the exit status says."""
    wrong = unexpected(results)
    if not wrong:
        return "parity: every impl column holds and every known bug is caught"
    return f"parity: UNEXPECTED verdicts in {', '.join(wrong)}"


def as_json(results: list[ScenarioResult], options: Options) -> str:
    """The verdicts, figures and failures (the comparisons behind the plots stay out)."""
    plain = ("name", "expect", "holds", "figures", "error", "crashed", "known_crash", "failures", "notes")
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
        },
        indent=2,
        default=str,
    )
