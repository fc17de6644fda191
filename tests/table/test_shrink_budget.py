"""A failing search's cost after its first failure is a count of runs (docs/budget.md, Bounded failure
cost): ``parity.table.run_budget.ShrinkBudget``, kept by the check, in every profile."""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.suite.collect import property_test
from parity.table.rows import PROPERTIES
from parity.table.run_budget import ShrinkBudget

#: A failure Hypothesis would shrink over many runs: any large number fails, and so does its list.
FAILS = 1000


def search(budget: ShrinkBudget, runs: int, ran: list):
    @settings(database=None, derandomize=True, max_examples=200)
    @given(st.integers(0, 10**9), st.lists(st.integers(), max_size=20))
    def prop(n, xs):
        def run():
            ran.append(n)
            assert n < FAILS, f"{n} is too large"

        budget.run((n, xs), run, runs)

    return prop


def test_after_the_first_failure_only_the_budget_runs_and_a_failing_case_is_reported():
    budget, ran = ShrinkBudget(), []
    with pytest.raises(AssertionError, match="too large") as failure:
        search(budget, 3, ran)()
    first = next(i for i, n in enumerate(ran) if n >= FAILS)
    new_cases = {n for n in ran[first + 1 :]} - {ran[first]}
    assert budget.spent == 3 and len(new_cases) <= 3, f"runs after the first failure: {ran[first + 1:]}"
    notes = "\n".join(getattr(failure.value, "__notes__", []))
    assert "shrinking stopped after 3 runs" in notes and f"n={ran[-1]}" in notes, "the case reported is the one replayed"
    assert ran[-1] >= FAILS


def test_a_search_that_never_fails_spends_nothing():
    budget = ShrinkBudget()

    @settings(database=None, max_examples=20)
    @given(st.integers(0, FAILS - 1))
    def holds(n):
        budget.run(n, lambda: None, 3)

    holds()
    assert budget.spent == 0


def test_every_training_property_of_the_suite_takes_a_budget():
    """The window properties (several optimizer steps an example) and the whole-run ones (a diffusion trainer, a
    causal-LM trainer or loop) are bounded; the suite's test of each asks for a fresh budget (a pytest fixture: one
    per test item, one per search). A trainer's bad input is refused before any training: nothing to shrink but which
    declared name."""
    bounded = {prop.name for prop in PROPERTIES if prop.shrink_runs is not None}
    training = {prop.name for prop in PROPERTIES if prop.scenario != "validation"
                and (prop.interface in ("trainer", "causal_trainer", "loop") or prop.name.startswith("diffusion/"))}
    assert bounded == training
    for prop in PROPERTIES:
        fixtures = inspect.signature(property_test(prop)).parameters
        assert ("shrink_budget" in fixtures) == (prop.shrink_runs is not None), prop.name
