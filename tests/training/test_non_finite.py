"""A NaN or infinite loss, gradient or parameter is its own finding, at its first step and tensor
(parity.training.diffusion.verdict.non_finite, docs/budget.md, Kinds), never a normalisation or a fault of the oracle."""

from __future__ import annotations

import torch

from oracle.window_reference import StepResult
from parity.training.diffusion.drivers.trainer_run import TrainerRecord
from parity.training.diffusion.verdict import non_finite


def step(loss=1.0, grad=0.5, param=2.0) -> StepResult:
    return StepResult(torch.tensor(loss), {"w": torch.tensor([grad, 0.0]), "b": None}, {"w": torch.tensor([param, 1.0])})


def record(*steps: StepResult, skipped=()) -> TrainerRecord:
    return TrainerRecord(list(steps), [], None, skipped=list(skipped))


def test_a_finite_run_has_no_finding():
    assert non_finite([record(step(), step())]) == []


def test_the_first_non_finite_tensor_of_the_first_such_step_is_named():
    (finding,) = non_finite([record(step(), step(grad=float("inf"), param=float("nan")), step(loss=float("nan")))])
    assert (finding.kind, finding.message) == ("non-finite", "non-finite at step 1, first in grad w (inf)")


def test_each_rank_is_named():
    findings = non_finite([record(step()), record(step(loss=float("nan")))])
    assert [(f.rank, f.describe()) for f in findings] == [(1, "[non-finite] rank 1 non-finite at step 0, first in loss (nan)")]


def test_a_step_the_loss_scaler_skipped_has_its_gradients_unread():
    assert non_finite([record(step(grad=float("inf")), skipped=[True])]) == []
