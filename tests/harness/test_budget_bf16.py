"""The budget in bfloat16 (docs/budget.md, bfloat16): the floor is the working precision's, a wrong
count is named by that precision's rounding, and a case that cannot show one says so."""

from __future__ import annotations

import pytest
import torch

from parity.budget import INFORMATIVE_MARGIN, compare_tensor, informativeness, judges_informativeness
from parity.compare import judge

GOLDEN = torch.tensor([1.0, -2.0, 4.0], dtype=torch.float64)
EPS_BF16 = torch.finfo(torch.bfloat16).eps


def test_autocast_float32_tensors_get_the_floor_of_their_bfloat16_arithmetic():
    out = (GOLDEN + 0.05).float()  # a float32 gradient made by bfloat16 matmuls
    as_float32 = compare_tensor("w", out, [GOLDEN.float()], GOLDEN)
    as_bfloat16 = compare_tensor("w", out, [GOLDEN.float()], GOLDEN, precision=torch.bfloat16)
    assert not as_float32.holds and as_bfloat16.holds
    assert as_bfloat16.budget == pytest.approx(4 * EPS_BF16 * 4.0) and as_bfloat16.precision == "bfloat16"


def test_a_finer_working_precision_never_tightens_a_coarser_target():
    """The Trainer's float32 loss accumulator in a float64 run keeps its float32 floor."""
    comparison = compare_tensor("loss", GOLDEN.float(), [GOLDEN], GOLDEN, precision=torch.float64)
    assert comparison.precision == "float32"


def test_a_wrong_count_in_bfloat16_is_named_beyond_its_rounding():
    small = compare_tensor("w", (GOLDEN + 0.2).bfloat16(), [GOLDEN.bfloat16()], GOLDEN)  # 5 % of 4: rounding-sized
    large = compare_tensor("w", (GOLDEN * 1.5).bfloat16(), [GOLDEN.bfloat16()], GOLDEN)
    assert (small.kind, large.kind) == ("mismatch", "normalisation")


def test_bfloat16_arithmetic_inside_a_float32_run_is_a_precision_finding():
    out = (GOLDEN * (1 + EPS_BF16)).float()
    comparison = compare_tensor("w", out, [GOLDEN.float()], GOLDEN, lower_refs=[GOLDEN.bfloat16()])
    verdict = judge([comparison], strict_precision=False)
    assert comparison.kind == "precision" and verdict.holds
    assert "exceed the float32 budget but fit the bfloat16 budget" in verdict.describe()


def test_a_case_whose_predicted_wrong_count_hides_in_rounding_is_not_informative():
    budget = compare_tensor("w", GOLDEN.bfloat16(), [GOLDEN.bfloat16()], GOLDEN).budget
    near = compare_tensor("w", GOLDEN + budget, [GOLDEN.bfloat16()], GOLDEN, precision=torch.bfloat16)
    far = compare_tensor("w", GOLDEN + INFORMATIVE_MARGIN * 1.01 * budget, [GOLDEN.bfloat16()], GOLDEN,
                         precision=torch.bfloat16)
    assert informativeness([far], "bfloat16") is None
    reason = informativeness([near], "bfloat16")
    assert reason.startswith("not informative at bfloat16") and "at most 1x, at w" in reason
    passing = judge([compare_tensor("w", GOLDEN.bfloat16(), [GOLDEN.bfloat16()], GOLDEN)], uninformative=reason)
    assert passing.holds and passing.summary().startswith("holds, not informative") and reason in passing.describe()


def test_only_bfloat16_and_coarser_runs_are_judged_for_informativeness():
    assert judges_informativeness(torch.bfloat16)
    assert not judges_informativeness(torch.float32) and not judges_informativeness(torch.float64)
