"""Turn a :class:`~parity.property_table.Property` into a pytest test driven by Hypothesis.

The test takes the session's target (``--parity-target``, default ``impl``) and a device; a target that
lacks the property's interface skips it. The drawn arguments come from the entry's strategies, its
explicit examples run first, and a training-sized property takes a fraction of the profile's examples.
"""

from __future__ import annotations

import inspect
import warnings

import pytest
from hypothesis import example, given

from parity.devices import make_deterministic
from parity.property_table import Property
from parity.pytest_plugin import device_params
from parity.suite.budget import fraction_of_profile


class ParityNote(UserWarning):
    """A finding that accompanies a passing verdict (a hazard, a precision note): shown in pytest's
    warnings summary, never a failure."""


def property_test(prop: Property):
    strategies = prop.strategies()

    def test(target, device, **arguments):
        if not prop.applies_to(target):
            pytest.skip(prop.why_not(target))
        subject = target.load(prop.interface)
        make_deterministic(device)
        for note in prop.run(subject, arguments, device, target):
            warnings.warn(ParityNote(f"{target.name}: {prop.name}: {note}"), stacklevel=1)

    keyword = inspect.Parameter.KEYWORD_ONLY
    test.__signature__ = inspect.Signature(
        [inspect.Parameter(name, keyword) for name in ("target", "device", *strategies)]
    )
    test.__name__ = test.__qualname__ = prop.test_name
    test.__doc__ = inspect.getdoc(prop.check_function())
    wrapped = given(**strategies)(test)
    for explicit in reversed(prop.explicit_examples()):
        wrapped = example(**explicit)(wrapped)
    if prop.whole_run:
        wrapped = fraction_of_profile(prop.examples_fraction)(wrapped)
    wrapped = pytest.mark.parametrize("device", device_params(prop.devices))(wrapped)
    if prop.slow:
        wrapped = pytest.mark.slow(wrapped)
    return wrapped
