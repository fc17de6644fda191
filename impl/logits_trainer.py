"""A second masked-diffusion ``Trainer``, written the way trainers in the wild often are.

It uses the model's *logits* contract: it places the mask token itself, calls the model without
labels, reads ``.logits`` and computes the 1/p-weighted cross-entropy on its own. Its noise comes from
torch's global generator in the published order (per row ``t``, then per-token uniforms,
``p = (1 - eps) t + eps``), and the realized masks never leave the trainer: no records, no extra
constructor keywords. A harness can only observe it from outside (docs/trainer.md).

Window normalisation, as in ``impl.trainer``: ``get_batch_samples`` draws the whole window's noise
before any forward pass (kept in a private queue that ``compute_loss`` consumes) and counts the
realized masked tokens, gathered over ranks when ``average_tokens_across_devices``. Each microbatch
returns ``S_g * world / N``; ``loss_is_scaled_for_ga = True`` so the Trainer does not divide again (said in the
installed release's words by ``impl.transformers_support.follow_loss_scaling``).
Evaluation and direct calls noise the batch alone and divide by its own count.
"""

from __future__ import annotations

import itertools
from collections import deque

import torch
import torch.distributed as dist
import torch.nn.functional as F
from transformers import Trainer

from impl.transformers_support import check_transformers_version, follow_loss_scaling

check_transformers_version()

IGNORE_INDEX = -100


class LogitsDiffusionTrainer(Trainer):
    """Computes its own 1/p-weighted masked cross-entropy from the model's ``.logits``."""

    model_contract = "logits"
    loss_is_scaled_for_ga = True
    #: The noising's ``eps``; a subclass changes it.
    eps = 1e-3
    #: Whether a microbatch is divided by the window's count (the fix) or by its own (the bug).
    window_normalised = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        follow_loss_scaling(self)
        config = self.model.config
        if not 0 <= config.mask_token_id < config.vocab_size:
            raise ValueError(f"mask_token_id {config.mask_token_id} is not a token of the vocabulary")
        if not 0.0 < self.eps <= 1.0:
            raise ValueError(f"eps {self.eps!r} is not a probability floor in (0, 1]")
        self._window_noise: deque = deque()

    # --- noising -------------------------------------------------------------------------------

    def _maskable(self, batch):
        """(model ids, targets, maskable) under the EOS-padding rule; the model then attends padding."""
        ids, labels = batch["input_ids"], batch.get("labels")
        attention = batch.get("attention_mask")
        eos = self.model.config.eos_token_id
        attended = torch.ones_like(ids, dtype=torch.bool) if attention is None else attention.bool()
        targets = ids if labels is None else labels
        maskable = attended if labels is None else attended & (labels != IGNORE_INDEX)
        if attention is not None and eos is not None:
            pad = ~attended
            ids = ids.masked_fill(pad, eos)
            if labels is not None:
                pad_targets = pad & maskable.any(dim=1, keepdim=True)
                targets = targets.masked_fill(pad_targets, eos)
                maskable = maskable | pad_targets
        return ids, targets, maskable

    def _draw(self, batch):
        """The published noising from the global generator: t per row, then one uniform per token."""
        ids, targets, maskable = self._maskable(batch)
        rows, length = ids.shape
        t = torch.rand(rows)
        p = ((1 - self.eps) * t + self.eps)[:, None].expand(rows, length)
        masked = (torch.rand(rows, length) < p).to(ids.device) & maskable
        return ids, targets, masked, p.to(ids.device)

    # --- the Trainer's window contract -----------------------------------------------------------

    def get_batch_samples(self, epoch_iterator, num_batches, device):
        batches, self._window_noise = self.fetch_and_draw(epoch_iterator, num_batches)
        return batches, (self.window_count(device) if batches else None)

    def fetch_and_draw(self, epoch_iterator, num_batches):
        """The window's batches, and their noise drawn once all are fetched (before any forward)."""
        batches = list(itertools.islice(epoch_iterator, num_batches))
        return batches, deque(self._draw(batch) for batch in batches)

    def window_count(self, device):
        """The masked tokens the window's noise realized, gathered over ranks when asked."""
        count = sum(masked.sum() for _, _, masked, _ in self._window_noise).to(device)
        if self._gathered():
            count = count.clone()
            dist.all_reduce(count)
        return count

    def _gathered(self) -> bool:
        return bool(self.args.average_tokens_across_devices) and dist.is_available() and dist.is_initialized()

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        # prediction_step passes a count of its own (supervised tokens): only training uses the window's
        if model.training and num_items_in_batch is not None and self._window_noise:
            ids, targets, masked, p = self._window_noise.popleft()
        else:  # evaluation or a direct call: this batch alone
            ids, targets, masked, p = self._draw(inputs)
            num_items_in_batch = None
        noisy = torch.where(masked, self.model.config.mask_token_id, ids)
        logits, sum_loss = self.forward_and_sum(model, noisy, targets, masked, p)
        if num_items_in_batch is None or not self.window_normalised:
            loss = sum_loss / masked.sum().clamp(min=1)
        else:
            scale = dist.get_world_size() if self._gathered() else 1
            loss = sum_loss * scale / num_items_in_batch.to(sum_loss.device).clamp(min=1)
        return (loss, {"loss": loss, "logits": logits}) if return_outputs else loss

    def forward_and_sum(self, model, noisy, targets, masked, p):
        """``(logits, sum_i CE_i / p_i)``: the model's ``.logits``, then the masked sum."""
        logits = model(input_ids=noisy).logits
        return logits, self.masked_sum(logits, targets, masked, p)

    def masked_sum(self, logits, targets, masked, p):
        """``sum_i CE_i / p_i`` over the masked positions (a subclass may use another kernel)."""
        token_loss = F.cross_entropy(logits[masked], targets[masked], reduction="none")
        return (token_loss / p[masked].to(token_loss.dtype)).sum()
