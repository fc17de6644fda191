"""Bad input to a loss target is refused at the boundary.

The contract, for every loss target: a ``ValueError`` before any draw, never a silent wrong answer.
impl's own promise, pinned on impl only: the message names the field and the allowed values.
"""

from __future__ import annotations

import pytest
import torch

from parity.cases import VOCAB
from parity.table.checks.diffusion import noise

IDS = torch.zeros(2, 5, dtype=torch.long)


@pytest.fixture
def refused(target):
    """``refused(message)``: ``pytest.raises(ValueError)``, matching impl's own ``message`` on impl."""
    return lambda message: pytest.raises(ValueError, match=message if target.name == "impl" else None)


@pytest.mark.parametrize("mask_token_id", [-1, VOCAB, VOCAB + 5])
def test_mask_token_outside_the_vocabulary(diffusion_loss, mask_token_id, refused):
    with refused(r"mask_token_id must lie in \[0, 97\)"):
        noise(diffusion_loss, [{"input_ids": IDS}], mask_token_id=mask_token_id)


@pytest.mark.parametrize("eps", [0.0, -0.1, 1.5, float("nan")])
def test_eps_outside_the_unit_interval(diffusion_loss, eps, refused):
    with refused(r"eps must lie in \(0, 1\]"):
        noise(diffusion_loss, [{"input_ids": IDS}], eps=eps)


@pytest.mark.parametrize("key", ["labels", "attention_mask"])
def test_mismatched_shapes(diffusion_loss, key, refused):
    with refused(rf"window\[0\]\['{key}'\] has shape \(2, 4\).*input_ids has shape \(2, 5\)"):
        noise(diffusion_loss, [{"input_ids": IDS, key: torch.zeros(2, 4, dtype=torch.long)}])


def test_ids_must_be_a_matrix(diffusion_loss, refused):
    with refused(r"window\[0\]\['input_ids'\] must be a 2-D tensor"):
        noise(diffusion_loss, [{"input_ids": torch.zeros(5, dtype=torch.long)}])


def test_empty_window(diffusion_loss, refused):
    with refused("at least one microbatch"):
        noise(diffusion_loss, [])
    with refused("at least one microbatch"):
        diffusion_loss.window_count([])


def test_nothing_supervised_is_not_an_error(diffusion_loss):
    """A batch with no supervised token is valid input: it yields the finite zero."""
    (noised,) = noise(diffusion_loss, [{"input_ids": IDS, "labels": torch.full_like(IDS, -100)}])
    assert not noised["masked_indices"].any()
    assert int(diffusion_loss.window_count([noised]).num_items) == 0
