"""The budget, calibrated on correct alternatives and on lower-precision arithmetic (docs/budget.md).

A correct trainer with its own cross-entropy kernel (chunked, hand-written backward) or another
reduction order passes in float32 and float64; a correct trainer computing its loss in float32
inside a float64 run is named a *precision* finding: a note on a passing verdict, a failure only
under strict precision. (The known bugs stay caught by orders of magnitude: tests/quality.)
"""

from __future__ import annotations

import pytest

from parity.cases import TrainerCase
from parity.compare import ParityFailure, assert_verdict
from parity.devices import DTYPES
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict
from tests.training.variants import ChunkedCETrainer, Float32LossTrainer, ReorderedSumTrainer

#: Windows 3, 1 and 2, 2, 1; a middling eps; rank-local and gathered counts; evaluation in batches.
CASES = [
    TrainerCase(examples_per_rank=4, window_size=3, eps=0.05, eval_batch_size=3, data_seed=5, noise_seed=11),
    TrainerCase(average_tokens_across_devices=False, eval_batch_size=2, model_seed=2),
]


def _verdict(trainer_class, case, tmp_path, strict=False):
    record = run_trainer(trainer_class, case, str(tmp_path))
    return trainer_verdict(case, [record], strict_precision=strict)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "trainer_class, case",
    [(ChunkedCETrainer, CASES[0]), (ReorderedSumTrainer, CASES[1])],
    ids=["ChunkedCETrainer-windows-3-1", "ReorderedSumTrainer-windows-2-2-1"],
)
def test_a_correct_alternative_passes(trainer_class, case, dtype, tmp_path):
    """(The calibration of docs/budget.md ran both on 25 random runs per dtype.)"""
    from dataclasses import replace

    verdict = assert_verdict(_verdict(trainer_class, replace(case, dtype=dtype), tmp_path))
    assert not verdict.notes, verdict.describe()


def test_float32_arithmetic_in_a_float64_run_is_a_precision_note_not_a_failure(tmp_path):
    case = TrainerCase(dtype="float64", eval_batch_size=2)
    record = run_trainer(Float32LossTrainer, case, str(tmp_path))
    verdict = assert_verdict(trainer_verdict(case, [record], strict_precision=False))
    assert verdict.notes and verdict.kinds == ["precision"]
    assert all(c.error <= c.lower_budget for c in verdict.notes)
    assert "precision" in verdict.summary()
    strict = trainer_verdict(case, [record], strict_precision=True)
    with pytest.raises(ParityFailure, match=r"^precision:") as failure:
        assert_verdict(strict)
    assert "[precision]" in str(failure.value) and "within the float32 budget" in str(failure.value)


def test_the_same_float32_arithmetic_in_a_float32_run_is_simply_correct(tmp_path):
    verdict = assert_verdict(_verdict(Float32LossTrainer, TrainerCase(eval_batch_size=2), tmp_path, strict=True))
    assert not verdict.notes


def test_each_step_is_judged_from_where_the_target_is(tmp_path):
    """The trajectory reference (docs/budget.md): a target whose parameters left the oracle's after
    step 0 (by 1e-9 relative: enough to move float32 roundings inside the model's norms) but that
    takes every later step correctly from where it is, fails at step 0 only, even in strict precision."""
    import torch

    from impl.trainer import WindowedDiffusionTrainer
    from oracle.window_reference import StepResult
    from parity.training.diffusion.verdict import oracle_run

    case = TrainerCase(dtype="float64", evaluate=False)
    record = run_trainer(WindowedDiffusionTrainer, case, str(tmp_path))
    first = record.steps[0]
    record.steps[0] = StepResult(first.loss, first.grads, {n: p * (1 + 1e-9) for n, p in first.params.items()})
    for k in range(1, len(record.steps)):
        along = oracle_run(case, [record], torch.float64, "cpu", along=record.steps)
        record.steps[k] = StepResult(record.steps[k].loss, along.steps[k].grads, along.steps[k].params)
    verdict = trainer_verdict(case, [record], strict_precision=True)
    assert {c.step for c in verdict.failures} == {0}
    assert {c.quantity for c in verdict.failures} == {"param"}


def test_a_head_no_gradient_reaches_is_a_zero_gradient_not_a_failure(tmp_path):
    """A fused head applied only to masked positions leaves the head's ``.grad`` None in a window that
    masks nothing (this case's first window); plain SGD steps it as a zero gradient would."""
    from tests.training.variants import FusedHeadTrainer

    case = TrainerCase(examples_per_rank=3, window_size=1, eps=0.05)
    record = run_trainer(FusedHeadTrainer, case, str(tmp_path))
    windows_masked = [sum(int(draw.masked_indices.sum()) for draw in window) for window in record.train_draws]
    assert 0 in windows_masked, f"the case no longer has a window that masks nothing: {windows_masked}"
    assert_verdict(trainer_verdict(case, [record]))
