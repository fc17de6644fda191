"""What the harness reports is what it observed (docs/trainer.md, What the harness reads).

The model contract is read off the calls, and a declaration that contradicts them is a usage error
naming both; an undeclared ``eps`` is reported as the published one assumed, and a case at another
eps is skipped for that reason, never run at one eps and printed at another.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

from impl.logits_trainer import LogitsDiffusionTrainer
from parity.cases import PUBLISHED_EPS, TrainerCase
from parity.table.checks.training import check_training_run
from parity.targets import ConfigDeclined
from parity.training.diffusion.drivers.trainer_run import ContractMismatch, run_trainer
from parity.training.diffusion.verdict import trainer_verdict
from tests.training.variants import SwappedDrawOrderTrainer

SMALL = TrainerCase(examples_per_rank=2, max_length=5, evaluate=False)


class EpsOfItsOwn(LogitsDiffusionTrainer):
    """Its eps is fixed inside (no class attribute to set): it declares none."""

    eps = property(lambda self: PUBLISHED_EPS)


class SwappedEpsOfItsOwn(SwappedDrawOrderTrainer):
    eps = property(lambda self: PUBLISHED_EPS)


class Mislabelled(LogitsDiffusionTrainer):
    model_contract = "loss-pair"


def test_a_declared_contract_the_calls_contradict_is_a_usage_error_naming_both(tmp_path):
    says = r"declares model_contract='loss-pair', but the run observed logits \(model\(input_ids\), \.logits read\)"
    with pytest.raises(ContractMismatch, match=says):
        run_trainer(Mislabelled, SMALL, str(tmp_path))


def test_an_undeclared_eps_is_the_published_one_assumed_and_other_eps_are_skipped(tmp_path):
    record = run_trainer(EpsOfItsOwn, SMALL, str(tmp_path))
    assert (record.eps, record.eps_source) == (PUBLISHED_EPS, "not declared: the published 0.001 assumed")
    says = "declares no class attribute eps: the published 0.001 is assumed, so a case at eps=0.5 is skipped"
    with pytest.raises(ConfigDeclined, match=says):
        run_trainer(EpsOfItsOwn, replace(SMALL, eps=0.5), str(tmp_path))

    @settings(max_examples=1, database=None)
    @given(st.just(replace(SMALL, eps=0.5)))
    def the_property(case):
        check_training_run(EpsOfItsOwn, case)

    with pytest.raises(Unsatisfiable):  # every example skipped
        the_property()


def test_a_noise_finding_prints_the_eps_the_run_used(tmp_path):
    """(A declared eps: tests/training/test_observation.py, the wrong-eps trainer.)"""
    verdict = trainer_verdict(SMALL, [run_trainer(SwappedEpsOfItsOwn, SMALL, str(tmp_path))])
    assert verdict.failure_kinds == ["noise"]
    assert "eps = 0.001 (not declared: the published 0.001 assumed)" in verdict.describe()
