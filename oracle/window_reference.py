"""The reference training step for masked diffusion: one loss over the whole window (docs/diffusion-model.md).

Every microbatch of every rank is run with the realized masks it was given, the summed losses are
divided once by the window's masked-token count, and one backward pass gives the gradients:
``L* = sum S / max(N, 1)``. Nothing is accumulated, rescaled or averaged; that is the point.
The model inputs and targets are rebuilt here from the raw batches by the oracle's own EOS rule,
so only the random draws (which positions, which ``p``) come from the implementation under test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from oracle.nemotron_diffusion import eos_padding_rule


@dataclass(frozen=True)
class Draw:
    """One microbatch as the data loader gave it, plus the noise that was realized for it."""

    batch: Mapping[str, torch.Tensor]
    masked_indices: torch.Tensor
    p_mask: torch.Tensor


def microbatch_sum(model: nn.Module, draw: Draw, eos_token_id: int | None) -> tuple[torch.Tensor, int]:
    """``(S, |m|)`` for one microbatch, through the model's published forward contract."""
    device = next(model.parameters()).device
    model_ids, targets, _, run_mask = eos_padding_rule(
        draw.batch["input_ids"], draw.batch.get("attention_mask"), draw.batch.get("labels"), eos_token_id
    )
    output = model(
        input_ids=model_ids.to(device),
        labels=targets.to(device),
        masked_indices=draw.masked_indices.to(device),
        p_mask=draw.p_mask.to(device),
        attention_mask=None if run_mask is None else run_mask.to(device),
    )
    sum_loss, _ = output.loss
    return sum_loss, int(draw.masked_indices.sum())


def window_loss(
    model: nn.Module,
    ranks: Sequence[Sequence[Draw]],
    eos_token_id: int | None,
    rank_local: bool = False,
) -> torch.Tensor:
    """The loss whose gradient one optimizer step should follow.

    ``ranks[r][g]`` is microbatch ``g`` on rank ``r``. Global normalisation divides everything by the
    count of all ranks; ``rank_local`` divides each rank by its own count and averages the ranks,
    which is what DDP's gradient averaging does to rank-local losses.
    """
    sums = [[microbatch_sum(model, draw, eos_token_id) for draw in rank] for rank in ranks]
    if rank_local:
        per_rank = [sum(s for s, _ in rank) / max(sum(n for _, n in rank), 1) for rank in sums]
        return sum(per_rank) / len(per_rank)
    total = sum(s for rank in sums for s, _ in rank)
    count = sum(n for rank in sums for _, n in rank)
    return total / max(count, 1)


def single_batch_loss(model: nn.Module, draw: Draw, eos_token_id: int | None) -> torch.Tensor:
    """Evaluation and direct calls: the microbatch's own count is the denominator."""
    sum_loss, count = microbatch_sum(model, draw, eos_token_id)
    return sum_loss / max(count, 1)


@dataclass(frozen=True)
class StepResult:
    """What one reference optimizer step produced: loss, gradients, and the parameters after it."""

    loss: torch.Tensor
    grads: dict[str, torch.Tensor | None]
    params: dict[str, torch.Tensor]


def apply_sgd(model: nn.Module, loss: torch.Tensor, lr: float) -> StepResult:
    """After ``backward``: record the gradients, step ``p <- p - lr * grad``, record the parameters."""
    grads = {
        name: None if p.grad is None else p.grad.detach().clone() for name, p in model.named_parameters()
    }
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    model.zero_grad(set_to_none=True)
    params = {name: p.detach().clone() for name, p in model.named_parameters()}
    return StepResult(loss.detach(), grads, params)


def sgd_step(
    model: nn.Module,
    ranks: Sequence[Sequence[Draw]],
    eos_token_id: int | None,
    lr: float,
    rank_local: bool = False,
) -> StepResult:
    """One window: forward all of it, backward once, then plain SGD."""
    model.zero_grad(set_to_none=True)
    loss = window_loss(model, ranks, eos_token_id, rank_local=rank_local)
    loss.backward()
    return apply_sgd(model, loss, lr)
