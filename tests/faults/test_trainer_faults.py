"""Trainer faults that end in a finding, not a crash: a re-seeded generator cannot pass as the seed's noise, on
one rank or two, while a trainer's own draws between batches stay allowed (docs/trainer.md, Where a trainer may
draw); a NaN loss is non-finite (docs/budget.md, Kinds)."""

from __future__ import annotations

import json

import pytest

from parity.training.diffusion.drivers.ranks import DDP_CASES
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.launch.processes import launch
from tests.faults.targets import DrawsBetweenBatches, NanLoss, ReseedsEveryWindow

pytestmark = pytest.mark.long

CASE = DDP_CASES["unequal-counts"]


def test_a_trainer_that_re_seeds_every_window_is_noise(tmp_path):
    record = run_trainer(ReseedsEveryWindow, CASE, str(tmp_path))
    # Training and evaluation are judged apart, and neither can be replayed from a timeline that went back.
    assert [(f.kind, f.phase) for f in record.findings] == [("noise", "train"), ("noise", "evaluation")]
    assert "went back to a state it had left" in record.findings[0].message


def test_a_trainer_drawing_for_itself_between_batches_is_not_noise(tmp_path):
    record = run_trainer(DrawsBetweenBatches, CASE, str(tmp_path))
    assert record.findings == [] and record.steps


def test_a_nan_loss_is_non_finite_not_normalisation(tmp_path):
    verdict = trainer_verdict(CASE, [run_trainer(NanLoss, CASE, str(tmp_path))])
    assert verdict.failure_kinds == ["non-finite"]
    assert [f.message for f in verdict.findings] == ["non-finite at step 1, first in loss (nan)"]


@pytest.mark.distributed
@pytest.mark.xdist_group("distributed")
def test_a_trainer_that_re_seeds_every_window_is_noise_on_two_ranks(tmp_path):
    result = tmp_path / "verdicts.json"
    launch("parity.training.diffusion.drivers.ranks", ["--trainer", "tests.faults.targets:ReseedsEveryWindow", "--case", "unequal-counts",
                                         "--case", "rank-local", "--json", str(result)], 2, timeout_s=240)
    cases = json.loads(result.read_text())["cases"]
    assert {name: (v["holds"], v["kinds"]) for name, v in cases.items()} == {
        "unequal-counts": (False, ["noise"]), "rank-local": (False, ["noise"])}
