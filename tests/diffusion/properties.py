"""The masked-diffusion properties, each written once against the loss-target interface.

``test_properties.py`` runs them under ``@given``; the quality self-checks run the same functions
on the known-bug target and assert that Hypothesis finds a counterexample.
"""

from __future__ import annotations

import functools

import torch
from hypothesis import target as hypothesis_target

from oracle.nemotron_diffusion import build_tiny_model
from parity.compare import assert_within_budget
from parity.window_run import NoiseSettings, ParityRun, run_parity
from tests.diffusion.strategies import WindowCase


def model_builder(case: WindowCase):
    return functools.partial(_tiny_model, case.model_seed, case.dtype, case.frozen_head)


def _tiny_model(seed: int, dtype: torch.dtype, frozen_head: bool):
    model = build_tiny_model(seed, dtype)
    model.diffusion_head.weight.requires_grad_(not frozen_head)
    return model


def parity_run(loss_target, case: WindowCase, device: str = "cpu", regroup=None) -> ParityRun:
    return run_parity(
        loss_target,
        model_builder(case),
        case.windows,
        NoiseSettings(case.noise_seed, case.eps),
        lr=case.lr,
        device=device,
        regroup=regroup,
    )


def hold_to_budget(run: ParityRun) -> None:
    comparisons = run.comparisons()
    hypothesis_target(max(c.ratio for c in comparisons), label="worst error / budget")
    assert_within_budget(comparisons)


def check_window_parity(loss_target, case: WindowCase, device: str = "cpu") -> None:
    """Loss, every gradient, every parameter after every SGD step: within the oracle's budget."""
    hold_to_budget(parity_run(loss_target, case, device))


def check_regrouping(loss_target, case: WindowCase, rows_per_microbatch: int, device: str = "cpu") -> None:
    """Re-cutting a window's rows into other microbatches leaves the step where the oracle puts it."""
    hold_to_budget(parity_run(loss_target, case, device, regroup=rows_per_microbatch))
