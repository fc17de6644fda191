"""Trainers written from the public descriptions of three masked-diffusion objectives, each departing from
the published one (docs/trainer.md) in the terms its description gives, each shipped with its own
arguments class (``RESEARCH_OBJECTIVES``) and run through ``ShippedTrainer`` as a user registers it:

* ``MdlmStyleTrainer``: MDLM's weighting as its scheduler computes it, ``1/(t + 1e-6)`` with ``t`` the sampled
  time, and each microbatch divided by its own supervised tokens, the Trainer left to average the window;
* ``LladaSftTrainer``: LLaDA's SFT objective: each sequence's 1/p-weighted masked loss divided by its answer
  length, the sequences averaged, the Trainer left to average the window;
* ``DreamStyleTrainer``: Dream's input: a BOS token prepended to every row and the logits shifted right by one
  (position i predicts token i + 1 of what the model received), the rest as LLaDA's.

They know nothing of the harness; each draws its noise per microbatch, as it runs (the Trainer's own
``get_batch_samples``), from torch's global generator in the published order.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers import Trainer, TrainingArguments

from impl.logits_trainer import LogitsDiffusionTrainer
from parity.training.shipped import ShippedTrainer

IGNORE_INDEX = -100
BOS = 1


@dataclass
class MdlmArguments(TrainingArguments):
    """MDLM's settings: the time floor, and the denominator its scheduler adds to ``t``."""

    sampling_eps: float = 1e-3
    time_denominator_floor: float = 1e-6


@dataclass
class LladaArguments(TrainingArguments):
    """LLaDA's SFT settings: the masking floor."""

    mask_eps: float = 1e-3


class _PerMicrobatch(LogitsDiffusionTrainer):
    """The noise drawn per microbatch as it runs; the Trainer divides by the accumulation steps."""

    loss_is_scaled_for_ga = False
    window_normalised = False
    get_batch_samples = Trainer.get_batch_samples

    def _eps_from(self, name: str) -> None:
        self.eps = getattr(self.args, name)


class MdlmStyleTrainer(_PerMicrobatch):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._eps_from("sampling_eps")

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        ids, targets, masked, p = self._draw(inputs)
        logits = model(input_ids=torch.where(masked, self.model.config.mask_token_id, ids)).logits
        t = (p - self.eps) / (1 - self.eps)
        token_loss = F.cross_entropy(logits[masked], targets[masked], reduction="none")
        supervised = (inputs["labels"] != IGNORE_INDEX).sum().clamp(min=1)
        loss = (token_loss / (t[masked] + self.args.time_denominator_floor)).sum() / supervised
        return (loss, {"loss": loss, "logits": logits}) if return_outputs else loss


class LladaSftTrainer(_PerMicrobatch):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._eps_from("mask_eps")

    def row_losses(self, logits, targets, masked, p):
        """Each row's 1/p-weighted masked loss, divided by its answer length."""
        token_loss = torch.zeros_like(p, dtype=logits.dtype)
        token_loss[masked] = F.cross_entropy(logits[masked], targets[masked], reduction="none") / p[masked].to(logits.dtype)
        answers = (targets != IGNORE_INDEX).sum(dim=1).clamp(min=1)
        return token_loss.sum(dim=1) / answers

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        ids, targets, masked, p = self._draw(inputs)
        logits = self.logits(model, torch.where(masked, self.model.config.mask_token_id, ids))
        loss = self.row_losses(logits, targets, masked, p).mean()
        return (loss, {"loss": loss, "logits": logits}) if return_outputs else loss

    def logits(self, model, noisy):
        return model(input_ids=noisy).logits


class DreamStyleTrainer(LladaSftTrainer):
    def logits(self, model, noisy):
        with_bos = torch.cat([torch.full_like(noisy[:, :1], BOS), noisy], dim=1)
        return model(input_ids=with_bos).logits[:, :-1]  # right-shifted: position i predicts the next token


@dataclass
class FlooredArguments(TrainingArguments):
    """A weight floor beside ``p``, as a trainer guarding against small ``p`` might add one."""

    weight_floor: float = 0.0


class FlooredWeightsTrainer(LogitsDiffusionTrainer):
    """The published objective but for the weights: ``1/(p + weight_floor)``. At 1e-6 that is a departure far
    outside the budget, which must be named; at 1e-9 a change of a few parts in 1e7 of a weight, inside it, which
    must not be (docs/trainer.md, What makes a term significant)."""

    def masked_sum(self, logits, targets, masked, p):
        token_loss = F.cross_entropy(logits[masked], targets[masked], reduction="none")
        return (token_loss / (p[masked].to(token_loss.dtype) + self.args.weight_floor)).sum()


def floored(weight_floor: float) -> ShippedTrainer:
    return ShippedTrainer(FlooredWeightsTrainer, arguments=FlooredArguments, argument_values={"weight_floor": weight_floor})


#: As their targets would ship them: each with its arguments class and its eps field.
RESEARCH_OBJECTIVES = {
    "mdlm": ShippedTrainer(MdlmStyleTrainer, arguments=MdlmArguments, eps_argument="sampling_eps"),
    "llada-sft": ShippedTrainer(LladaSftTrainer, arguments=LladaArguments, eps_argument="mask_eps"),
    "dream": ShippedTrainer(DreamStyleTrainer, arguments=LladaArguments, eps_argument="mask_eps"),
}
