"""Example budgets for properties whose single example is a whole training run.

A fraction of the active profile's ``max_examples``, so ``dev`` and ``ci`` stay fast while the
``nightly`` profile scales these properties up with everything else.

A failing whole-run property must also *report* within the CI per-test budget (docs/budget.md):
shrinking a training run costs minutes, so outside the ``nightly`` profile these properties do not
shrink; Hypothesis then reports the first failing example as found (unshrunk), and the failure's
own message names the kind of difference. The nightly profile keeps shrinking, bounded by
Hypothesis's own shrink time limit and by the per-test timeout.
"""

from __future__ import annotations

from hypothesis import Phase, settings

#: Profiles that shrink a failing whole-run example (the rest report it unshrunk).
SHRINKING_PROFILES = ("nightly",)


def fraction_of_profile(fraction: float, minimum: int = 3) -> settings:
    examples = max(minimum, int(settings.default.max_examples * fraction))
    phases = tuple(settings.default.phases)
    if settings.get_current_profile_name() not in SHRINKING_PROFILES:
        phases = tuple(phase for phase in phases if phase != Phase.shrink)
    return settings(max_examples=examples, phases=phases)
