"""Example budgets for properties whose single example is a whole training run.

A fraction of the active profile's ``max_examples``, so ``dev`` and ``ci`` stay fast while the
``nightly`` profile scales these properties up with everything else.

What a failing whole-run property costs is held by a count (docs/budget.md, Bounded failure cost):
shrinking a training run costs minutes, so outside the ``nightly`` profile these properties do not
shrink. Hypothesis then stops at the first failing example and reports it as drawn, after one
replay: the runs to the failure (at most this fraction of the examples) plus one. The failure's own
message names the kind of difference. The nightly profile shrinks, within Hypothesis's own limits.
"""

from __future__ import annotations

from hypothesis import Phase, settings

#: Profiles that shrink a failing whole-run example (the rest report it unshrunk).
SHRINKING_PROFILES = ("nightly",)


def shrinks_whole_runs() -> bool:
    """Whether the active profile shrinks a failing whole-run example (else it is reported as drawn)."""
    return settings.get_current_profile_name() in SHRINKING_PROFILES


def fraction_of_profile(fraction: float, minimum: int = 3) -> settings:
    examples = max(minimum, int(settings.default.max_examples * fraction))
    phases = tuple(settings.default.phases)
    if not shrinks_whole_runs():
        phases = tuple(phase for phase in phases if phase != Phase.shrink)
    return settings(max_examples=examples, phases=phases)
