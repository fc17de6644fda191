"""Hunting a known bug: does the property suite find it, after how many examples and seconds?

Used by the quality self-checks (``tests/quality``) and by ``python -m parity bench``. A hunt runs
a property check under Hypothesis until it fails; the last failing call is the shrunk
counterexample, because Hypothesis replays the minimal failure once more after shrinking.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import seed as fix_seed
from hypothesis import strategies as st
from hypothesis.errors import UnsatisfiedAssumption

from parity.safety.crash import TargetCrashed
from parity.table.run_budget import ShrinkBudget


@dataclass
class Hunt:
    """What one hunt cost: examples and seconds to the first failure, seconds with shrinking."""

    examples_to_failure: int | None = None
    seconds_to_failure: float | None = None
    seconds_total: float = 0.0
    counterexample: str = ""
    #: The (shrunk) failing arguments themselves, as the check received them (``python -m parity repro``).
    failing_args: tuple = ()
    message: str = ""
    #: What the check returned besides passing (hazards, precision notes), each once, in order.
    notes: list[str] = field(default_factory=list)
    #: "the target raised ..." when the target crashed instead (docs/dataset.md, Crashes), and the
    #: (shrunk) arguments it crashed on; a crash is not a counterexample.
    crash: str = ""
    #: ``"ExceptionType at path:line"`` of that crash, what a target's ``known_crashes`` match.
    crash_signature: str = ""
    crash_counterexample: str = ""
    examples_to_crash: int | None = None
    #: The explicit examples given (the corners), those that ran and those the target or the device declined, and
    #: the drawn examples that ran: what the report says of how much of a corner set ran.
    explicit_total: int = 0
    explicit_run: int = 0
    drawn_run: int = 0
    explicit_declined: int = 0

    @property
    def found(self) -> bool:
        return self.examples_to_failure is not None

    def as_report(self) -> dict:
        report = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "failing_args"}
        for key in ("seconds_to_failure", "seconds_total"):
            if report[key] is not None:
                report[key] = round(report[key], 3)
        return report


def hunt(
    check,
    subject,
    arguments: st.SearchStrategy,
    *,
    max_examples: int = 200,
    seed: int | None = None,
    shrink: bool = True,
    examples: Sequence[tuple] = (),
    shrink_runs: int | None = None,
    drawn: bool = True,
) -> Hunt:
    """Run ``check(subject, *args)`` with ``args`` drawn from ``arguments`` until it fails.

    Derandomized when ``seed`` is None (a fixed, repeatable hunt); a given seed varies the search,
    which is how the benchmark takes a median over several hunts. ``shrink=False`` stops at the
    first counterexample, for callers that only need to know it is found. ``examples`` (argument
    tuples) run first, as ``@example``s do; ``drawn=False`` runs them alone. ``shrink_runs``: the runs
    the failure may spend after it is found (``parity.table.run_budget.ShrinkBudget``; None: Hypothesis's
    own limits).
    """
    found = Hunt(explicit_total=len(examples))
    if not drawn and not examples:  # nothing to run (Hypothesis would skip the test)
        return found
    calls = invoked = 0
    budget = ShrinkBudget()
    start = time.perf_counter()

    @settings(
        database=None,
        derandomize=seed is None,
        max_examples=max_examples,
        report_multiple_bugs=False,
        deadline=None,
        phases=[Phase.explicit] if not drawn else list(Phase) if shrink else [
            Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
    )
    @given(arguments)
    def run(args):
        nonlocal calls, invoked
        calls += 1
        invoked += 1
        explicit = invoked <= len(examples)  # Hypothesis runs the explicit examples first, each once
        declined = False
        try:
            notes = check(subject, *args) if shrink_runs is None else budget.run(args, lambda: check(subject, *args), shrink_runs)
            for note in notes or ():
                if note not in found.notes:
                    found.notes.append(note)
        except UnsatisfiedAssumption:
            calls -= 1  # a config the target declined is not an example it ran
            found.explicit_declined += explicit
            declined = True
            raise
        except TargetCrashed as crash:  # the target raised: a crash, not a counterexample
            if not found.crash:
                found.crash = str(crash)
                found.crash_signature = crash.signature
                found.examples_to_crash = calls
            found.crash_counterexample = repr(args)
            raise
        except AssertionError as failure:
            if found.examples_to_failure is None:
                found.examples_to_failure = calls
                found.seconds_to_failure = time.perf_counter() - start
            found.counterexample, found.failing_args = repr(args), args
            found.message = str(failure)
            raise
        finally:
            if not declined:
                found.explicit_run += explicit
                found.drawn_run += not explicit

    for explicit in reversed(examples):
        run = example(explicit)(run)
    if seed is not None:
        run = fix_seed(seed)(run)
    try:
        run()
    except (AssertionError, TargetCrashed):
        pass
    found.seconds_total = time.perf_counter() - start
    return found


class _OutOfTime(Exception):
    """Stops a timing run between examples once its time is up."""


def examples_per_second(check, subject, arguments: st.SearchStrategy, max_examples: int, max_seconds: float) -> dict:
    """Time ``check(subject, *args)`` on up to ``max_examples`` freshly generated examples.

    Generation only (no explicit examples, database or shrinking) and derandomized, so every run
    times the same examples; no new example starts after ``max_seconds``. A failing check raises.
    """
    examples = 0
    start = time.perf_counter()

    @settings(
        max_examples=max_examples,
        phases=[Phase.generate],
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(arguments)
    def run(args):
        nonlocal examples
        if time.perf_counter() - start > max_seconds:
            raise _OutOfTime
        examples += 1
        check(subject, *args)

    try:
        run()
    except _OutOfTime:
        pass
    seconds = time.perf_counter() - start
    return {"examples": examples, "seconds": round(seconds, 3), "examples_per_second": round(examples / seconds, 2)}
