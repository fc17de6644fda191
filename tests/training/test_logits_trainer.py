"""The repository's logits-style trainer, on every run whatever ``--parity-target`` says (docs/trainer.md).

It keeps its masks to itself and computes its own loss from ``.logits``, so every run exercises the
seam that observes a trainer from outside; its pre-fix twin is caught in tests/quality.
"""

from __future__ import annotations

import pytest

from impl.logits_trainer import LogitsDiffusionTrainer
from parity.cases import TrainerCase
from parity.compare import assert_verdict
from parity.devices import DTYPES
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict


def test_it_keeps_no_records():
    assert not any(hasattr(LogitsDiffusionTrainer, name) for name in ("train_draws", "eval_draws"))


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_fixed_run_matches_the_reference(dtype, tmp_path):
    case = TrainerCase(dtype=dtype, eval_batch_size=2)
    record = run_trainer(LogitsDiffusionTrainer, case, str(tmp_path))
    assert record.contract == "logits (model(input_ids), .logits read)" and [len(w) for w in record.train_draws] == [2, 2, 1]
    assert_verdict(trainer_verdict(case, [record]))


def test_the_property_check_passes_it_and_names_its_twins_bug():
    """``check_training_run``: the shape a property table uses (raises with kinds, returns notes)."""
    from impl.known_bugs.logits_local_mean_trainer import LogitsLocalMeanTrainer
    from parity.compare import ParityFailure
    from parity.table.checks.training import check_training_run

    assert check_training_run(LogitsDiffusionTrainer, TrainerCase(examples_per_rank=3, eps=0.3)) == []
    with pytest.raises(ParityFailure, match=r"^normalisation"):
        check_training_run(LogitsLocalMeanTrainer, TrainerCase(examples_per_rank=4))
