"""Trainers from the public descriptions of MDLM, LLaDA's SFT objective and Dream, registered through
``ShippedTrainer`` as a user would (tests/training/research_objectives.py), each told the terms it departs
in and the nearest whole objective (parity.training.diffusion.objectives, docs/trainer.md, Reading a verdict on a
research trainer)."""

from __future__ import annotations

import pytest

from parity.strategies.training import RANK_LOCAL_RUN
from parity.training.diffusion.drivers.trainer_run import run_trainer
from parity.training.diffusion.objectives import name_objective
from parity.training.diffusion.verdict import trainer_verdict
from parity.training.step_compare import SIGNIFICANT
from tests.training.research_objectives import RESEARCH_OBJECTIVES

#: What a named objective is said to match, within the significance margin (docs/trainer.md, What makes a term significant).
MATCHES = "it matches the logged losses and gradients of every step within 4 x their budgets"


def verdict_of(name: str, tmp_path, case=RANK_LOCAL_RUN):
    record = run_trainer(RESEARCH_OBJECTIVES[name], case, str(tmp_path))
    return trainer_verdict(case, [record])


def test_an_mdlm_style_trainer_gets_both_terms_and_its_nearest_objective_with_the_residual(tmp_path):
    verdict = verdict_of("mdlm", tmp_path)
    assert verdict.failure_kinds == ["normalisation"]
    said = verdict.diagnosis
    assert said.startswith("this trainer departs from the published objective in 2 terms: the normalisation: "
                           "mean_g(S_g / M_g with M_g the supervised tokens (labels != -100) of microbatch g)")
    assert "the weights: 1/(t + 1.0e-06) instead of 1/p, t = (p - eps)/(1 - eps)" in said
    assert "(delta fitted to the logged losses: 1.0e-06; without it, the nearest objective misses the logged" in said
    assert "Nearest: supervised, averaged; weights 1/(t + 1.0e-06) (residual after both" in said
    assert "matches none" not in said and MATCHES in said


def test_llada_sft_gets_its_per_row_normalisation_named_and_its_weights_left_alone(tmp_path):
    said = verdict_of("llada-sft", tmp_path).diagnosis
    assert said.startswith("this trainer departs from the published objective in 1 term: the normalisation: mean over "
                           "the rows of S_row / A_row, A_row the row's answer (supervised) tokens")
    assert "Nearest: answer length per row, averaged; weights 1/p (residual after it" in said and "the weights:" not in said
    assert "(without it, the nearest objective misses the logged losses by" in said and MATCHES in said


def test_dream_gets_its_prepended_bos_as_an_input_contract_finding(tmp_path):
    verdict = verdict_of("dream", tmp_path)
    assert verdict.failure_kinds == ["input-contract"]
    assert "1 token (id 1 in row 0) prepended to every row" in verdict.describe(1)


@pytest.mark.parametrize("name", sorted(RESEARCH_OBJECTIVES))
def test_each_ships_with_its_own_arguments_class(name):
    shipped = RESEARCH_OBJECTIVES[name]
    assert shipped.arguments.__name__.endswith("Arguments") and shipped.eps_argument


def test_a_floor_off_the_fitting_grid_is_recovered(tmp_path):
    """A scheduler floor of 3.7e-5, between the log grid's points: refined, it is named and matches within budget."""
    from parity.training.shipped import ShippedTrainer
    from tests.training.research_objectives import MdlmArguments, MdlmStyleTrainer

    shipped = ShippedTrainer(MdlmStyleTrainer, arguments=MdlmArguments, eps_argument="sampling_eps",
                             argument_values={"time_denominator_floor": 3.7e-5})
    record = run_trainer(shipped, RANK_LOCAL_RUN, str(tmp_path))
    said = trainer_verdict(RANK_LOCAL_RUN, [record]).diagnosis
    assert "the weights: 1/(t + 3.7e-05) instead of 1/p" in said and MATCHES in said


def test_a_weight_floor_far_outside_the_budget_is_named_and_one_inside_it_is_not(tmp_path):
    """1/(p + 1e-5) moves the logged losses by tens of budgets: its one term is named, with the margin the published
    weights miss by. 1/(p + 1e-9) moves them by a fraction of one: nothing is named (docs/trainer.md, What makes a
    term significant). In float32 both verdicts hold, with a precision note at most (a departure within bfloat16's
    rounding), so the diagnosis is asked directly, as a failing verdict would ask it."""
    from tests.training.research_objectives import floored

    def diagnosis(weight_floor: float, folder: str) -> str | None:
        record = run_trainer(floored(weight_floor), RANK_LOCAL_RUN, str(tmp_path / folder))
        verdict = trainer_verdict(RANK_LOCAL_RUN, [record])
        assert "normalisation" not in verdict.failure_kinds, verdict.describe()
        return name_objective(RANK_LOCAL_RUN, [record], verdict.comparisons)

    far = diagnosis(1e-5, "far")
    assert far.startswith("this trainer departs from the published objective in 1 term: the weights: 1/(p + 1.0e-05) "
                          "instead of 1/p (delta fitted to the logged losses: 1.0e-05; without it, the nearest objective "
                          "misses the logged "), far
    margin = float(far.split("misses the logged ")[1].split(" by ")[1].split(" x ")[0])
    assert margin > 4 * SIGNIFICANT, far
    assert "Nearest: published; weights 1/(p + 1.0e-05)" in far and MATCHES in far
    assert diagnosis(1e-9, "near") is None
