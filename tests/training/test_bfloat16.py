"""Whole training runs in bfloat16, both ways production runs them (docs/budget.md, bfloat16).

bf16 weights are covered wherever a test runs over ``parity.devices.DTYPES``; autocast over float32
weights (``TrainingArguments(bf16=True)``) by the whole-run property's first explicit example, from
which tests/quality/test_known_bugs_are_caught.py hunts both known trainer bugs. Here: a case
that cannot show a wrong count saying so, and bfloat16 arithmetic inside a float32 run named precision.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch.nn.functional as F

from impl.logits_trainer import LogitsDiffusionTrainer
from parity.cases import TrainerCase
from parity.compare import ParityFailure, assert_verdict
from parity.strategies.training import UPSTREAM_RUN
from parity.targets import get_target
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict


class Bfloat16LossTrainer(LogitsDiffusionTrainer):
    """Correct, but its cross-entropy runs on bfloat16 logits whatever the working dtype."""

    def masked_sum(self, logits, targets, masked, p):
        token = F.cross_entropy(logits[masked].bfloat16(), targets[masked], reduction="none")
        return (token.to(logits.dtype) / p[masked].to(logits.dtype)).sum()


def _verdict(trainer_class, case, tmp_path):
    return trainer_verdict(case, [run_trainer(trainer_class, case, str(tmp_path))])


def test_a_case_that_cannot_show_a_wrong_count_says_so_instead_of_passing_blindly(tmp_path):
    """Single-microbatch windows: the local-mean bug computes what the oracle does, so its pass means nothing."""
    case = replace(UPSTREAM_RUN, dtype="bfloat16", window_size=1)
    verdict = assert_verdict(_verdict(get_target("known-bug:local-mean").load("trainer"), case, tmp_path))
    assert verdict.uninformative and verdict.summary().startswith("holds, not informative")


def test_bfloat16_arithmetic_inside_a_float32_run_is_a_precision_finding(tmp_path):
    case = TrainerCase(eval_batch_size=2)
    records = [run_trainer(Bfloat16LossTrainer, case, str(tmp_path))]
    verdict = assert_verdict(trainer_verdict(case, records, strict_precision=False))
    assert verdict.notes and {c.lower_dtype for c in verdict.notes} == {"bfloat16"}, verdict.describe()
    with pytest.raises(ParityFailure, match="^precision"):
        assert_verdict(trainer_verdict(case, records, strict_precision=True))


def test_autocast_is_for_bfloat16_and_float16_only():
    with pytest.raises(ValueError, match="autocast .* needs dtype 'bfloat16' or 'float16'; got 'float32'"):
        TrainerCase(autocast=True)
