"""Each class of case the default run must draw has a planted bug that only that class shows
(tests/quality/corner_bugs.py; the two-rank one is held in tests/training/test_ddp.py, which launches it).

Each test runs the property's own check on the explicit example that realizes the class, and asserts that
the example is one the default run holds every target to (the property's explicit examples), so the
default run catches the bug; and that a correct target passes the same example. That the report fails on each
too, naming the scenario, is tests/quality/test_report_fails_where_the_suite_fails.py.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from impl.diffusion_loss import WindowedDiffusionLoss
from parity.compare import ParityFailure
from parity.strategies.causal import TWO_RANK_CORNERS
from parity.strategies.dataset_corners import realized_switches
from parity.strategies.diffusion import LARGE_COUNT_WINDOW, ROW_MIX_WINDOW
from parity.strategies.training import LARGE_COUNT_RUN, ROW_MIX_RUN
from parity.table.checks.dataset import check_matches_oracle
from parity.table.checks.diffusion import check_window_parity
from parity.table.checks.training import check_training_run
from parity.table.rows import PROPERTIES
from parity.targets import Target, get_target
from parity.training.diffusion.drivers.trainer_run import training_examples
from parity.training.launch.session import machine_misfit
from tests.quality.corner_bugs import (
    HALF_PRECISION_COUNT_LOSS,
    HalfPrecisionCountLogitsTrainer,
    PerMicrobatchEosLogitsTrainer,
    stream_end_dataset,
)

pytestmark = pytest.mark.usefixtures("harness_self_check")


def explicit(name: str) -> list:
    (prop,) = [prop for prop in PROPERTIES if prop.name == name]
    return [example["case"] for example in prop.explicit_examples()]


def test_a_count_kept_in_float16_is_caught_on_a_window_that_masks_thousands():
    assert LARGE_COUNT_WINDOW in explicit("diffusion/window-parity")
    with pytest.raises(ParityFailure) as caught:
        check_window_parity(HALF_PRECISION_COUNT_LOSS, LARGE_COUNT_WINDOW)
    assert "normalisation" in caught.value.verdict.failure_kinds
    assert "float16 holds every integer only up to 2048" in str(caught.value)
    check_window_parity(get_target("impl").load("loss"), LARGE_COUNT_WINDOW)


@pytest.mark.long  # two production-sized Trainer runs (about 30 s of a core); the window-level check above is the default run's
def test_a_trainer_whose_count_is_float16_is_caught_on_a_production_sized_window():
    assert LARGE_COUNT_RUN in explicit("training/any-run-matches")
    with pytest.raises(ParityFailure, match="the window's count is a float16 tensor holding 4848"):
        check_training_run(HalfPrecisionCountLogitsTrainer, LARGE_COUNT_RUN)
    check_training_run(get_target("logits").load("trainer"), LARGE_COUNT_RUN)


def test_the_eos_rule_applied_per_microbatch_is_caught_where_rows_mix():
    assert ROW_MIX_RUN in explicit("training/any-run-matches")
    with pytest.raises(ParityFailure, match="not maskable under the EOS rule, first at row 1"):
        check_training_run(PerMicrobatchEosLogitsTrainer, ROW_MIX_RUN)
    check_training_run(get_target("logits").load("trainer"), ROW_MIX_RUN)


def test_the_row_mix_cases_realize_every_mix_in_one_microbatch():
    """All prompt or an answer, padded or not: the four in one microbatch, for the trainers and the loss."""
    rows = training_examples(ROW_MIX_RUN)
    lengths = [len(row["input_ids"]) for row in rows]
    answered = [any(label != -100 for label in row["labels"]) for row in rows]
    mixes = {(answer, length < max(lengths)) for answer, length in zip(answered, lengths, strict=True)}
    assert mixes == {(False, False), (False, True), (True, False), (True, True)}
    assert ROW_MIX_WINDOW in explicit("diffusion/window-parity")
    (batch,) = ROW_MIX_WINDOW.windows[0]
    padded = (batch["attention_mask"] == 0).any(dim=1).tolist()
    answered = (batch["labels"] != -100).any(dim=1).tolist()
    assert set(zip(answered, padded, strict=True)) == {(False, False), (False, True), (True, False), (True, True)}


def test_a_sample_one_token_short_of_the_streams_end_called_complete_is_caught():
    """Only the stream-end corners show it: the random search rarely ends a stream there."""
    corners = explicit("dataset/matches-oracle")
    failing = []
    for case in corners:
        try:
            check_matches_oracle(stream_end_dataset, case)
        except AssertionError:
            failing.append(realized_switches(case))
    assert failing and all(row["total"] == "one token short" and row["add_extra_token"] for row in failing), failing
    assert all(row["pad"] == "out of vocabulary" for row in failing)


class _DoubledCountLoss(WindowedDiffusionLoss):
    """A correct loss that keeps twice the window's count and scales its sums by two: only its dtype is judged."""

    def window_count(self, window, **kwargs):
        count = super().window_count(window, **kwargs)
        return replace(count, num_items=count.num_items.to(torch.float32) * 2, loss_scale=count.loss_scale * 2)


def test_a_correct_loss_keeping_another_scalar_count_is_no_finding():
    check_window_parity(_DoubledCountLoss(), LARGE_COUNT_WINDOW)


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")  # its two-rank corner reads the launch tests/causal reads
def test_a_causal_count_never_summed_over_the_ranks_fails_the_default_run():
    """impl's causal-LM trainer counting each rank's window alone, its world factor kept, holds on one rank and where
    one rank is empty; the property's corner where both ranks supervise in unequal numbers fails it."""
    (prop,) = [prop for prop in PROPERTIES if prop.name == "causal/trainer-follows-the-window"]
    target = Target(name="planted:unsummed-count", description="", expect="fail",
                    causal_trainer="tests.quality.corner_bugs:UnsummedCountCausalTrainer")
    if machine_misfit():
        pytest.skip(machine_misfit())
    found = prop.hunt(target.load("causal_trainer"), max_examples=1, shrink=False, target=target, drawn=False)
    both = TWO_RANK_CORNERS[0]
    assert found.found and found.failing_args == ({"case": both},), found.as_report()
    assert found.examples_to_failure == explicit(prop.name).index(both) + 1  # every corner before it held
    assert found.message.startswith("normalisation"), found.message  # naming it: parity.training.causal.objectives
