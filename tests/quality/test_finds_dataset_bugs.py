"""Self-check of the dataset properties: they must find the known cache bugs (docs/dataset.md, Verdicts).

Each known-bug dataset target is hunted with the very check functions the property suite uses, under
a derandomized Hypothesis run of up to 200 examples, stopping at the first counterexample (the
default run only needs to know it is found; ``python -m parity bench`` measures the medians over
random seeds, and shrinks). How many examples and seconds it needed is printed (``pytest -s``) and
attached to the test report (``record_property``, e.g. in JUnit XML). These check the harness, not
a target: they run in the default session (``--target impl``) and skip under any other target.
megatron-core's own bug is checked in ``tests/dataset/test_megatron.py``.
"""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from parity.hunt import hunt
from parity.targets import get_target
from tests.dataset import properties
from tests.dataset.strategies import EXPLICIT_CASES, dataset_cases, resumed_cases

BUG_TARGETS = ("known-bug:cache-alias", "known-bug:cache-accumulate")
HUNT_EXAMPLES = 200

#: property name -> (check function, strategy for the arguments after the factory)
HUNTED_PROPERTIES = {
    "matches-oracle": (properties.check_matches_oracle, st.tuples(dataset_cases())),
    "resume-agrees": (properties.check_resume_agrees, resumed_cases()),
}


@pytest.fixture(autouse=True)
def _default_session_only(pytestconfig):
    selected = getattr(pytestconfig, "parity_target", None)
    if selected is not None and selected.name != "impl":
        pytest.skip(f"a self-check of the harness; it does not depend on --target {selected.name}")


@pytest.mark.parametrize("property_name", sorted(HUNTED_PROPERTIES))
@pytest.mark.parametrize("target_name", BUG_TARGETS)
def test_hypothesis_finds_the_known_cache_bug(target_name, property_name, record_property):
    check, arguments = HUNTED_PROPERTIES[property_name]
    result = hunt(
        check, get_target(target_name).load("dataset"), arguments, max_examples=HUNT_EXAMPLES, shrink=False
    )
    report = result.as_report()
    for key, value in report.items():
        record_property(key, value)
    print(f"\n{target_name} / {property_name}:", *(f"  {k}: {v}" for k, v in report.items()), sep="\n")
    assert result.found, (
        f"{HUNT_EXAMPLES} examples of {property_name} did not catch {target_name}"
    )


@pytest.mark.parametrize("case_name", sorted(EXPLICIT_CASES))
def test_the_explicit_cases_catch_both_bugs_and_pass_on_impl(case_name):
    """The upstream cases fail both known bugs and pass impl (the crash case is megatron's alone)."""
    case = EXPLICIT_CASES[case_name]
    properties.check_matches_oracle(get_target("impl").load("dataset"), case)
    properties.check_resume_agrees(get_target("impl").load("dataset"), case, resume_at=case.length - 1)
    for target_name in BUG_TARGETS:
        with pytest.raises(AssertionError, match="loss_mask differs"):
            properties.check_matches_oracle(get_target(target_name).load("dataset"), case)
