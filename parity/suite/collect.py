"""Turn a :class:`~parity.table.rows.Property` into a pytest test driven by Hypothesis.

The test takes the session's target (``--parity-target``, default ``impl``) and a device; a target that
lacks the property's interface skips it at setup (the ``applicable`` fixture), before Hypothesis runs, so a
skip is one reason in the summary and never a "Failing explicit example". The drawn arguments come from the
entry's strategies, its explicit examples run first, and a training-sized property takes a fraction of the
profile's examples. Each example the check holds on is counted for the session's table (parity/suite/outcomes.py).
"""

from __future__ import annotations

import inspect
import warnings

import pytest
from hypothesis import example, given

from parity.devices import make_deterministic
from parity.fleet.kept_failures import remember_failure
from parity.pytest_plugin import device_params
from parity.safety.bounds import hang_scope
from parity.suite.outcomes import count_example
from parity.table.record import Property
from parity.table.run_budget import ShrinkBudget, suite_settings


class ParityNote(UserWarning):
    """A finding that accompanies a passing verdict (a hazard, a precision note): shown in pytest's
    warnings summary, never a failure."""


@pytest.fixture
def shrink_budget() -> ShrinkBudget:
    """A fresh budget per test item, i.e. per Hypothesis run of a property."""
    return ShrinkBudget()


@pytest.fixture
def applicable(request: pytest.FixtureRequest, target) -> None:
    """Skips a property the target cannot run (an interface it lacks, a promise it does not make) before
    Hypothesis starts: a skip raised inside the Hypothesis test would print each explicit example as failing."""
    prop = request.function.parity_property
    if not prop.applies_to(target):
        pytest.skip(prop.why_not(target))


def property_test(prop: Property):
    strategies = prop.strategies()

    # Only fixtures pytest defines (never its ``request``): HypoFuzz calls the test with those alone.
    fixtures = ("target", "device", "pytestconfig", *(("shrink_budget",) if prop.shrink_runs is not None else ()))

    def test(target, device, pytestconfig, shrink_budget: ShrinkBudget | None = None, **arguments):
        subject = target.load(prop.interface)
        make_deterministic(device)

        def run() -> list[str]:
            with hang_scope(f"{target.name}: {prop.interface}"):  # a hang of this interface is paid once
                return prop.run(subject, arguments, device, target)

        try:
            notes = run() if shrink_budget is None else shrink_budget.run(sorted(arguments.items()), run, prop.shrink_runs)
        except AssertionError:
            # Hypothesis replays the shrunk example last: what stays is what `python -m parity repro --from-last-run` writes up.
            remember_failure(pytestconfig, target, prop, arguments)
            raise
        count_example()
        for note in notes:
            warnings.warn(ParityNote(f"{target.name}: {prop.name}: {note}"), stacklevel=1)

    keyword = inspect.Parameter.KEYWORD_ONLY
    test.__signature__ = inspect.Signature([inspect.Parameter(name, keyword) for name in (*fixtures, *strategies)])
    test.__name__ = test.__qualname__ = prop.test_name
    test.__doc__ = inspect.getdoc(prop.check_function())
    wrapped = given(**strategies)(test)
    for explicit in reversed(prop.explicit_examples()):
        wrapped = example(**explicit)(wrapped)
    changed = suite_settings(prop.examples_fraction, prop.shrink_runs, prop.whole_run)
    if changed is not None:
        wrapped = changed(wrapped)
    wrapped = pytest.mark.parametrize("device", device_params(prop.devices))(wrapped)
    wrapped = pytest.mark.usefixtures("applicable")(wrapped)
    wrapped.parity_property = prop
    if prop.slow:
        wrapped = pytest.mark.slow(wrapped)
    if prop.xdist_group:
        wrapped = pytest.mark.xdist_group(prop.xdist_group)(wrapped)
    return wrapped
