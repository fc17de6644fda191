"""A ``transformers.Trainer`` that trains the masked-diffusion model with window normalisation.

It uses the Trainer's public gradient-accumulation contract (docs/trainer.md): ``get_batch_samples``
fetches the window, so that is where the whole window is noised and its masked tokens counted
(gathered over ranks when ``average_tokens_across_devices``); ``compute_loss`` returns
``S_g * scale / N``; ``loss_is_scaled_for_ga = True`` tells ``training_step`` not to divide again (on releases
before 5.19 in their own words: ``impl.transformers_support.follow_loss_scaling``, docs/trainer.md).
Evaluation noises each batch alone and uses its own count.

The noise is drawn from torch's global generator in the published order (every row's ``t``, then the
per-token uniforms), as the published model's own noising does; the Trainer seeds it from
``args.seed``. The realized draws are kept in ``train_draws`` / ``eval_draws`` for anyone who wants
them; nothing requires them (a harness observes the model's inputs instead).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass

import torch
from transformers import Trainer

from impl.diffusion_loss import WINDOWED_LOSS, WindowCount
from impl.transformers_support import check_transformers_version, follow_loss_scaling

check_transformers_version()


@dataclass(frozen=True)
class RealizedDraw:
    """One microbatch as served (on the CPU) and the noise realized for it."""

    batch: dict[str, torch.Tensor]
    masked_indices: torch.Tensor
    p_mask: torch.Tensor


class WindowedDiffusionTrainer(Trainer):
    """Trainer for a model whose output's ``loss`` is ``(sum_loss, num_mask_tokens)`` (the published contract)."""

    loss_is_scaled_for_ga = True
    diffusion_loss = WINDOWED_LOSS
    #: How this trainer uses the model: it passes labels, masks and ``p`` and reads ``.loss``.
    model_contract = "loss-pair"
    #: The noising's ``eps`` (a subclass, or the ``eps`` keyword, may change it).
    eps = 1e-3

    def __init__(self, *args, eps: float | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        follow_loss_scaling(self)
        eps = type(self).eps if eps is None else eps
        config = self.model.config
        if not 0 <= config.mask_token_id < config.vocab_size:
            raise ValueError(
                f"model.config.mask_token_id must lie in [0, {config.vocab_size}) (the vocabulary), "
                f"got {config.mask_token_id}"
            )
        if not 0.0 < eps <= 1.0:
            raise ValueError(f"eps must lie in (0, 1], got {eps!r}")
        self.eps = eps
        #: ``train_draws[k]`` is optimizer step k's window on this rank; ``eval_draws`` one per eval batch.
        self.train_draws: list[list[RealizedDraw]] = []
        self.eval_draws: list[RealizedDraw] = []

    def _noise(self, batches, generator):
        config = self.model.config
        return self.diffusion_loss.prepare_window(
            batches,
            mask_token_id=config.mask_token_id,
            eos_token_id=config.eos_token_id,
            eps=self.eps,
            generator=generator,
            vocab_size=config.vocab_size,
        )

    @staticmethod
    def _record(batch: Mapping[str, torch.Tensor], noised: Mapping[str, torch.Tensor]) -> RealizedDraw:
        return RealizedDraw(
            {key: value.detach().cpu() for key, value in batch.items()},
            noised["masked_indices"].detach().cpu(),
            noised["p_mask"].detach().cpu(),
        )

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        """Fetch the window, noise all of it now, and count what was actually masked."""
        batches = list(itertools.islice(epoch_iterator, num_batches))
        if not batches:
            return batches, None
        noised = self._noise(batches, torch.default_generator)
        self.train_draws.append([self._record(b, n) for b, n in zip(batches, noised, strict=True)])
        count = self.diffusion_loss.window_count(
            [{"masked_indices": n["masked_indices"].to(device)} for n in noised],
            average_tokens_across_devices=self.args.average_tokens_across_devices,
        )
        return noised, count.num_items

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if "masked_indices" in inputs and num_items_in_batch is not None:
            scale = self.diffusion_loss.loss_scale(
                average_tokens_across_devices=self.args.average_tokens_across_devices
            )
            count = WindowCount(num_items_in_batch, loss_scale=scale)
        else:  # evaluation or a direct call: this batch alone, its own denominator
            (noised,) = self._noise([inputs], torch.default_generator)
            self.eval_draws.append(self._record(inputs, noised))
            inputs, count = noised, None
        loss = self.diffusion_loss.microbatch_loss(model, inputs, count)
        return (loss, {"loss": loss}) if return_outputs else loss
