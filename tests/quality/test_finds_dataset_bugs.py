"""Self-check of the dataset properties: they must find the known cache bugs, and quickly (SPEC §7).

Each known-bug dataset target is hunted with the very check functions the property suite uses, under
a derandomized Hypothesis run of up to 200 examples. A hunt succeeds when Hypothesis reports a
counterexample; how many examples and seconds it needed, and the shrunk counterexample, are printed
(``pytest -s``) and attached to the test report (``record_property``, e.g. in JUnit XML).
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


@pytest.mark.parametrize("property_name", sorted(HUNTED_PROPERTIES))
@pytest.mark.parametrize("target_name", BUG_TARGETS)
def test_hypothesis_finds_the_known_cache_bug(target_name, property_name, record_property):
    check, arguments = HUNTED_PROPERTIES[property_name]
    result = hunt(check, get_target(target_name).load("dataset"), arguments, max_examples=HUNT_EXAMPLES)
    report = result.as_report()
    for key, value in report.items():
        record_property(key, value)
    print(f"\n{target_name} / {property_name}:", *(f"  {k}: {v}" for k, v in report.items()), sep="\n")
    assert result.found, (
        f"{HUNT_EXAMPLES} examples of {property_name} did not catch {target_name}"
    )


@pytest.mark.parametrize("case_name", sorted(EXPLICIT_CASES))
def test_the_explicit_cases_catch_both_bugs_and_pass_on_impl(case_name):
    case = EXPLICIT_CASES[case_name]
    properties.check_matches_oracle(get_target("impl").load("dataset"), case)
    properties.check_resume_agrees(get_target("impl").load("dataset"), case, resume_at=case.length - 1)
    for target_name in BUG_TARGETS:
        with pytest.raises(AssertionError, match="loss_mask differs"):
            properties.check_matches_oracle(get_target(target_name).load("dataset"), case)
