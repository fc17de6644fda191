"""Self-check of the diffusion properties: they must catch the local-mean bug, and the control must not.

The hunt uses the very check functions of the property suite. Examples and seconds to the first
counterexample, and the shrunk counterexample, are printed (``pytest -s``) and recorded in the
test report (``record_property``).
"""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from parity.hunt import hunt
from parity.targets import get_target
from tests.diffusion import properties
from tests.diffusion.strategies import window_cases

HUNT_EXAMPLES = 100


def _report(record_property, title, result):
    for key, value in result.as_report().items():
        record_property(key, value)
    print(f"\n{title}:", *(f"  {k}: {v}" for k, v in result.as_report().items()), sep="\n")


def test_hypothesis_finds_the_local_mean_bug(record_property):
    result = hunt(
        properties.check_window_parity,
        get_target("known-bug:local-mean").load("loss"),
        st.tuples(window_cases()),
        max_examples=HUNT_EXAMPLES,
    )
    _report(record_property, "known-bug:local-mean / window parity", result)
    assert result.found, f"{HUNT_EXAMPLES} examples of window parity did not catch known-bug:local-mean"
    assert "exceeds the budget" in result.message


@pytest.mark.parametrize("target_name", ["impl", "known-bug:local-mean"])
def test_single_microbatch_windows_are_a_control(target_name):
    """The bug needs two microbatches in a window: with one, every target holds parity."""
    result = hunt(
        properties.check_window_parity,
        get_target(target_name).load("loss"),
        st.tuples(window_cases(window_size=1)),
        max_examples=10,
    )
    assert not result.found, result.message
