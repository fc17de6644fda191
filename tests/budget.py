"""Example budgets for properties whose single example is a whole training run.

A fraction of the active profile's ``max_examples``, so ``dev`` and ``ci`` stay fast while the
``nightly`` profile scales these properties up with everything else.
"""

from __future__ import annotations

from hypothesis import settings


def fraction_of_profile(fraction: float, minimum: int = 3) -> settings:
    return settings(max_examples=max(minimum, int(settings.default.max_examples * fraction)))
