"""The masked-diffusion properties, each written once against the loss-target interface.

``test_properties.py`` runs them under ``@given``; the quality self-checks run the same functions
on the known-bug target and assert that Hypothesis finds a counterexample.
"""

from __future__ import annotations

import math

import torch
from hypothesis import target as hypothesis_target
from hypothesis.control import currently_in_test_context

from parity.compare import assert_within_budget
from oracle.nemotron_diffusion import TINY_CONFIG
from parity.window_cases import MASK_TOKEN_ID, SEED_SCENARIO, VOCAB, WindowCase, parity_run
from parity.window_run import ParityRun

__all__ = ["SEED_SCENARIO", "check_window_parity", "check_regrouping", "check_empty_window_is_a_finite_zero", "noise"]

EOS = TINY_CONFIG["eos_token_id"]


def noise(diffusion_loss, window, **overrides):
    """``prepare_window`` with the tiny model's ids and the published ``eps``, unless overridden."""
    arguments = dict(
        mask_token_id=MASK_TOKEN_ID, eos_token_id=EOS, eps=1e-3, generator=torch.Generator(), vocab_size=VOCAB
    )
    return diffusion_loss.prepare_window(window, **{**arguments, **overrides})


def hold_to_budget(run: ParityRun) -> None:
    comparisons = run.comparisons()
    if currently_in_test_context():
        worst = max(c.ratio for c in comparisons)
        hypothesis_target(worst if math.isfinite(worst) else 1e300, label="worst error / budget")
    assert_within_budget(comparisons)


def check_window_parity(loss_target, case: WindowCase, device: str = "cpu") -> None:
    """Loss, every gradient, every parameter after every SGD step: within the oracle's budget."""
    hold_to_budget(parity_run(loss_target, case, device))


def check_regrouping(loss_target, case: WindowCase, rows_per_microbatch: int, device: str = "cpu") -> None:
    """Re-cutting a window's rows into other microbatches leaves the step where the oracle puts it."""
    hold_to_budget(parity_run(loss_target, case, device, regroup=rows_per_microbatch))


def check_empty_window_is_a_finite_zero(loss_target, case: WindowCase, device: str = "cpu") -> None:
    """No masked token anywhere: a zero loss that still backpropagates, zero gradients, no NaN."""
    run = parity_run(loss_target, case, device)
    empty = [i for i, window in enumerate(run.noised) if not any(b["masked_indices"].any() for b in window)]
    assert empty, "the case was drawn to hold an empty window"
    for step in empty:
        result = run.out[step]
        assert torch.isfinite(result.loss) and result.loss == 0, f"window {step}: loss {result.loss}"
        for name, grad in result.grads.items():
            assert grad is not None or name.startswith("diffusion_head") and case.frozen_head, f"{name}: no grad path"
            if grad is not None:
                assert torch.count_nonzero(grad) == 0, f"window {step}: {name} has a non-zero gradient"
    hold_to_budget(run)
