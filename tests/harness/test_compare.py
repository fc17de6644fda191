"""The budget of SPEC §6, read like its manual: what holds, what fails, and what a failure says."""

from __future__ import annotations

import pytest
import torch

from parity.compare import BudgetExceeded, assert_within_budget, compare_states, compare_tensor

GOLDEN = torch.tensor([1.0, -2.0, 4.0], dtype=torch.float64)
EPS32 = torch.finfo(torch.float32).eps


def test_the_budget_is_twice_the_reference_error_plus_a_floor():
    ref = (GOLDEN + torch.tensor([0.0, 1e-6, 0.0], dtype=torch.float64)).float()
    comparison = compare_tensor("w", GOLDEN.float(), [ref], GOLDEN)
    reference_error = (ref.double() - GOLDEN).abs().max().item()
    assert comparison.budget == pytest.approx(2 * reference_error + 4 * EPS32 * 4.0)
    assert comparison.holds


def test_twice_the_reference_error_is_the_edge():
    ref = (GOLDEN + 1e-4).float()
    out = (GOLDEN + 3e-4).float()
    comparison = compare_tensor("w", out, [ref], GOLDEN)
    assert not comparison.holds and comparison.ratio > 1


def test_the_worst_of_several_references_sets_the_budget():
    near, far = (GOLDEN + 1e-7).float(), (GOLDEN + 1e-5).float()
    assert compare_tensor("w", far, [near, far], GOLDEN).holds
    assert not compare_tensor("w", far, [near], GOLDEN).holds


def test_a_failure_names_tensor_index_error_budget_and_values():
    out = GOLDEN.clone().float()
    out[2] += 0.5
    with pytest.raises(BudgetExceeded) as failure:
        assert_within_budget([compare_tensor("step 0 grad head.weight", out, [GOLDEN.float()], GOLDEN)])
    message = str(failure.value)
    assert "step 0 grad head.weight" in message and "at index [2]" in message
    assert "max|out - golden| = 5.000e-01" in message and "golden 4" in message and "exceeds the budget" in message


def test_the_floor_follows_the_group_magnitude():
    """A gradient that is pure cancellation borrows the scale of its group."""
    tiny = {"a": torch.tensor([1e-17], dtype=torch.float64), "b": torch.tensor([3.0], dtype=torch.float64)}
    out = {"a": torch.tensor([3e-16], dtype=torch.float64), "b": torch.tensor([3.0], dtype=torch.float64)}
    assert all(c.holds for c in compare_states(out, [tiny], tiny))
    assert not compare_tensor("a alone", out["a"], [tiny["a"]], tiny["a"]).holds


def test_a_missing_gradient_on_one_side_is_a_failure():
    golden = {"w": torch.ones(2, dtype=torch.float64)}
    with pytest.raises(AssertionError, match="present in some results and None in others"):
        compare_states({"w": None}, [golden], golden)


def test_shapes_must_agree():
    with pytest.raises(AssertionError, match="shapes differ"):
        compare_tensor("w", torch.ones(2), [torch.ones(3)], torch.ones(3, dtype=torch.float64))


def test_a_non_finite_output_never_holds():
    out = torch.tensor([float("nan"), 0.0, 0.0])
    assert not compare_tensor("w", out, [GOLDEN.float()], GOLDEN).holds
