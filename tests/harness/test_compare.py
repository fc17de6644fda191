"""The budget (docs/budget.md), read like its manual: what holds, what fails, and what kind of failure it is."""

from __future__ import annotations

import pytest
import torch

from parity.budget import compare_states, compare_tensor
from parity.compare import Finding, ParityFailure, assert_verdict, judge

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
    with pytest.raises(ParityFailure) as failure:
        assert_verdict(judge([compare_tensor("step 0 grad head.weight", out, [GOLDEN.float()], GOLDEN)]))
    message = str(failure.value)
    assert "step 0 grad head.weight" in message and "at index [2]" in message
    assert "max|out - golden| = 5.000e-01" in message and "golden 4" in message and "exceeds the budget" in message


def test_a_failure_lists_the_worst_tensors_first_and_counts_the_rest():
    comparisons = [compare_tensor(f"w{k}", (GOLDEN + k / 10).float(), [GOLDEN.float()], GOLDEN) for k in range(1, 8)]
    lines = judge(comparisons).describe(shown=5).splitlines()
    assert [line.split(":")[0] for line in lines[:5]] == [f"[normalisation] w{k}" for k in range(7, 2, -1)]
    assert lines[5] == "... and 2 more tensors outside their budget"


def test_the_floor_follows_the_group_magnitude():
    """A gradient that is pure cancellation borrows the scale of its group."""
    tiny = {"a": torch.tensor([1e-17], dtype=torch.float64), "b": torch.tensor([3.0], dtype=torch.float64)}
    out = {"a": torch.tensor([3e-16], dtype=torch.float64), "b": torch.tensor([3.0], dtype=torch.float64)}
    assert all(c.holds for c in compare_states(out, [tiny], tiny))
    assert not compare_tensor("a alone", out["a"], [tiny["a"]], tiny["a"]).holds


def test_a_gradient_that_never_flowed_is_judged_as_zeros():
    """None (no gradient reached the parameter) steps plain SGD like a zero gradient: a fused head
    applied to no masked position is right where the oracle's gradient is zero, wrong where it is not."""
    zero = {"w": torch.zeros(2, dtype=torch.float64)}
    assert all(c.holds for c in compare_states({"w": None}, [{"w": torch.zeros(2)}], zero))
    (comparison,) = compare_states({"w": None}, [{"w": torch.ones(2)}], {"w": torch.ones(2, dtype=torch.float64)})
    assert not comparison.holds and comparison.kind == "normalisation"
    assert all(c.holds for c in compare_states({"w": torch.zeros(2)}, [{"w": None}], {"w": None}))
    assert compare_states({"w": None}, [{"w": None}], {"w": None}) == []


def test_shapes_must_agree():
    with pytest.raises(AssertionError, match="shapes differ"):
        compare_tensor("w", torch.ones(2), [torch.ones(3)], torch.ones(3, dtype=torch.float64))


def test_a_non_finite_output_never_holds():
    out = torch.tensor([float("nan"), 0.0, 0.0])
    assert not compare_tensor("w", out, [GOLDEN.float()], GOLDEN).holds


# --- kinds: what a difference is, not only that it exists ------------------------------------------


def _float64_case(error: float):
    """A float64 output off by ``error`` at one element, a float64 reference exact to 1e-16, and a
    float32 reference at float32 rounding (what the oracle gives in that dtype)."""
    out = GOLDEN.clone()
    out[1] += error
    ref64 = GOLDEN + 1e-16
    ref32 = (GOLDEN + torch.tensor([0.0, 3e-7, 0.0], dtype=torch.float64)).float()
    return compare_tensor("step 0 grad w", out, [ref64], GOLDEN, lower_refs=[ref32], step=0, quantity="grad", tensor="w")


def test_a_comparison_carries_its_identity_as_fields():
    c = _float64_case(0.0)
    assert (c.step, c.quantity, c.tensor, c.rank) == (0, "grad", "w", None)
    assert c.holds and c.kind is None


def test_float32_rounding_in_a_float64_run_is_a_precision_finding():
    c = _float64_case(2e-7)
    assert not c.holds and c.kind == "precision" and c.error <= c.lower_budget
    assert c.describe().startswith("[precision] step 0 grad w") and "within the float32 budget" in c.describe()


def test_an_error_of_a_ratio_is_a_normalisation_finding():
    c = _float64_case(1.0)  # golden -2 becomes -1: off by a factor of two
    assert c.kind == "normalisation" and c.relative_error > 0.1
    assert "exceeds the float32 budget" in c.describe()


def test_an_excess_too_small_for_a_wrong_count_is_a_mismatch():
    ref = (GOLDEN + 1e-7).float()
    out = (GOLDEN + 1e-5).float()
    c = compare_tensor("w", out, [ref], GOLDEN)
    assert not c.holds and c.kind == "mismatch"


def test_a_precision_finding_is_a_note_unless_precision_is_strict():
    comparisons = [_float64_case(2e-7), _float64_case(0.0)]
    verdict = assert_verdict(judge(comparisons))
    assert verdict.holds and verdict.kinds == ["precision"] and len(verdict.notes) == 1
    assert "note: precision" in verdict.summary()
    diagnosis = "step 0 grad w exceeds the float64 budget but fits the float32 one"
    with pytest.raises(ParityFailure, match=rf"^precision: {diagnosis}[^\n]*\n\[precision\] step 0 grad w"):
        assert_verdict(judge(comparisons, strict_precision=True))


def test_findings_fail_a_verdict_and_lead_its_message():
    verdict = judge([_float64_case(1.0)], [Finding("noise", "train forward 0: masks differ", step=0)])
    assert not verdict.holds and verdict.failure_kinds == ["normalisation", "noise"]
    with pytest.raises(ParityFailure) as failure:
        assert_verdict(verdict)
    message = str(failure.value)
    assert message.startswith("normalisation, noise:") and "[noise] step 0 train forward 0: masks differ" in message
    assert "[normalisation] step 0 grad w" in message


def test_a_crash_is_a_finding_of_its_own():
    verdict = judge([], [Finding("crash", "RuntimeError: boom at x.py:3")])
    assert verdict.failure_kinds == ["crash"] and "[crash] RuntimeError: boom" in verdict.describe()


def test_compare_states_names_each_tensor_and_keeps_its_key():
    golden = {"a": GOLDEN, "b": GOLDEN * 2}
    names = {"a": "step 3 param a", "b": "step 3 param b"}
    comparisons = compare_states(golden, [golden], golden, names=names, step=3, quantity="param")
    assert [(c.name, c.tensor, c.step, c.quantity) for c in comparisons] == [
        ("step 3 param a", "a", 3, "param"),
        ("step 3 param b", "b", 3, "param"),
    ]
