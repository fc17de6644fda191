"""Example and shrink budgets for properties whose examples are training runs.

A whole-run property takes a fraction of the active profile's ``max_examples``, so ``dev`` and
``ci`` stay fast while the ``nightly`` profile scales these properties up with everything else.

What a failing training property costs is held by a count (docs/budget.md, Bounded failure cost):
shrinking a training run costs minutes, so outside the ``nightly`` profile the whole-run property
does not shrink. Hypothesis then stops at the first failing example and reports it as drawn, after
one replay: the runs to the failure (at most this fraction of the examples) plus one. The failure's
own message names the kind of difference. Where a training property does shrink (the window
properties in every profile, the whole-run one in the nightly profile), it spends at most its
``shrink_runs`` after the first failure (:class:`ShrinkBudget`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from hypothesis import HealthCheck, Phase, note, reject, settings

T = TypeVar("T")

#: Profiles that shrink a failing whole-run example (the rest report it unshrunk).
SHRINKING_PROFILES = ("nightly",)


def shrinks_whole_runs() -> bool:
    """Whether the active profile shrinks a failing whole-run example (else it is reported as drawn)."""
    return settings.get_current_profile_name() in SHRINKING_PROFILES


def fraction_of_profile(fraction: float, minimum: int = 3, *, whole_run: bool = True, **overrides) -> settings:
    """The profile with ``fraction`` of its examples (at least ``minimum``); a whole run's also without
    shrinking outside the ``SHRINKING_PROFILES``."""
    examples = max(minimum, int(settings.default.max_examples * fraction))
    phases = tuple(settings.default.phases)
    if whole_run and not shrinks_whole_runs():
        phases = tuple(phase for phase in phases if phase != Phase.shrink)
    return settings(max_examples=examples, phases=phases, **overrides)


def suite_settings(examples_fraction: float, shrink_runs: int | None, whole_run: bool = False) -> settings | None:
    """What a property's test changes of the profile (None: nothing): its share of the examples
    (``examples_fraction`` below 1; a ``whole_run`` one also unshrunk outside nightly), and, for a
    property with a shrink budget, leave for its budget (the suite's ``shrink_budget`` fixture,
    parity/suite/collect.py) to live across the examples of the run (Hypothesis's ``function_scoped_fixture`` health check warns of exactly that,
    which here is the point)."""
    overrides = {}
    if shrink_runs is not None:
        suppressed = (*settings.default.suppress_health_check, HealthCheck.function_scoped_fixture)
        overrides["suppress_health_check"] = suppressed
    if examples_fraction < 1:
        return fraction_of_profile(examples_fraction, whole_run=whole_run, **overrides)
    return settings(**overrides) if overrides else None


#: The window properties' share of the profile's drawn examples: each is a few optimizer steps of the tiny
#: model and its references (0.1 to 0.5 s), and their explicit examples already reach every corner on
#: purpose (parity.strategies.diffusion, SWITCHES), so ``dev`` and ``ci`` draw 5 more and ``nightly`` 200.
WINDOW_EXAMPLES_FRACTION = 0.2
#: Runs a failing window property (each example a few optimizer steps of the tiny model, up to a
#: second each) may spend after its first failure, in every profile.
WINDOW_SHRINK_RUNS = 50
#: Runs a failing whole-run property (each example a Trainer run, several seconds) may spend shrinking,
#: in the profiles that shrink it (``SHRINKING_PROFILES``; elsewhere it reports the case as drawn).
WHOLE_RUN_SHRINK_RUNS = 20


class ShrinkBudget:
    """The runs a failing search may still spend once it has failed, counted by the check itself:
    Hypothesis has no public setting for how many shrink attempts it makes (its own limits are 500
    successful shrinks and five minutes), and a multi-step training run costs up to seconds.

    Every call of the check goes through :meth:`run`, one budget per search (a pytest test item,
    one hunt). Until the first failure nothing is counted. After it, each call on a case not yet
    seen to fail is one run of the budget (a shrink attempt, Hypothesis's search for more bugs, its
    explain phase); once ``runs`` are spent such calls are skipped (``hypothesis.reject``: the case
    tells Hypothesis nothing), so shrinking ends on the smallest failing case found so far. A call
    on a case that did fail (Hypothesis's final replay) always runs, and says when the budget
    stopped the shrink.
    """

    def __init__(self):
        self.spent = 0
        self._failing: set[str] = set()

    def run(self, case: object, call: Callable[[], T], runs: int) -> T:
        key = repr(case)
        if key in self._failing:
            if self.spent >= runs:
                note(f"shrinking stopped after {runs} runs (the property's budget): the smallest failing case found so far")
        elif self._failing:
            if self.spent >= runs:
                reject()
            self.spent += 1
        try:
            return call()
        except AssertionError:
            self._failing.add(key)
            raise
