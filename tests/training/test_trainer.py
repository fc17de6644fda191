"""``Trainer.train()``, ``evaluate()`` and ``prediction_step`` end to end, held to the oracle (docs/trainer.md).

Written once against the trainer seam: whatever the target's trainer is, the harness gives it its
own model, rows and collator, observes it from outside and replays the published noising. The
randomised whole-run property is the table's ``training/any-run-matches`` (parity.table.rows).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from parity.cases import TrainerCase
from parity.compare import assert_verdict
from parity.devices import DTYPES
from parity.strategies import training as strategies
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict


def train_and_judge(trainer_class, case: TrainerCase, tmp_path_factory):
    """Precision findings fail only under ``--parity-strict-precision`` (docs/budget.md)."""
    record = run_trainer(trainer_class, case, str(tmp_path_factory.mktemp("trainer")))
    assert_verdict(trainer_verdict(case, [record]))
    return record


@pytest.mark.parametrize("dtype", DTYPES)
def test_three_sgd_steps_over_windows_2_2_1(trainer_class, dtype, tmp_path_factory):
    """The pull request's run: 5 examples, micro-batch 1, accumulation 2, plain SGD, 3 steps.

    After every step the parameters, the gradients and the logged loss equal the reference's; the
    evaluation loss and each ``prediction_step`` batch equal the reference single-batch losses.
    """
    case = strategies.UPSTREAM_RUN if dtype == "float32" else replace(strategies.UPSTREAM_RUN, dtype=dtype)
    record = train_and_judge(trainer_class, case, tmp_path_factory)
    assert [len(window) for window in record.train_draws] == [2, 2, 1]
    assert all(sum(int(d.masked_indices.sum()) for d in window) > 0 for window in record.train_draws)
    assert record.eval_loss is not None and len(record.eval_draws) == len(record.batch_losses) == 3
