"""The report's scenarios that read the property table: ``validation``, ``float16``, ``properties`` and ``causal-lm``.

Each runs records of the table (parity/table/rows/) on a target, their explicit examples first: the corners
the suite runs as ``@example``s (covering-array rows, upstream triggers, the declared bad input), from the same
declaration (parity/suite/collect.py reads it too), every record's before any record draws (docs/report.md,
Scenarios). So a bug the suite's corners catch fails the report on purpose, never by a lucky draw.

* ``validation``: the ``validation/*`` records, the bad input a target must refuse; the declared names are the
  whole space, so nothing is drawn;
* ``float16``: the whole-run record's float16 corners under ``TrainingArguments(fp16=True)``, with the loss
  scaling accelerate sets up on CUDA (given to the CPU: parity.training.diffusion.drivers.loss_scaling), skipped steps included;
* ``properties``: every other record, its corners, then ``--examples`` drawn ones (a training-sized record its
  ``examples_fraction`` of them, at least one), derandomized, unshrunk.

It lives in the table, the floor above the report, because the report may import the training and dataset
wings but never the table it would need to read (docs/design.md, Layout); the CLI hands it to
:func:`parity.report.scenarios.run_report` with the report's own scenarios (:data:`ALL_SCENARIOS`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

from parity.report.model import Column, Options, ScenarioResult
from parity.report.scenarios import SCENARIOS, Scenario, first_line
from parity.safety.crash import is_known
from parity.table.hunt import Hunt
from parity.table.record import Property
from parity.table.rows import PROPERTIES, properties_for
from parity.targets import Target

#: The record whose float16 corners the ``float16`` scenario runs.
WHOLE_RUN = "training/any-run-matches"


def _is_float16(arguments) -> bool:
    return getattr(arguments.get("case"), "dtype", None) == "float16"


@dataclass(frozen=True)
class TableScenario:
    """A report scenario made of records of the table."""

    name: str
    title: str
    budget: str
    #: The records it runs on a target (before the known-bug rule of :meth:`records_for`).
    records: Callable[[Target], list[Property]]
    #: Draws after the corners (else the corners are the whole space).
    draws: bool
    #: Which explicit examples are its corners (None: all).
    corners: Callable[[dict], bool] | None = None
    #: What the runs need on a device (the float16 scenario: the loss scaled), and what the title then says.
    around: Callable[[str], tuple[AbstractContextManager, str]] | None = None
    #: Whether ``--dtype`` reaches its records: every corner and draw in that dtype, where a record has it.
    typed: bool = False

    def records_for(self, target: Target) -> list[Property]:
        """A target expected to pass runs every record; a known bug those that must catch it, until one does. A
        target expected to fail that no record lists (a user's library registered ``expect="fail"``) runs every
        record whose interface it has, until one catches it, in every scenario: its column is never dropped. A
        built-in known bug listed elsewhere only has no column here but in ``properties``."""
        records = self.records(target)
        if not target.is_known_bug:
            return records
        catching = [prop for prop in records if target.name in prop.catches]
        listed = any(target.name in prop.catches for prop in PROPERTIES)
        return catching or (records if self.name == "properties" or not listed else [])

    def __call__(self, targets: list[Target], options: Options, progress: Callable[[str], None]) -> ScenarioResult:
        context, said = self.around(options.device) if self.around else (nullcontext(), "")
        result = ScenarioResult(self.name, self.title + said, self.budget)
        with context:
            for target in targets:
                records = self.records_for(target)
                if records:
                    result.columns.append(self._column(target, records, options, progress))
        return result

    def _column(self, target: Target, records: list[Property], options: Options, progress) -> Column:
        """Every record's corners, then (for the records whose corners held) the drawn examples; a cell per record."""
        column = Column(target.name, target.expect, True, {})
        corners: dict[str, Hunt | None] = {}
        for prop in records:
            if target.is_known_bug and not all(_holds(found, target) for found in corners.values()):
                column.figures[prop.name] = "-"  # a known bug stops at the first property that catches it
                continue
            progress(f"{self.name}: {target.name} / {prop.name} (corners)")
            corners[prop.name] = self._hunt(column, prop, target, options, drawn=False)
        for prop, found in ((prop, corners.get(prop.name)) for prop in records):
            if found is None:  # not run (a known bug caught before), or the harness raised: its cell is written
                continue
            drawn = None
            if self.draws and _holds(found, target) and not (target.is_known_bug and not column.holds):
                progress(f"{self.name}: {target.name} / {prop.name} (drawn)")
                drawn = self._hunt(column, prop, target, options, drawn=True)
            if prop.name not in column.figures:
                _cell(column, prop, target, found, drawn)
        return column

    def _hunt(self, column: Column, prop: Property, target: Target, options: Options, drawn: bool) -> Hunt | None:
        """The corners alone, or the drawn examples alone; None when the harness itself (or a target's loading) raised:
        the cell says so."""
        try:
            return prop.hunt(
                target.load(prop.interface),
                max_examples=max(1, round(options.examples * prop.examples_fraction)),
                shrink=False,
                explicit=not drawn,
                drawn=drawn,
                corners=self.corners,
                # float32, the default, leaves each corner its own dtype (the bfloat16 corners stay)
                dtype=options.dtype if self.typed and options.dtype != "float32" and options.dtype in prop.dtypes else None,
                device=options.device if options.device in prop.devices else "cpu",
                target=target,
            )
        except Exception as error:  # not a counterexample
            column.figures[prop.name] = f"crashed: {type(error).__name__}: {first_line(error)}"
            column.failures[prop.name] = f"{type(error).__name__}: {error}"
            column.holds = False
            column.diagnosis = column.diagnosis or f"{prop.name} could not run: {type(error).__name__}: {first_line(error, 80)}"
            return None


def _holds(found: Hunt | None, target: Target) -> bool:
    """Nothing failed: no counterexample, no crash but a known one, the harness did not raise."""
    return found is not None and not found.found and (not found.crash or is_known(found.crash_signature, target.known_crashes))


def _ran(corners: Hunt, drawn: Hunt | None) -> str:
    """How much of the record ran: ``53 corners, 3 drawn`` (``1 declined`` where the target or device declined)."""
    said = f"{corners.explicit_run} corner{'s' if corners.explicit_run != 1 else ''}" if corners.explicit_total else "no corners"
    said += f" ({corners.explicit_declined} declined)" if corners.explicit_declined else ""
    return said + (f", {drawn.drawn_run} drawn" if drawn is not None else "")


def _cell(column: Column, prop: Property, target: Target, corners: Hunt, drawn: Hunt | None) -> None:
    """The record's row of the column: a short cell; the failure or notes in full beside it."""
    # What decides the cell: a failure, else a (known) crash, corners first; else it holds.
    found = next((hunt for hunt in (drawn, corners) if hunt is not None and not _holds(hunt, target)), None)
    found = found or next((hunt for hunt in (corners, drawn) if hunt is not None and hunt.crash), None)
    where = (f"corner {{}} of {corners.explicit_total}" if found is corners
             else f"drawn example {{}} ({corners.explicit_run} corners held)")
    if found is None:
        notes = [*corners.notes, *(note for note in (drawn.notes if drawn else ()) if note not in corners.notes)]
        column.figures[prop.name] = f"holds: {_ran(corners, drawn)}" + (f"; note: {first_line(notes[0])}" if notes else "")
        if notes:
            column.notes[prop.name] = notes
    elif found.found:
        column.figures[prop.name] = f"FAILS at {where.format(found.examples_to_failure)}: {first_line(found.message)}"
        column.failures[prop.name] = f"{found.message}\nFalsifying example: {found.counterexample}"
        column.holds = False
        column.diagnosis = column.diagnosis or f"{prop.name}: {_diagnosis(found.message)}"
    else:  # the target raised (docs/dataset.md, Crashes): a failure unless it is a known one
        known = is_known(found.crash_signature, target.known_crashes)
        column.figures[prop.name] = (f"crashed{' (known)' if known else ''} at {where.format(found.examples_to_crash)}: "
                                     f"{first_line(found.crash)}")
        if not known:
            column.failures[prop.name] = f"{found.crash}\nFalsifying example: {found.crash_counterexample}"
            column.holds = False
            column.diagnosis = column.diagnosis or f"{prop.name}: {first_line(found.crash, 100)}"


def _diagnosis(message: str) -> str:
    """A property's failure in one sentence: the diagnosis its verdict leads with (``kinds: diagnosis``
    on the first line of a ``ParityFailure``), else the message's first line."""
    first = str(message).strip().splitlines()[0] if str(message).strip() else ""
    _kinds, colon, rest = first.partition(": ")
    return rest if colon and rest else first_line(message, 100)


def _of_scenario(name: str) -> Callable[[Target], list[Property]]:
    return lambda target: [prop for prop in properties_for(target) if prop.scenario == name]


def _whole_run(target: Target) -> list[Property]:
    return [prop for prop in PROPERTIES if prop.name == WHOLE_RUN and prop.applies_to(target)]


validation_scenario = TableScenario(
    "validation",
    "the bad input every target must refuse (parity/strategies/bad_input.py): every declared value, nothing drawn",
    "refused: the declared exception (any, for a trainer); accepting it fails",
    _of_scenario("validation"),
    draws=False,
)
properties_scenario = TableScenario(
    "properties",
    "every property of the table: its corners (explicit examples), every property's first, then --examples drawn "
    "(a training-sized property its share, at least 1; derandomized, no shrinking)",
    "each property's own (bitwise for datasets; docs/budget.md for training maths)",
    _of_scenario("properties"),
    draws=True,
)


causal_scenario = TableScenario(
    "causal-lm",
    "causal-LM training held to the window rule (docs/causal-lm.md): each causal-LM trainer and loop on the corners "
    "of the case space, one rank and two (the two-rank corners in one launch), then its share of drawn cases; each "
    "dataset target feeding impl's causal-LM trainer; every case in --dtype",
    "loss, every gradient and parameter after every step, docs/budget.md; a dataset's wrong loss mask as a wrong count",
    _of_scenario("causal-lm"),
    draws=True,
    typed=True,
)


def _loss_scaled(device: str) -> tuple[AbstractContextManager, str]:
    """The loss scaled as ``fp16=True`` scales it on CUDA; on the CPU through torch's own CPU ``GradScaler`` and
    float16 autocast, given to accelerate as it sets them up on CUDA (docs/budget.md, float16), and said so."""
    from parity.devices import LOSS_SCALING_DEVICES
    from parity.training.diffusion.drivers.loss_scaling import loss_scaled

    said = "" if device in LOSS_SCALING_DEVICES else (
        f"; on the {device} through torch's {device} GradScaler and float16 autocast, as accelerate sets them up on cuda")
    return loss_scaled(device), said


float16_scenario = TableScenario(
    "float16",
    "the whole run's float16 corners: TrainingArguments(fp16=True), autocast over float32 weights, dynamic loss "
    "scaling; steps judged and a step the scaler skips",
    "per tensor, every judged step, float16's budget; a skipped step's parameters unmoved (docs/budget.md, float16)",
    _whole_run,
    draws=False,
    corners=_is_float16,
    around=_loss_scaled,
)


#: Every scenario of ``python -m parity``, in the order the report shows them.
ALL_SCENARIOS = {
    **SCENARIOS,
    "validation": Scenario("validation", "any", validation_scenario),
    "float16": Scenario("float16", "trainer", float16_scenario),
    "properties": Scenario("properties", "any", properties_scenario),
    "causal-lm": Scenario("causal-lm", "any", causal_scenario),
}
