"""A ``WindowCase`` (parity.cases) run: the seeded tiny model, and a loss target beside the oracle.

``parity_run`` is what the diffusion properties and the report's diffusion-window scenario run.
"""

from __future__ import annotations

import functools

import torch

from oracle.remote_code import oracle_model_factory
from parity.cases import WindowCase
from parity.training.diffusion.drivers.window_run import NoiseSettings, ParityRun, run_parity


def model_builder(case: WindowCase):
    """A fresh, identically seeded model per call: the target and each oracle run start equal."""
    return functools.partial(tiny_model, case.model_seed, case.dtype, case.frozen_head)


def tiny_model(seed: int, dtype: torch.dtype, frozen_head: bool = False):
    """The seeded tiny model: the built-in oracle's, or NVIDIA's own code when a folder is named
    (``--nemotron-remote-code`` / ``$PARITY_NEMOTRON_REMOTE_CODE``) with the same weights."""
    model = oracle_model_factory()(seed, dtype)
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
