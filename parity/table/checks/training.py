"""Whole training runs held to the oracle: the table's ``training/any-run-matches``.

The run is driven by ``parity.training.diffusion.drivers.trainer_run`` and judged by ``parity.training.diffusion.verdict`` (docs/trainer.md).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace

from hypothesis import event, reject
from hypothesis.control import currently_in_test_context

from parity.budget import NOT_INFORMATIVE_EVENT
from parity.cases import TrainerCase
from parity.compare import assert_verdict
from parity.devices import runs_on
from parity.targets import ConfigDeclined
from parity.training.diffusion.drivers.trainer_run import TrainerRecord, run_trainer
from parity.training.diffusion.verdict import trainer_verdict


def check_training_run(trainer_class, case: TrainerCase, device: str = "cpu") -> list[str]:
    """Trainer.train(), evaluate() and prediction_step end to end, observed from outside, held to the
    oracle on the draws replayed from the run (docs/trainer.md).

    Raises ``ParityFailure`` (an ``AssertionError`` whose message leads with the kinds); returns a
    passing verdict's precision notes. A case the eps rule declines for this trainer (it declares no
    ``eps`` and the case's is not the published one) is skipped, and so is a float16 case on a device
    whose Trainer does not scale the loss (``parity.devices.runs_on``): it is not in that device's space.
    """
    if not runs_on(case.dtype, device):
        reject()
    case = replace(case, device=device)
    with tempfile.TemporaryDirectory(prefix="parity-trainer-") as folder:
        try:
            record = run_trainer(trainer_class, case, folder)
        except ConfigDeclined:
            reject()
    if currently_in_test_context():
        for text in realized(record):
            event(text)
    verdict = assert_verdict(trainer_verdict(case, [record]))
    if verdict.uninformative and currently_in_test_context():
        event(NOT_INFORMATIVE_EVENT)
    return [comparison.describe() for comparison in verdict.notes]


def realized(record: TrainerRecord) -> list[str]:
    """What the run realized that a wrong count needs in order to show (Hypothesis events)."""
    windows = [[int(draw.masked_indices.sum()) for draw in window] for window in record.train_draws]
    batches = {int(draw.masked_indices.sum()) for draw in record.eval_draws}
    return [
        "training: a window whose microbatches realized unequal counts"
        if any(len(set(counts)) > 1 for counts in windows) else "training: no window with unequal counts",
        "evaluation: batches of unequal counts" if len(batches) > 1 else "evaluation: no batches of unequal counts",
    ]
